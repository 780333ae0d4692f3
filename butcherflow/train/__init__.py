"""Stage "train": corpora, subword vocabularies, batching and the training loop.

Data: corpus.py, bible.py, vocab.py, batching.py. Training: config.py, loop.py (the loop), step.py
(one update), resume.py (opening and resuming a save dir), checkpoint.py (the checkpoint files),
distributed.py, curves.py. Trained models: trained.py (loading, averaging).
"""

from .batching import Batch, EncodedSplit, collate, encode_split, make_batches
from .bible import BibleSpec, parse_bible_spec, read_bible
from .checkpoint import CheckpointError
from .config import TrainConfig
from .corpus import ParallelCorpus, load_corpus
from .loop import TrainingError, train
from .trained import average_checkpoints, load_language_model, load_model
from .vocab import Vocabulary, build_vocabulary

__all__ = [
    "Batch",
    "BibleSpec",
    "CheckpointError",
    "EncodedSplit",
    "ParallelCorpus",
    "TrainConfig",
    "TrainingError",
    "Vocabulary",
    "average_checkpoints",
    "build_vocabulary",
    "collate",
    "encode_split",
    "load_corpus",
    "load_language_model",
    "load_model",
    "make_batches",
    "parse_bible_spec",
    "read_bible",
    "train",
]
