"""The data stage: Bible specs and splits, raw parallel text, the subword vocabulary, batching."""

from __future__ import annotations

import re
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from tiny_run import TINY

from butcherflow.data import (
    BibleSpec,
    EncodedSplit,
    LengthBuckets,
    ParallelCorpus,
    Vocabulary,
    batch_shapes,
    build_vocabulary,
    collate,
    encode_split,
    fit_buckets,
    load_corpus,
    make_batches,
    parse_bible_spec,
    read_bible,
)
from butcherflow.data import vocab as vocab_module
from butcherflow.data.bible import (
    DEFAULT_VERSIONS,
    LANGUAGES,
    VERSIONS,
    BibleSplits,
    bible_db_path,
    clean_verse,
    verse_bucket,
)
from butcherflow.data.vocab import vocabulary_path
from butcherflow.errors import DeclarationError

VERSES = 31102


@pytest.fixture(scope="module")
def de_en() -> BibleSplits:
    return read_bible("bible:de-en")


@pytest.fixture(scope="module")
def tiny() -> ParallelCorpus:
    return load_corpus(TINY)


@pytest.fixture(scope="module")
def vocab(tiny: ParallelCorpus, tmp_path_factory: pytest.TempPathFactory) -> Vocabulary:
    return build_vocabulary(tiny, 300, tmp_path_factory.mktemp("spm"))


# --- Bible specs ----------------------------------------------------------------------------


@pytest.mark.parametrize("lang", sorted(DEFAULT_VERSIONS))
def test_every_language_has_a_default_version_of_that_language(lang: str) -> None:
    other = "en" if lang != "en" else "de"
    spec = parse_bible_spec(f"bible:{lang}-{other}")
    assert spec.source_lang == lang and spec.source_version == DEFAULT_VERSIONS[lang]
    assert VERSIONS[spec.source_version][0] == lang
    assert spec.split == "random"


def test_the_version_table_matches_the_database() -> None:
    db = sqlite3.connect(f"file:{bible_db_path()}?mode=ro", uri=True)
    try:
        counts = dict(db.execute("SELECT bbName, COUNT(*) FROM bible GROUP BY bbName"))
    finally:
        db.close()
    assert set(counts) == set(VERSIONS)
    assert set(counts.values()) == {VERSES}
    assert {lang for lang, _ in VERSIONS.values()} == set(LANGUAGES) == set(DEFAULT_VERSIONS)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("bible:de-en", BibleSpec("de", "e", "en", "4")),
        ("bible:de@s-en@k", BibleSpec("de", "s", "en", "k")),
        ("bible:fr-en@3", BibleSpec("fr", "l", "en", "3")),
        ("bible:en@k-en@4", BibleSpec("en", "k", "en", "4")),
        ("bible:de-en:short2long", BibleSpec("de", "e", "en", "4", "short2long")),
        ("bible:de", BibleSpec("", "", "de", "e")),  # one side: monolingual text
        ("bible:en@k:short2long", BibleSpec("", "", "en", "k", "short2long")),
        (" Bible:DE-En ", BibleSpec("de", "e", "en", "4")),
    ],
)
def test_bible_specs_parse(text: str, expected: BibleSpec) -> None:
    assert parse_bible_spec(text) == expected


def test_the_canonical_name_spells_the_versions() -> None:
    assert parse_bible_spec("bible:de-en").name == "bible:de@e-en@4"
    assert parse_bible_spec("bible:de@s-en:short2long").name == "bible:de@s-en@4:short2long"


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("bible:xx-en", ["'--data'", "'xx'", "de (German", "versions e/s"]),
        ("bible:de@k-en", ["'k' (King James 1611) is English, not German", "e (Elberfelder"]),
        ("bible:de@q-en", ["unknown Bible version code 'q'", "s (Schlachter 1951)"]),
        ("bible:", ["malformed", "'bible:'", "bible:SRC-TGT", "bible:LANG", "en (English"]),
        ("bible:de-en-fr", ["malformed", "bible:SRC@V-TGT@V"]),
        ("bible:-en", ["malformed"]),
        ("bible:de-en:long2short", ["unknown Bible split 'long2short'", "short2long"]),
        ("bible:de-en:short2long:x", ["malformed"]),
        ("bible:en@4-en", ["same version '4'", "bible:en@k-en@4"]),
    ],
)
def test_bad_bible_specs_name_the_value_and_what_is_valid(
    text: str, fragments: list[str], declaration_error: Callable
) -> None:
    with declaration_error("'--data'", *fragments):
        parse_bible_spec(text)
    with declaration_error("'--data'", *fragments):
        load_corpus(text)


# --- Cleaning and splits ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        (
            "आदि में परमेश्वर ने आकाश की सृष्टि की। (इब्रा. 1:10, इब्रा. 11:3)",
            "आदि में परमेश्वर ने आकाश की सृष्टि की।",
        ),
        ("(7:26) Dieu dit.", "Dieu dit."),
        ("(35-22b) Pada mulanya.", "Pada mulanya."),
        ("Et : «Je t’ai établi» [Genèse 17:5])", "Et : «Je t’ai établi»)"),
        ("women of Ammon, [and] of Moab:", "women of Ammon, and of Moab:"),
        ("यीशु रोया*।", "यीशु रोया।"),
        ("\t Y lloró\nJesús. ", "Y lloró Jesús."),
        ("(ADDED FROM KJV: The song of songs. => Песня Песней.)", "Песня Песней."),
        ("fanya. ( [ (III John 1:15) ) Amani kwako. ]", "fanya. Amani kwako."),
        ("(the same is Zoar)", "(the same is Zoar)"),
        ("-", ""),
        ("[]", ""),
        ("(*)", ""),
        ("(aynı)", ""),
        ("［本節欠如］", ""),
    ],
)
def test_clean_verse(raw: str, clean: str) -> None:
    assert clean_verse(raw) == clean


def test_verse_buckets_are_pinned() -> None:
    """The split must never change between runs or releases (sha256, not `hash`)."""
    assert (verse_bucket(1, 1, 1), verse_bucket(43, 11, 35), verse_bucket(66, 22, 21)) == (
        382,
        265,
        992,
    )


def test_bible_split_sizes_and_disjointness(de_en: BibleSplits) -> None:
    sizes = (len(de_en.train), len(de_en.valid), len(de_en.test))
    assert sizes == (29119, 989, 993)
    assert 28_500 < sizes[0] < 29_700 and 900 < sizes[1] < 1100 and 900 < sizes[2] < 1100
    keys = {name: set(de_en.verses[name]) for name in ("train", "valid", "test")}
    assert not keys["train"] & keys["valid"] and not keys["train"] & keys["test"]
    assert not keys["valid"] & keys["test"]
    assert sum(map(len, keys.values())) == VERSES - 1  # one Elberfelder verse is a placeholder
    assert any("dropped 1 verses" in note for note in de_en.notes)
    assert de_en.train[0] == (
        "Im Anfang schuf Gott die Himmel und die Erde.",
        "In the beginning God created the heavens and the earth.",
    )
    for name, pairs in (("train", de_en.train), ("valid", de_en.valid), ("test", de_en.test)):
        assert all(s and t and "\n" not in s + t for s, t in pairs), name
        assert all((name == "test") == (verse_bucket(*key) < 32) for key in de_en.verses[name]), (
            name
        )


def test_the_split_of_a_verse_does_not_depend_on_the_languages(de_en: BibleSplits) -> None:
    other = read_bible("bible:fr@o-en@k")
    for name in ("valid", "test"):
        assert set(other.verses[name]) == set(de_en.verses[name])


def test_short2long_thresholds() -> None:
    data = read_bible("bible:de-en:short2long")
    note = next(n for n in data.notes if n.startswith("short2long"))
    short, long = map(int, re.findall(r"length (?:<=|>) (\d+) chars", note))
    assert short < long
    assert max(len(s) for s, _ in data.train) == short
    assert min(len(s) for s, _ in data.valid + data.test) > long
    assert 20_000 < len(data.train) < 25_000
    assert 600 < len(data.valid) < 900 and 600 < len(data.test) < 900
    assert not set(data.verses["valid"]) & set(data.verses["test"])
    corpus = load_corpus("bible:de-en:short2long")
    assert corpus.name == "bible:de@e-en@4:short2long"
    assert note in corpus.notes


# --- Raw parallel text ----------------------------------------------------------------------


def test_tiny_corpus_loads_from_its_directory(tiny: ParallelCorpus) -> None:
    assert (tiny.source_lang, tiny.target_lang) == ("de", "en")
    assert (len(tiny.train), len(tiny.valid), len(tiny.test)) == (400, 30, 30)
    assert any("alphabetical" in note for note in tiny.notes)
    assert re.fullmatch(r"[0-9a-f]{64}", tiny.fingerprint)
    first = (TINY / "train.de").read_text(encoding="utf-8").split("\n")[0]
    assert tiny.train[0][0] == first
    assert sum(p.stat().st_size for p in TINY.glob("*.*[a-z]")) < 120_000


def test_languages_can_be_named(tiny: ParallelCorpus) -> None:
    reverse = load_corpus(f"{TINY}:en-de")
    assert (reverse.source_lang, reverse.target_lang) == ("en", "de")
    assert reverse.train[0] == tiny.train[0][::-1]
    assert reverse.fingerprint != tiny.fingerprint
    assert load_corpus(TINY, source_lang="en").target_lang == "de"
    assert load_corpus(TINY, source_lang="de", target_lang="en").fingerprint == tiny.fingerprint


def _write_pair(folder: Path, split: str, src: str | bytes, tgt: str | bytes) -> None:
    for suffix, text in (("de", src), ("en", tgt)):
        data = text if isinstance(text, bytes) else text.encode()
        (folder / f"{split}.{suffix}").write_bytes(data)


def _corpus_dir(tmp_path: Path, **overrides: tuple[str | bytes, str | bytes]) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for split in ("train", "valid", "test"):
        _write_pair(folder, split, *overrides.get(split, ("a\nb\n", "x\ny\n")))
    return folder


def test_explicit_files(tmp_path: Path, tiny: ParallelCorpus) -> None:
    spec = ";".join(f"{s}={TINY}/{s}.de,{TINY}/{s}.en" for s in ("train", "valid", "test"))
    corpus = load_corpus(spec)
    assert (corpus.source_lang, corpus.target_lang) == ("de", "en")
    assert corpus.fingerprint == tiny.fingerprint
    assert corpus.train == tiny.train


def test_the_spec_reloads_the_corpus_from_any_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(TINY, tmp_path / "data" / "copy")
    monkeypatch.chdir(tmp_path)
    given = [
        "data/copy",
        "data/copy:de-en",
        ";".join(f"{s}=data/copy/{s}.de,data/copy/{s}.en" for s in ("train", "valid", "test")),
    ]
    corpora = [load_corpus(spec) for spec in given]
    monkeypatch.chdir(tmp_path / "data")  # elsewhere: the relative specs no longer work
    for spec, corpus in zip(given, corpora, strict=True):
        assert str(tmp_path / "data" / "copy") in corpus.spec
        again = load_corpus(corpus.spec)
        assert (again.fingerprint, again.source_lang, again.target_lang) == (
            corpus.fingerprint,
            corpus.source_lang,
            corpus.target_lang,
        ), spec


@pytest.mark.parametrize(
    ("spec", "fragments"),
    [
        ("train=a.de,a.en", ["lacks the valid, test split"]),
        ("train=a.de;valid=b.de,b.en;test=c,d", ["some splits name two files and some one"]),
        ("train=a,b,c;valid=b;test=c", ["malformed explicit corpus entry 'train=a,b,c'"]),
        ("train=a.de,a.en;train=b.de,b.en;test=c,d", ["split 'train' given twice"]),
        ("no/such/dir", ["no such corpus", "'no/such/dir'", "bible:SRC-TGT"]),
    ],
)
def test_bad_explicit_specs(spec: str, fragments: list[str], declaration_error: Callable) -> None:
    with declaration_error("'--data'", *fragments):
        load_corpus(spec)


def test_filtering_counts_empty_and_over_long_pairs(tmp_path: Path) -> None:
    long = "w" * 30
    folder = _corpus_dir(
        tmp_path,
        train=(f"a\n\nc\n{long}\ne\n", f"x\ny\n\nz\n{long}\n"),
        valid=(f"a\n{long}\n \n", f"x\n{long}\ny\n"),
    )
    corpus = load_corpus(folder, max_chars=20)
    assert corpus.train == [("a", "x")]
    assert corpus.valid == [("a", "x"), (long, long)]  # over-long pairs stay in valid/test
    assert "filtered 2 empty and 2 over-long (> 20 chars) pairs from train" in corpus.notes
    assert "filtered 1 empty and 0 over-long (> 20 chars) pairs from valid" in corpus.notes


def test_fingerprint_follows_the_content(tmp_path: Path) -> None:
    folder = _corpus_dir(tmp_path)
    before = load_corpus(folder).fingerprint
    assert load_corpus(folder).fingerprint == before
    _write_pair(folder, "test", "a\nb\n", "x\nY\n")
    assert load_corpus(folder).fingerprint != before


def test_crlf_and_missing_final_newline(tmp_path: Path) -> None:
    folder = _corpus_dir(tmp_path, train=("a\r\nb", "x\r\ny\r\n"))
    assert load_corpus(folder).train == [("a", "x"), ("b", "y")]


def test_mismatched_line_counts_name_both_files(
    tmp_path: Path, declaration_error: Callable
) -> None:
    folder = _corpus_dir(tmp_path, valid=("a\nb\nc\n", "x\ny\n"))
    with declaration_error("valid.de has 3 lines", "valid.en has 2", "line 3 has no partner"):
        load_corpus(folder)


def test_empty_file(tmp_path: Path, declaration_error: Callable) -> None:
    folder = _corpus_dir(tmp_path, test=("a\n", "\n\n"))
    with declaration_error("test.en", "file is empty"):
        load_corpus(folder)


def test_non_utf8_bytes_give_file_line_and_offset(
    tmp_path: Path, declaration_error: Callable
) -> None:
    folder = _corpus_dir(tmp_path, train=(b"ok\nalso ok\nbad \xff byte\n", b"x\ny\nz\n"))
    with declaration_error("train.de:3:", "invalid UTF-8 byte 0xff", "byte offset 15", "column 5"):
        load_corpus(folder)


def test_missing_split_file(tmp_path: Path, declaration_error: Callable) -> None:
    folder = _corpus_dir(tmp_path)
    (folder / "valid.en").unlink()
    with declaration_error("valid.en", "file not found"):
        load_corpus(folder)


def test_ambiguous_languages(tmp_path: Path, declaration_error: Callable) -> None:
    folder = _corpus_dir(tmp_path)
    (folder / "train.fr").write_text("a\nb\n", encoding="utf-8")
    with declaration_error("cannot infer the languages", "de, en, fr", "DIR:SRC-TGT"):
        load_corpus(folder)
    assert load_corpus(f"{folder}:de-en").target_lang == "en"


def test_directory_name_gives_the_direction(tmp_path: Path) -> None:
    folder = _corpus_dir(tmp_path)
    named = folder.rename(tmp_path / "bible.en-de")
    corpus = load_corpus(named)
    assert (corpus.source_lang, corpus.target_lang) == ("en", "de")
    assert corpus.train[0] == ("x", "a")


# --- Vocabulary -----------------------------------------------------------------------------


def test_vocabulary_ids_and_round_trip(vocab: Vocabulary, tiny: ParallelCorpus) -> None:
    assert len(vocab) == 300
    assert (vocab.pad, vocab.unk, vocab.bos, vocab.eos) == (0, 1, 2, 3)
    for source, target in tiny.train[:50]:
        for text in (source, target):
            ids = vocab.encode(text)
            assert ids and min(ids) > vocab.eos and max(ids) < len(vocab)
            assert vocab.decode(ids) == text
            assert vocab.decode([vocab.bos, *ids, vocab.eos, vocab.pad, vocab.pad]) == text
    assert Vocabulary.load(vocab.path).encode("Gott") == vocab.encode("Gott")


def test_vocabulary_is_cached(
    tiny: ParallelCorpus, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = build_vocabulary(tiny, 200, tmp_path)
    assert first.path == vocabulary_path(tiny, 200, tmp_path)
    assert first.path.name == f"spm-{tiny.fingerprint[:16]}-200.model"
    assert [p.name for p in tmp_path.iterdir()] == [first.path.name]  # no temp file left
    mtime = first.path.stat().st_mtime_ns

    def no_training(*args: object) -> bytes:
        raise AssertionError("the cached model should have been reused")

    monkeypatch.setattr(vocab_module, "_train", no_training)
    again = build_vocabulary(tiny, 200, tmp_path)
    assert again.path == first.path and first.path.stat().st_mtime_ns == mtime
    assert again.encode("Jehova sprach") == first.encode("Jehova sprach")
    with pytest.raises(AssertionError, match="reused"):
        build_vocabulary(tiny, 250, tmp_path)  # another size is another model


def test_vocabulary_size_too_large(
    tiny: ParallelCorpus, tmp_path: Path, declaration_error: Callable
) -> None:
    with declaration_error("'--vocab-size'", "(got 50000)", "smaller --vocab-size, at most"):
        build_vocabulary(tiny, 50_000, tmp_path)
    with declaration_error("'--vocab-size'", "(got 20)", "--vocab-size >="):
        build_vocabulary(tiny, 20, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_chinese_and_japanese_fall_back_to_bytes(tmp_path: Path, vocab: Vocabulary) -> None:
    common = "耶和华神使各样的树从地上长起来"
    lines = "".join(common[i:] + common[:i] + "。\n" for i in range(len(common))) * 4
    folder = tmp_path / "zh-en"
    folder.mkdir()
    for split in ("train", "valid", "test"):
        (folder / f"{split}.zh").write_text(lines + "风茄\n", encoding="utf-8")
        (folder / f"{split}.en").write_text("tree\n" * (lines.count("\n") + 1), encoding="utf-8")
    chinese = build_vocabulary(load_corpus(f"{folder}:zh-en"), 300, tmp_path)
    unseen = "风茄鸽"
    assert Vocabulary.unk not in chinese.encode(unseen)
    assert chinese.decode(chinese.encode(unseen)) == unseen
    assert Vocabulary.unk in vocab.encode(unseen)  # German-English: no byte pieces


def test_a_corrupt_model_is_a_clear_error(tmp_path: Path, declaration_error: Callable) -> None:
    path = tmp_path / "spm.model"
    path.write_bytes(b"not a model")
    with declaration_error("spm.model", "cannot load the sentencepiece model"):
        Vocabulary.load(path)


# --- Batching -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def encoded(tiny: ParallelCorpus, vocab: Vocabulary) -> EncodedSplit:
    return encode_split(tiny.train, vocab)


def test_encode_split_truncates_to_max_positions(
    tiny: ParallelCorpus, vocab: Vocabulary, encoded: EncodedSplit
) -> None:
    assert len(encoded) == len(tiny.train)
    assert encoded.src[0] == vocab.encode(tiny.train[0][0])
    short = encode_split(tiny.train, vocab, max_positions=8)
    assert max(map(len, short.src)) == 8 and max(map(len, short.tgt)) == 7
    assert short.src[0] == encoded.src[0][:8]


@pytest.mark.parametrize("max_tokens", [64, 300, 1024])
def test_batches_respect_the_budget_and_cover_every_pair(
    encoded: EncodedSplit, max_tokens: int
) -> None:
    sizes = encoded.sizes()
    for epoch in (1, 2):
        batches = make_batches(encoded, max_tokens, shuffle=True, seed=3, epoch=epoch)
        flat = [i for batch in batches for i in batch]
        assert sorted(flat) == list(range(len(encoded)))
        for batch in batches:
            assert max(sizes[batch]) * len(batch) <= max_tokens
        # Greedy: a batch is only closed when the next pair would not fit.
        assert len(batches) <= 2 * int(np.ceil(sizes.sum() / max_tokens)) + 1


def test_batches_are_length_bucketed(encoded: EncodedSplit) -> None:
    batches = make_batches(encoded, 512, shuffle=False, seed=0, epoch=0)
    order = [i for batch in batches for i in batch]
    keys = [(len(encoded.src[i]), len(encoded.tgt[i]), i) for i in order]
    assert keys == sorted(keys)
    src_len = np.array([len(s) for s in encoded.src])
    padding = sum(int(src_len[b].max()) * len(b) - int(src_len[b].sum()) for b in batches)
    assert padding < 0.05 * src_len.sum()


def test_batches_are_deterministic_per_seed_and_epoch(encoded: EncodedSplit) -> None:
    def run(seed: int, epoch: int) -> list[list[int]]:
        return make_batches(encoded, 300, shuffle=True, seed=seed, epoch=epoch)

    assert run(1, 1) == run(1, 1)
    assert run(1, 1) != run(1, 2)
    assert run(1, 1) != run(2, 1)
    assert make_batches(encoded, 300, shuffle=False, seed=1, epoch=1) == make_batches(
        encoded, 300, shuffle=False, seed=5, epoch=9
    )


def test_a_pair_over_the_budget_is_an_error(
    encoded: EncodedSplit, declaration_error: Callable
) -> None:
    largest = int(encoded.sizes().max())
    with declaration_error("'--max-tokens'", f"(got {largest - 1})", f">= {largest}"):
        make_batches(encoded, largest - 1, shuffle=False, seed=0, epoch=0)
    assert make_batches(EncodedSplit([], []), 10, shuffle=True, seed=0, epoch=0) == []


def test_collate_shapes_and_special_tokens() -> None:
    split = EncodedSplit(src=[[5, 6, 7], [8], [9, 10]], tgt=[[11], [12, 13, 14], []])
    batch = collate(split, [1, 0, 2])
    assert batch.src.tolist() == [[8, 0, 0], [5, 6, 7], [9, 10, 0]]
    assert batch.prev_output.tolist() == [[2, 12, 13, 14], [2, 11, 0, 0], [2, 0, 0, 0]]
    assert batch.target.tolist() == [[12, 13, 14, 3], [11, 3, 0, 0], [3, 0, 0, 0]]
    assert batch.ntokens == 4 + 2 + 1 == int((batch.target != 0).sum())
    assert batch.indices.tolist() == [1, 0, 2]
    assert all(t.dtype == torch.long for t in (batch.src, batch.prev_output, batch.target))
    moved = batch.to(torch.device("cpu"))
    assert torch.equal(moved.target, batch.target) and moved.ntokens == batch.ntokens
    assert len(batch) == 3


def test_collate_of_real_batches(encoded: EncodedSplit) -> None:
    batches = make_batches(encoded, 400, shuffle=True, seed=1, epoch=1)
    for indices in batches[:5]:
        batch = collate(encoded, indices)
        rows = len(indices)
        assert batch.src.shape == (rows, max(len(encoded.src[i]) for i in indices))
        width = max(len(encoded.tgt[i]) for i in indices) + 1
        assert batch.prev_output.shape == batch.target.shape == (rows, width)
        assert batch.src.numel() <= 400 and batch.target.numel() <= 400
        assert (batch.prev_output[:, 0] == Vocabulary.bos).all()
        lengths = (batch.target != Vocabulary.pad).sum(dim=1)
        rows_index = torch.arange(rows)
        assert (batch.target[rows_index, lengths - 1] == Vocabulary.eos).all()
        for row, n in enumerate(lengths.tolist()):  # prev_output is target shifted right
            assert batch.prev_output[row, 1:n].tolist() == batch.target[row, : n - 1].tolist()
            assert batch.target[row, : n - 1].tolist() == encoded.tgt[indices[row]]


def test_declaration_error_is_raised_for_bad_max_chars() -> None:
    with pytest.raises(DeclarationError, match="max_chars"):
        load_corpus(TINY, max_chars=0)


# --- length buckets -------------------------------------------------------------------------


def test_a_ratio_spells_a_geometric_ladder_in_multiples_of_8() -> None:
    ladder = LengthBuckets.parse("1.25")
    assert ladder is not None and ladder.widths[:10] == (8, 16, 24, 32, 40, 48, 64, 80, 96, 120)
    assert LengthBuckets.parse("16,32,64") == LengthBuckets("16,32,64", (16, 32, 64))
    assert LengthBuckets.parse(" OFF ") is None


@pytest.mark.parametrize("spec", ["1.0", "0.5", "inf", "nan", "x", "32,16", "16,,32", "-8", ""])
def test_a_bad_ladder_names_the_flag_and_what_is_valid(
    spec: str, declaration_error: Callable
) -> None:
    with declaration_error("'--buckets'", "a ratio > 1 such as 1.25"):
        LengthBuckets.parse(spec)


def test_a_ladder_below_the_longest_pair_cannot_hold_it(
    encoded: EncodedSplit, declaration_error: Callable
) -> None:
    longest = int(encoded.sizes().max())
    with declaration_error("'--buckets'", f"needs {longest} positions", f"reaches {longest}"):
        fit_buckets(encoded, "8,16")
    widths = fit_buckets(encoded, "1.25")
    assert widths is not None and int(widths.max()) == longest  # never wider than the longest


@pytest.mark.parametrize("max_tokens", [300, 1024, 4096])
def test_bucketed_batches_cover_every_pair_in_few_full_shapes(
    encoded: EncodedSplit, max_tokens: int
) -> None:
    widths = fit_buckets(encoded, "1.25")
    assert widths is not None
    batches = make_batches(encoded, max_tokens, shuffle=True, seed=3, epoch=1, widths=widths)
    assert sorted(i for batch in batches for i in batch) == list(range(len(encoded)))
    shapes = batch_shapes(encoded, batches, widths)
    used = set(widths.tolist())
    assert len(shapes) <= len(used) + 2  # one full shape per width, the widest's remainders
    partial = 0
    for batch in batches:
        width = int(widths[batch].max())
        assert width in used and width * len(batch) <= max_tokens
        partial += len(batch) < max_tokens // width
        padded = collate(encoded, batch, widths)
        assert padded.src.shape == padded.target.shape == (len(batch), width)
    assert partial <= 2
    again = make_batches(encoded, max_tokens, shuffle=True, seed=3, epoch=1, widths=widths)
    assert again == batches  # a pure function of (seed, epoch), as without buckets
    assert again != make_batches(encoded, max_tokens, shuffle=True, seed=3, epoch=2, widths=widths)


@pytest.mark.slow
def test_the_bibles_bucketed_batches_take_ten_shapes_an_epoch() -> None:
    """docs/benchmarks.md's figures ("On the GPU"): with --buckets 1.25, epoch 1 of bible:de-en
    takes 10 shapes at max_tokens 4096 (unbucketed: one per batch, 273) and 8 at 49152 (37), for
    1.19 padded positions per real token (both sides) against 1.08 at 4096, and 1.26 against
    1.44 at 49152, where sorted batches of a thousand pairs span many lengths."""
    corpus = load_corpus("bible:de-en")
    vocab = build_vocabulary(corpus, 8000, vocab_module.default_cache_dir())
    split = encode_split(corpus.train, vocab)
    widths = fit_buckets(split, "1.25")
    real = sum(map(len, split.src)) + sum(len(t) + 1 for t in split.tgt)
    figures = {}
    for max_tokens in (4096, 49152):
        for name, w in (("bucketed", widths), ("plain", None)):
            batches = make_batches(split, max_tokens, shuffle=True, seed=1, epoch=1, widths=w)
            shapes = batch_shapes(split, batches, w)
            padded = sum(
                len(b) * (s + t) for b in batches for _, s, t in batch_shapes(split, [b], w)
            )
            figures[name, max_tokens] = (len(batches), len(shapes), round(padded / real, 2))
    assert figures == {
        ("bucketed", 4096): (276, 10, 1.19),
        ("plain", 4096): (273, 273, 1.08),
        ("bucketed", 49152): (25, 8, 1.26),
        ("plain", 49152): (37, 37, 1.44),
    }
