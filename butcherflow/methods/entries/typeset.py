"""Entries as papers typeset them: LaTeX source and text copied from a PDF, rewritten into the
entry syntax (`"1/2 - sqrt(3)/6"`) before parsing.

A tableau copied from a paper reads `\\frac{1}{2} - \\frac{\\sqrt{3}}{6}` (its LaTeX source) or
`½ − √3/6` (its PDF, with a Unicode minus sign that no parser accepts). Both mean the same exact
number, so both are rewritten, and only these forms: a string with neither a backslash nor a
typeset character is left exactly as it is.

- LaTeX: `\\frac{a}{b}` (`\\dfrac`, `\\tfrac`), `\\sqrt{x}`, `\\sqrt[n]{x}`, `\\cdot`, `\\times`,
  `\\pi`, `\\sin`/`\\cos`/`\\tan`, `\\left(`/`\\right)`, braces as parentheses, `$` dropped.
- Unicode: − (minus) and the dashes PDFs use for it, × · ⋅ (times), √ ∛ ∜ (`√6`, `√(6)`,
  `2√6`, `∛2`), vulgar fractions (½, ⅓, ⅔, ...), the fraction and division slashes (`5⁄12`, and
  `⁵⁄₁₂` as PDFs set a fraction), superscript powers (`10⁻³`, `(1+√5)²`), π.
- Spacing (`\\,`, `\\;`, `\\quad`, `~`, `\\phantom{-}`, no-break and thin spaces) is space.
- A factor written next to a root, a function or a parenthesis (`2\\sqrt{6}`, `2√6`, `3(…)`)
  is a product, as on the page.

Forms a reader could take two ways are refused with the reason, never guessed: a mixed number
(`1½`, `2\\frac{1}{2}`, `2⁵⁄₁₂`: 5/2 or 1?), digits split by a space (`0.123\\,456`: grouping or a
product?), a comma (`0{,}5`, `\\sqrt[3]{0,5}`: a decimal comma?), a power of ten whose exponent
lost its superscript in the copy (`5×10−3`), an unpaired `$`. Anything else with a backslash
(`\\alpha`, an unknown command) is refused by the parser with the entry's key.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from ...errors import DeclarationError

_MINUS = {ch: "-" for ch in "\u2212\u2010\u2011\u2012\u2013\ufe63\uff0d"}
_TIMES = {"\u00d7": "*", "\u00b7": "*", "\u22c5": "*", "\u2219": "*"}
_SYMBOLS = {"\u03c0": " pi ", "\u221a": "√"}  # √ is rewritten below, with its argument
# Names are padded with spaces so that none is glued to its neighbour (`\\cos\\pi` is no `cospi`).
_COMMANDS = {
    r"\cdot": "*",
    r"\times": "*",
    r"\pi": " pi ",
    r"\sin": " sin ",
    r"\cos": " cos ",
    r"\tan": " tan ",
    r"\left": "",
    r"\right": "",
    **{space: " " for space in (r"\,", r"\!", r"\ ", r"\;", r"\:", r"\>", r"\quad", r"\qquad")},
}
_SUPERSCRIPT_DIGITS = "\u2070\u00b9\u00b2\u00b3" + "".join(map(chr, range(0x2074, 0x207A)))
_SUBSCRIPT_DIGITS = "".join(map(chr, range(0x2080, 0x208A)))
_DIGITS = str.maketrans(
    _SUPERSCRIPT_DIGITS + _SUBSCRIPT_DIGITS + "\u207a\u207b", "0123456789" * 2 + "+-"
)
# ⁵⁄₁₂ (a PDF's fraction), then any fraction or division slash, then a superscript power
_SET_FRACTION = re.compile(rf"([{_SUPERSCRIPT_DIGITS}]+)\s*[\u2044/]\s*([{_SUBSCRIPT_DIGITS}]+)")
_SLASHES = {"\u2044": "/", "\u2215": "/", "\u00f7": "/"}
_POWER = re.compile(rf"(?<=[0-9)A-Za-z\u03c0])\s*([\u207a\u207b]?[{_SUPERSCRIPT_DIGITS}]+)")
_SPACES = {ch: " " for ch in "~\u00a0\u202f\u205f" + "".join(map(chr, range(0x2000, 0x200B)))}
_PHANTOM = re.compile(r"\\[hv]?phantom\s*")
_FRACTION = re.compile(r"\\[dt]?frac\s*")
_SQRT = re.compile(r"\\sqrt\s*")
_VALID = "write the number in the entry syntax (0.5, 5/2, 3*10^(-3), 1.5e-3, sqrt(3)/6)"
# What a reader could take two ways (see the module docstring), each with the reason it is refused.
_AMBIGUOUS = [
    (
        re.compile(r"[0-9.]\s*(?:\\[,;:! ]\s*)*(?:[\u00bc-\u00be\u2150-\u215e\u2189]|\\[dt]?frac)"),
        "a whole number next to a fraction is a mixed number (2½ = 5/2) or a product (2·½ = 1)",
    ),
    (
        re.compile(rf"[0-9.]\s*[{_SUPERSCRIPT_DIGITS}]+\s*(?:\u2044|/\s*[{_SUBSCRIPT_DIGITS}])"),
        "a whole number next to a fraction is a mixed number (2½ = 5/2) or a product (2·½ = 1)",
    ),
    (re.compile(r"(?<!\\),"), "a comma is a decimal comma (0,5) or a separator"),
    (
        re.compile(r"[\u00d7\u00b7\u22c5\u2219]\s*10(?=[\u2212\u2010-\u2013\ufe63\uff0d+-]?[0-9])"),
        "a power of ten copied from a PDF loses its superscript (5×10⁻³ reads 5×10−3)",
    ),
]
_SPLIT_DIGITS = re.compile(r"[0-9.]\s+[0-9.]")
_PRODUCT = re.compile(r"(?<=[0-9)])\s*(?=(?:sqrt|root|sin|cos|tan|pi)\b|\()")


def is_typeset(text: str) -> bool:
    """Whether `text` uses LaTeX or typeset characters (else it is parsed exactly as given)."""
    return "\\" in text or "$" in text or any(ord(ch) > 127 for ch in text)


def untypeset(text: str) -> str:
    """`text` rewritten into the entry syntax (see the module docstring); a text that is not
    typeset comes back unchanged. Raises `DeclarationError` (with no key: the caller names the
    entry) for a form a reader could take two ways."""
    if not is_typeset(text):
        return text
    if text.count("$") % 2:
        return text  # an unpaired $ is no math delimiter: left for the parser to refuse
    for pattern, reason in _AMBIGUOUS:
        if pattern.search(text):
            raise DeclarationError(f"typeset entry is ambiguous: {reason}", valid=_VALID)
    text = text.replace("$", "")
    text = _SET_FRACTION.sub(lambda m: f"({m[1]}/{m[2]})".translate(_DIGITS), text)
    text = _POWER.sub(lambda m: f"^({m[1]})".translate(_DIGITS), text)
    for table in (_MINUS, _TIMES, _SYMBOLS, _SLASHES, _SPACES):
        for old, new in table.items():
            text = text.replace(old, new)
    text = "".join(_vulgar(ch) for ch in text)
    text = _latex(text)
    if _SPLIT_DIGITS.search(text):
        raise DeclarationError(
            "typeset entry is ambiguous: digits split by a space are grouped (0.123 456) or a "
            "product (2 3)",
            valid=_VALID,
        )
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
    while phantom := _PHANTOM.search(text):  # invisible: it only aligns the columns
        _, after = _group(text, phantom.end())
        text = text[: phantom.start()] + " " + text[after:]
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
    """`√6` as `sqrt(6)`, `√(1+x)` as `sqrt(1+x)`, `√x` as `sqrt(x)`; `∛` and `∜` as `root(…, 3)`
    and `root(…, 4)`."""
    while found := re.search(r"([√∛∜])\s*(\(|[0-9.]+|[A-Za-z_]\w*)", text):
        end = found.end()
        radicand = found[2]
        if radicand == "(":
            depth = 0
            for end in range(found.start(2), len(text)):
                depth += {"(": 1, ")": -1}.get(text[end], 0)
                if depth == 0:
                    break
            else:
                return text  # an unclosed parenthesis: left for the parser to refuse
            radicand, end = text[found.start(2) + 1 : end], end + 1
        degree = {"√": "", "∛": ", 3", "∜": ", 4"}[found[1]]
        call = f"sqrt({radicand})" if not degree else f"root({radicand}{degree})"
        text = text[: found.start()] + call + text[end:]
    return text


_BEGIN = re.compile(r"\\begin\{(array|tabular)\}\s*(?:\[[^\]]*\]\s*)?")  # and its [t]
_RULE = re.compile(r"\\(?:hline|hdashline|midrule|toprule|bottomrule)|\\c(?:mid)?rule\{[^{}]*\}")
_ONE_ARRAY = "one \\begin{array}...\\end{array} whose rows end with \\\\"


def butcher_array(text: str) -> dict[str, list[Any]]:
    """The c, A, b (and b̂) of a Butcher tableau typeset as a LaTeX array, as papers print it:

    ```latex
    \\begin{array}{c|ccc}
    0       &                &               & \\\\
    \\frac12 & \\frac12        &               & \\\\
    1       & -1             & 2             & \\\\ \\hline
            & \\frac16        & \\frac23       & \\frac16
    \\end{array}
    ```

    **Arguments:**

    - `text`: the array (an `array` or `tabular` environment, or only its rows). Rows end with
      `\\\\`, cells are separated by `&`; a blank cell is 0. The rows above the first rule
      (`\\hline`, `\\midrule`) are cᵢ and the i-th row of A; the one or two below it are b and b̂,
      their first cell (where papers write a label such as `y_1`) ignored.

    **Returns:** `{"c": [...], "A": [[...]], "b": [...]}` and `"b_hat"` when given, each entry the
    cell's text (parsed as any entry, LaTeX included); raises `DeclarationError` naming the row.
    """
    text = re.sub(r"(?<!\\)%.*", "", text)  # LaTeX comments
    body = _body(text)
    above: list[list[str]] = []
    below: list[list[str]] = []
    ruled = False
    for row in re.split(r"\\\\(?:\s*\[[^\]]*\])?", body):  # \\ or \\[2pt] ends a row
        if _RULE.search(row):  # LaTeX puts a rule first in a row: it separates A from b
            ruled = ruled or bool(above)
            row = _RULE.sub("", row)
        cells = [cell.strip() for cell in row.split("&")]
        if any(cells):
            (below if ruled else above).append(cells)
    return _arrange(above, below, text)


def _body(text: str) -> str:
    """The rows of the one array in `text` (its position and column spec, braces nested,
    skipped), or `text` itself when it is only the rows."""
    begins = list(_BEGIN.finditer(text))
    body = text
    if len(begins) == 1:
        start = begins[0].end()
        if text[start : start + 1] == "{":
            _, start = _group(text, start)  # the column spec: c|cccc, @{}c|*{4}{c}@{}, ...
        end = text.find(f"\\end{{{begins[0].group(1)}}}", start)
        body = text[start:end] if end >= 0 else text
    if len(begins) > 1 or "\\begin" in body or "\\end" in body:
        problem = f"{len(begins)} arrays" if len(begins) > 1 else "an array nested or unclosed"
        raise DeclarationError(
            f"a tableau holds one array ({problem})",
            key="tableau",
            value=text.strip()[:80],
            valid=_ONE_ARRAY,
        )
    return body


def _arrange(above: list[list[str]], below: list[list[str]], text: str) -> dict[str, list[Any]]:
    """c, A, b, b̂ from the rows above and below the rule, blank cells as 0."""
    s = len(above)
    problem, shown = None, " ".join(text.split())
    wide = [row for row in [*above, *below] if len(row) > s + 1]
    # a short weight row whose first cell is filled: a label, or b_1 typed without its leading &?
    unlabelled = [row for row in below if len(row) < s + 1 and row[0]]
    if not above or not below:
        problem = "a tableau needs rows c | A, a rule (\\hline), then the weights b"
    elif len(below) > 2:
        problem = f"{len(below)} rows below the rule; there are one (b) or two (b and b̂)"
    elif wide:
        problem = f"a row has more than {s + 1} cells for {s} stages (c and {s} columns of A)"
        shown = " & ".join(wide[0])
    elif unlabelled:
        problem = (
            f"a weight row has {len(unlabelled[0])} cells, not {s + 1}, and its first cell (the "
            "label column) is filled: a label, or b_1 without its leading &?"
        )
        shown = " & ".join(unlabelled[0])
    if problem is not None:
        raise DeclarationError(
            problem,
            key="tableau",
            value=shown[:80],
            valid="rows 'c_i & a_i1 & ... & a_is \\\\', then \\hline, then ' & b_1 & ... & b_s'",
        )

    def padded(cells: list[str]) -> list[Any]:
        return [cell or 0 for cell in cells[1:]] + [0] * (s + 1 - len(cells))

    arranged: dict[str, list[Any]] = {
        "c": [row[0] or 0 for row in above],
        "A": [padded(row) for row in above],
        "b": padded(below[0]),
    }
    if len(below) == 2:
        arranged["b_hat"] = padded(below[1])
    return arranged
