"""Corpora: parallel or monolingual text, from the built-in Bible, a directory in fairseq's raw
layout, or explicit files.

`load_corpus(data)` accepts, as `--data`:

- `bible:SRC-TGT`, `bible:SRC@V-TGT@V`, `bible:SRC-TGT:short2long`: the built-in corpus
  (`butcherflow.data.bible`).
- `DIR`: a directory in fairseq's raw layout, `train.SRC`, `train.TGT`, `valid.SRC`,
  `valid.TGT`, `test.SRC`, `test.TGT`, one sentence per line, UTF-8. The languages come from
  `source_lang`/`target_lang`, or from a `:SRC-TGT` suffix (`DIR:de-en`), or are inferred when the
  directory holds exactly one pair of `train.*` files: then the order is the one in the directory's
  name if it contains `SRC-TGT` (`iwslt14.de-en`), else alphabetical (said in the notes).
- `train=A.de,A.en;valid=B.de,B.en;test=C.de,C.en`: explicit files (source first; all three
  splits required; paths relative to the working directory). The languages are the files'
  suffixes unless `source_lang`/`target_lang` are given.

**Monolingual text** (what a language model reads; every pair is `("", sentence)`, the source
side empty; `packing.pack_lines` cuts their target sides into context windows, `TokenBlocks`):

- `bible:LANG`, `bible:LANG@V`: one side of the Bible (`bible:en`).
- `DIR` holding one language: `train.txt`, `valid.txt`, `test.txt` (the language is
  `target_lang`, else `und`, undetermined), or `train.LANG`, `valid.LANG`, `test.LANG`.
- `train=A.txt;valid=B.txt;test=C.txt`: one file per split.

Lines are split on `\\n` only (a trailing `\\r` is dropped), and stripped. Errors name the file and
line: a file that is missing or empty, bytes that are not UTF-8 (with the line and the byte offset),
two sides with different line counts. Pairs with an empty side are dropped from every split; pairs
with a side longer than `max_chars` characters are dropped from `train` only, so that valid and test
scores always cover every reference. Both are counted in `notes`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import final

from ..errors import DeclarationError
from .bible import read_bible

SPLIT_NAMES = ("train", "valid", "test")
_LANG_SUFFIX = re.compile(r"^(?P<path>.+):(?P<src>[A-Za-z_]+)-(?P<tgt>[A-Za-z_]+)$")
_EXPLICIT_HELP = (
    "train=A.src,A.tgt;valid=B.src,B.tgt;test=C.src,C.tgt (source file first), or one file per "
    "split for monolingual text: train=A.txt;valid=B.txt;test=C.txt"
)
_DATA_HELP = (
    "expected bible:SRC-TGT (e.g. bible:de-en), a directory holding train.SRC/train.TGT, "
    "valid.*, test.* (optionally DIR:SRC-TGT), or train=A.src,A.tgt;valid=B.src,B.tgt;"
    "test=C.src,C.tgt; monolingual text: bible:LANG, a directory holding train.txt, valid.txt, "
    "test.txt, or train=A.txt;valid=B.txt;test=C.txt"
)

Pair = tuple[str, str]
TEXT_SUFFIX = "txt"  # a directory or file of monolingual text in no named language
UNDETERMINED = "und"  # ISO 639's code for text whose language is not given


@final
@dataclass(frozen=True)
class ParallelCorpus:
    """A sentence-aligned parallel corpus with its three splits.

    **Arguments:**

    - `name`: where it came from: the canonical Bible spec (`"bible:de@e-en@4"`) or the
      directory / file spec.
    - `source_lang`, `target_lang`: language codes (`"de"`, `"en"`); `source_lang` is `""` for
      monolingual text (`monolingual`), whose pairs are `("", sentence)`.
    - `train`, `valid`, `test`: `(source, target)` sentence pairs.
    - `notes`: human log lines (what was filtered, split sizes, thresholds).
    - `fingerprint`: sha256 hex over the languages and every pair of every split (the cache key
      of the vocabulary).
    - `spec`: a `--data` that loads this corpus again from any working directory (absolute
      paths, the languages explicit where the syntax allows); a save dir stores it.
    """

    name: str
    source_lang: str
    target_lang: str
    train: list[Pair]
    valid: list[Pair]
    test: list[Pair]
    notes: tuple[str, ...]
    fingerprint: str
    spec: str

    @property
    def monolingual(self) -> bool:
        """Text in one language (a language model's corpus): every source is `""`."""
        return not self.source_lang

    def split(self, name: str) -> list[Pair]:
        """The pairs of split `name` (`"train"`, `"valid"` or `"test"`)."""
        if name not in SPLIT_NAMES:
            raise DeclarationError(
                "unknown split", key="subset", value=name, valid=", ".join(SPLIT_NAMES)
            )
        pairs: list[Pair] = getattr(self, name)
        return pairs


def corpus_fingerprint(source_lang: str, target_lang: str, splits: dict[str, list[Pair]]) -> str:
    """sha256 hex over the languages and the pairs of each split (length-prefixed, unambiguous)."""
    digest = hashlib.sha256()

    def feed(text: str) -> None:
        data = text.encode("utf-8")
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)

    feed(source_lang)
    feed(target_lang)
    for name in SPLIT_NAMES:
        feed(name)
        pairs = splits[name]
        digest.update(len(pairs).to_bytes(8, "big"))
        for source, target in pairs:
            feed(source)
            feed(target)
    return digest.hexdigest()


def read_lines(path: Path) -> list[str]:
    """The stripped lines of a UTF-8 text file.

    **Arguments:**

    - `path`: the file.

    **Returns:**

    One string per line (split on `\\n`; a final newline does not start a new line); a
    `DeclarationError` naming the file (and the line and byte offset) if it is missing, empty or
    not UTF-8.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise DeclarationError("file not found", key="--data", source=path) from None
    except OSError as error:
        raise DeclarationError(f"cannot read file ({error})", key="--data", source=path) from None
    if not data.strip():
        raise DeclarationError(
            "file is empty", key="--data", valid="one sentence per line", source=path
        )
    raw = data.split(b"\n")
    if raw[-1] == b"":
        raw.pop()
    lines = []
    offset = 0
    for number, line in enumerate(raw, start=1):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise DeclarationError(
                f"line {number}: invalid UTF-8 byte 0x{line[error.start]:02x} at byte offset "
                f"{offset + error.start} of the file (column {error.start + 1} of the line)",
                key="--data",
                valid="the corpus files must be UTF-8 text",
                source=f"{path}:{number}",
            ) from None
        lines.append(text.strip())
        offset += len(line) + 1
    return lines


def read_parallel(source_path: Path, target_path: Path) -> list[Pair]:
    """The aligned lines of two files, with a clear error if their line counts differ."""
    sources, targets = read_lines(source_path), read_lines(target_path)
    if len(sources) != len(targets):
        first = min(len(sources), len(targets)) + 1
        raise DeclarationError(
            f"line counts differ: {source_path} has {len(sources)} lines but {target_path} has "
            f"{len(targets)} (line {first} has no partner)",
            key="--data",
            valid="the two sides of a split must have one sentence per line, aligned",
            source=source_path,
        )
    return list(zip(sources, targets, strict=True))


def _filter(
    splits: dict[str, list[Pair]], max_chars: int, monolingual: bool
) -> tuple[dict[str, list[Pair]], list[str]]:
    kept: dict[str, list[Pair]] = {}
    notes = []
    what = "lines" if monolingual else "pairs"
    for name in SPLIT_NAMES:
        pairs = splits[name]
        nonempty = [(s, t) for s, t in pairs if (s or monolingual) and t]
        empty = len(pairs) - len(nonempty)
        long = 0
        if name == "train":
            kept[name] = [
                (s, t) for s, t in nonempty if len(s) <= max_chars and len(t) <= max_chars
            ]
            long = len(nonempty) - len(kept[name])
        else:
            kept[name] = nonempty
        if empty or long:
            notes.append(
                f"filtered {empty} empty and {long} over-long (> {max_chars} chars) {what} from "
                f"{name}"
            )
    return kept, notes


def _make(
    name: str,
    spec: str,
    source_lang: str,
    target_lang: str,
    splits: dict[str, list[Pair]],
    notes: list[str],
    max_chars: int,
) -> ParallelCorpus:
    monolingual = not source_lang
    what = "line" if monolingual else "sentence pair"
    kept, filtered = _filter(splits, max_chars, monolingual)
    for split_name in SPLIT_NAMES:
        if not kept[split_name]:
            raise DeclarationError(
                f"the {split_name} split of {name} has no {what} left after filtering",
                key="--data",
                value=name,
                valid=f"non-empty {what}s no longer than --max-chars",
            )
    sizes = "/".join(str(len(kept[n])) for n in SPLIT_NAMES)
    languages = f"{target_lang} text" if monolingual else f"{source_lang}->{target_lang}"
    return ParallelCorpus(
        name=name,
        source_lang=source_lang,
        target_lang=target_lang,
        train=kept["train"],
        valid=kept["valid"],
        test=kept["test"],
        notes=(
            *notes,
            *filtered,
            f"{name}: {languages}, {sizes} train/valid/test",
        ),
        fingerprint=corpus_fingerprint(source_lang, target_lang, kept),
        spec=spec,
    )


def _directory_languages(
    directory: Path, source_lang: str | None, target_lang: str | None
) -> tuple[str, str, list[str]]:
    suffixes = sorted(p.name[len("train.") :] for p in directory.glob("train.*") if p.is_file())
    if source_lang and target_lang:
        return source_lang, target_lang, []
    given = source_lang or target_lang
    if given:
        others = [s for s in suffixes if s != given]
        if len(others) != 1:
            raise DeclarationError(
                f"cannot infer the other language of {directory} from its train.* files "
                f"({', '.join(suffixes) or 'none'})",
                key="--data",
                value=str(directory),
                valid="give both --source-lang and --target-lang, or DIR:SRC-TGT",
            )
        return (given, others[0], []) if source_lang else (others[0], given, [])
    if len(suffixes) != 2:
        raise DeclarationError(
            f"cannot infer the languages of {directory}: it holds train files for "
            f"{', '.join(suffixes) or 'no language'}",
            key="--data",
            value=str(directory),
            valid="exactly one pair train.SRC/train.TGT, or name them: DIR:SRC-TGT",
        )
    first, second = suffixes
    resolved = directory.resolve().name
    if f"{second}-{first}" in resolved and f"{first}-{second}" not in resolved:
        return second, first, [f"{directory}: languages {second}->{first} from the directory name"]
    how = "directory name" if f"{first}-{second}" in resolved else "alphabetical order"
    return first, second, [f"{directory}: languages {first}->{second} by {how} (use DIR:SRC-TGT)"]


def _monolingual_suffix(
    directory: Path, source_lang: str | None, target_lang: str | None
) -> str | None:
    """The one `train.*` suffix of a directory of monolingual text (`txt`, or the language that
    `target_lang` names or leaves open), or None for a parallel directory."""
    suffixes = [p.name[len("train.") :] for p in directory.glob("train.*") if p.is_file()]
    if source_lang is not None or len(suffixes) != 1:
        return None
    suffix = suffixes[0]
    return suffix if target_lang is None or suffix in (TEXT_SUFFIX, target_lang) else None


def read_monolingual(path: Path) -> list[Pair]:
    """The lines of one file as `("", line)` pairs (the checks of `read_lines`)."""
    return [("", line) for line in read_lines(path)]


def _load_directory(
    directory: Path, name: str, source_lang: str | None, target_lang: str | None, max_chars: int
) -> ParallelCorpus:
    suffix = _monolingual_suffix(directory, source_lang, target_lang)
    if suffix is not None:
        language = suffix if suffix != TEXT_SUFFIX else target_lang or UNDETERMINED
        splits = {s: read_monolingual(directory / f"{s}.{suffix}") for s in SPLIT_NAMES}
        spec = str(directory.resolve())
        return _make(name, spec, "", language, splits, [], max_chars)
    src, tgt, notes = _directory_languages(directory, source_lang, target_lang)
    splits = {
        split: read_parallel(directory / f"{split}.{src}", directory / f"{split}.{tgt}")
        for split in SPLIT_NAMES
    }
    spec = str(directory.resolve())
    if re.fullmatch(r"[A-Za-z_]+", src) and re.fullmatch(r"[A-Za-z_]+", tgt):
        spec += f":{src}-{tgt}"  # else the languages are inferred again, or given by the caller
    return _make(name, spec, src, tgt, splits, notes, max_chars)


def _explicit_files(spec: str) -> dict[str, list[Path]]:
    """Split name -> its files (two: source, target; one: monolingual text)."""
    files: dict[str, list[Path]] = {}
    for item in filter(None, (part.strip() for part in spec.split(";"))):
        key, sep, value = item.partition("=")
        key = key.strip()
        paths = [p.strip() for p in value.split(",")]
        if not sep or key not in SPLIT_NAMES or len(paths) not in (1, 2) or not all(paths):
            raise DeclarationError(
                f"malformed explicit corpus entry {item!r}",
                key="--data",
                value=spec,
                valid=_EXPLICIT_HELP,
            )
        if key in files:
            raise DeclarationError(f"split {key!r} given twice", key="--data", value=spec)
        files[key] = [Path(p) for p in paths]
    missing = [name for name in SPLIT_NAMES if name not in files]
    if missing:
        raise DeclarationError(
            f"explicit corpus lacks the {', '.join(missing)} split(s)",
            key="--data",
            value=spec,
            valid=f"{_EXPLICIT_HELP} (all three splits)",
        )
    if len({len(paths) for paths in files.values()}) != 1:
        raise DeclarationError(
            "some splits name two files and some one",
            key="--data",
            value=spec,
            valid="two files (source, target) for every split, or one for every split",
        )
    return files


def _load_explicit(
    spec: str, source_lang: str | None, target_lang: str | None, max_chars: int
) -> ParallelCorpus:
    files = _explicit_files(spec)
    absolute = ";".join(f"{n}={','.join(str(p.resolve()) for p in files[n])}" for n in SPLIT_NAMES)
    if len(files["train"]) == 1:
        suffix = files["train"][0].suffix.lstrip(".")
        language = target_lang or (suffix if suffix not in ("", TEXT_SUFFIX) else UNDETERMINED)
        splits = {name: read_monolingual(files[name][0]) for name in SPLIT_NAMES}
        return _make(spec, absolute, "", language, splits, [], max_chars)
    src_path, tgt_path = files["train"]
    src = source_lang or src_path.suffix.lstrip(".") or "src"
    tgt = target_lang or tgt_path.suffix.lstrip(".") or "tgt"
    splits = {name: read_parallel(*files[name]) for name in SPLIT_NAMES}
    return _make(spec, absolute, src, tgt, splits, [], max_chars)


def load_corpus(
    data: str | Path,
    *,
    source_lang: str | None = None,
    target_lang: str | None = None,
    max_chars: int = 1000,
) -> ParallelCorpus:
    """Load the corpus named by `--data` (syntax in the module docstring).

    **Arguments:**

    - `data`: a `bible:...` spec, a directory (optionally `DIR:SRC-TGT`), or explicit files;
      parallel or monolingual (module docstring).
    - `source_lang`, `target_lang`: the languages of a directory or explicit files (ignored for the
      Bible, whose spec names them); `target_lang` names the language of monolingual `.txt`.
    - `max_chars`: training pairs with a longer side are dropped.

    **Returns:**

    The `ParallelCorpus`; a `DeclarationError` naming `--data` or the faulty file and line.
    """
    if max_chars < 1:
        raise DeclarationError("must be positive", key="max_chars", value=max_chars)
    text = str(data).strip()
    if text.lower().startswith("bible:"):
        bible = read_bible(text)
        spec = bible.spec
        splits = {"train": bible.train, "valid": bible.valid, "test": bible.test}
        return _make(
            spec.name,
            spec.name,
            spec.source_lang,  # "" for one side alone: monolingual
            spec.target_lang,
            splits,
            list(bible.notes),
            max_chars,
        )
    if "=" in text and any(text.startswith(f"{name}=") for name in SPLIT_NAMES):
        return _load_explicit(text, source_lang, target_lang, max_chars)
    path = Path(text)
    if path.is_dir():
        return _load_directory(path, text, source_lang, target_lang, max_chars)
    match = _LANG_SUFFIX.match(text)
    if match and Path(match["path"]).is_dir():
        return _load_directory(Path(match["path"]), text, match["src"], match["tgt"], max_chars)
    raise DeclarationError(
        "no such corpus: not a bible: spec, an existing directory or explicit files",
        key="--data",
        value=text,
        valid=_DATA_HELP,
    )
