"""The pipeline's stages, left to right: the one statement of butcherflow's import rule.

A module of stage S imports from S itself and from the stages to its left, never from one to its
right, and every import of another stage is at the top of the module (a function-level import
that hides an arrow to the right is still an arrow). `tests/test_layout.py` checks every module
against this tuple. Each entry is a subpackage (or a top-level module) of `butcherflow`; names
in one entry form one stage. The package's `__init__`, `__main__` and this module sit outside
the pipeline.
"""

from __future__ import annotations

STAGES: tuple[tuple[str, ...], ...] = (
    ("errors", "devices"),  # what every stage may use: the exceptions, the --device resolver
    ("methods",),  # declare: integrators as validated, frozen data
    ("analysis",),  # analyse: the proofs
    ("design",),  # design: optimised declarations, returned with their proofs
    ("nn",),  # the building blocks of layers (never the compiler)
    ("compiler",),  # compile: declarations -> nn.Modules
    ("extraction",),  # the compiler's inverse: the integrator a PyTorch module computes
    ("zoo",),  # other libraries' models and layers, built from small configs (random weights)
    ("assemble",),  # recipes -> Seq2Seq / LanguageModel
    ("data",),  # corpora, vocabularies, batching, context windows
    ("tasks",),  # translation or language modelling: the model, the samples, defaults, metrics
    ("savedir",),  # a run's files and the trained model they hold
    ("train",),  # the training loop
    ("generate",),  # beam search, translation, scoring
    ("export",),  # a trained run as a Hugging Face folder (transformers loads it)
    ("experiments",),  # the papers' experiments
    ("gallery",),  # the docs gallery
    ("bench",),  # the benchmarks
    ("cli",),  # the command line
)
OUTSIDE = ("__init__", "__main__", "stages", "_catalog")


def stage_of(name: str) -> int:
    """The index in `STAGES` of a top-level part of butcherflow (`"train"`, `"errors"`, ...)."""
    for index, names in enumerate(STAGES):
        if name in names:
            return index
    raise KeyError(f"butcherflow.{name} is in no stage of butcherflow.stages.STAGES")
