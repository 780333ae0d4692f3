"""Entries as papers typeset them: LaTeX source and text copied from a PDF, rewritten into the
entry syntax (`"1/2 - sqrt(3)/6"`) before parsing.

A tableau copied from a paper reads `\\frac{1}{2} - \\frac{\\sqrt{3}}{6}` (its LaTeX source) or
`½ − √3/6` (its PDF, with a Unicode minus sign that no parser accepts). Both mean the same exact
number, so both are rewritten, and only these forms: a string with neither a backslash nor a
typeset character is left exactly as it is.

- LaTeX: `\\frac{a}{b}` (`\\dfrac`, `\\tfrac`), `\\sqrt{x}`, `\\sqrt[n]{x}`, `\\cdot`, `\\times`,
  `\\pi`, `\\sin`/`\\cos`/`\\tan`, `\\left(`/`\\right)`, braces as parentheses, `$` dropped.
- Unicode: − (minus) and the dashes PDFs use for it, × · ⋅ (times), √ (`√6`, `√(6)`, `2√6`),
  vulgar fractions (½, ⅓, ⅔, ...), π.
- A factor written next to a root, a function or a parenthesis (`2\\sqrt{6}`, `2√6`, `3(…)`)
  is a product, as on the page.

Anything else with a backslash (`\\alpha`, an unknown command) is refused by the parser with the
entry's key; nothing is guessed.
"""

from __future__ import annotations

import re
import unicodedata

_MINUS = {ch: "-" for ch in "\u2212\u2010\u2011\u2012\u2013\ufe63\uff0d"}
_TIMES = {"\u00d7": "*", "\u00b7": "*", "\u22c5": "*", "\u2219": "*"}
_SYMBOLS = {"\u03c0": "pi", "\u221a": "√"}  # √ is rewritten below, with its argument
_COMMANDS = {
    r"\cdot": "*",
    r"\times": "*",
    r"\pi": "pi",
    r"\sin": "sin",
    r"\cos": "cos",
    r"\tan": "tan",
    r"\left": "",
    r"\right": "",
    r"\,": "",
    r"\!": "",
    r"\ ": "",
}
_FRACTION = re.compile(r"\\[dt]?frac\s*")
_SQRT = re.compile(r"\\sqrt\s*")
_MIXED = re.compile(r"[0-9]\s*[\u00bc-\u00be\u2150-\u215e\u2189]")
_PRODUCT = re.compile(r"(?<=[0-9)])\s*(?=(?:sqrt|root|sin|cos|tan|pi)\b|\()")


def is_typeset(text: str) -> bool:
    """Whether `text` uses LaTeX or typeset characters (else it is parsed exactly as given)."""
    return "\\" in text or "$" in text or any(ord(ch) > 127 for ch in text)


def untypeset(text: str) -> str:
    """`text` rewritten into the entry syntax (see the module docstring); a text that is not
    typeset comes back unchanged."""
    if not is_typeset(text) or _MIXED.search(text):
        return text  # a mixed number such as 1½ is not a product: left for the parser to refuse
    if text.count("$") % 2:
        return text  # an unpaired $ is no math delimiter: left for the parser to refuse
    text = text.replace("$", "")
    for table in (_MINUS, _TIMES, _SYMBOLS):
        for old, new in table.items():
            text = text.replace(old, new)
    text = "".join(_vulgar(ch) for ch in text)
    text = _latex(text)
    text = _roots(text)
    return _PRODUCT.sub("*", text)


def _vulgar(ch: str) -> str:
    """½ as `(1/2)`; any other character unchanged."""
    parts = unicodedata.decomposition(ch).split()
    if not parts or parts[0] != "<fraction>":
        return ch
    numerator, denominator = "".join(chr(int(p, 16)) for p in parts[1:]).split("\u2044")
    return f"({numerator}/{denominator})"


def _latex(text: str) -> str:
    for command, replacement in sorted(_COMMANDS.items(), key=lambda item: -len(item[0])):
        text = re.sub(re.escape(command) + r"(?![A-Za-z])", replacement, text)
    while True:
        fraction = _FRACTION.search(text)
        if fraction is None:
            break
        numerator, after = _group(text, fraction.end())
        denominator, after = _group(text, after)
        if numerator is None or denominator is None:
            break  # left for the parser to refuse, backslash and all
        text = f"{text[: fraction.start()]}(({numerator})/({denominator})){text[after:]}"
    while True:
        root = _SQRT.search(text)
        if root is None:
            break
        degree, after = (None, root.end())
        if text[after : after + 1] == "[":
            close = text.find("]", after)
            if close < 0:
                break
            degree, after = text[after + 1 : close], close + 1
        radicand, after = _group(text, after)
        if radicand is None:
            break
        rewritten = f"sqrt({radicand})" if degree is None else f"root({radicand}, {degree})"
        text = f"{text[: root.start()]}{rewritten}{text[after:]}"
    return text.replace("{", "(").replace("}", ")")


def _group(text: str, start: int) -> tuple[str | None, int]:
    """The brace group `{...}` (nested) or single character at `start`, and where it ends."""
    while start < len(text) and text[start].isspace():
        start += 1
    if start >= len(text):
        return None, start
    if text[start] != "{":
        return text[start], start + 1
    depth = 0
    for end in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        if depth == 0:
            return text[start + 1 : end], end + 1
    return None, start


def _roots(text: str) -> str:
    """`√6` as `sqrt(6)`, `√(1+x)` as `sqrt(1+x)`, `√x` as `sqrt(x)`."""
    return re.sub(
        r"√\s*(\(|[0-9.]+|[A-Za-z_]\w*)",
        lambda m: "sqrt" + ("(" if m.group(1) == "(" else f"({m.group(1)})"),
        text,
    )
