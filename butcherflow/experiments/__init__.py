"""Stage "experiments": the papers' claims as declared experiments, run, tabulated and judged.

`spec.py` (what an experiment is), `catalog.py` (the seven experiments and the size presets),
`runner.py` (plan, train, `result.json`, resume), `evaluation.py` (BLEU, chrF, perplexity,
length bins, throughput of a finished run), `report.py` (tables, figures, index), `verdict.py`
(mean ± std over seeds and the rule that turns numbers into a verdict).
"""

from .catalog import EXPERIMENTS
from .presets import PRESETS, get_preset
from .runner import Outcome, get_experiment, plan, run_experiment, write_reports
from .spec import Claim, Comparison, Experiment, Preset, Run, Variant
from .verdict import Verdict, combine, judge, mean_std

__all__ = [
    "EXPERIMENTS",
    "PRESETS",
    "Claim",
    "Comparison",
    "Experiment",
    "Outcome",
    "Preset",
    "Run",
    "Variant",
    "Verdict",
    "combine",
    "get_experiment",
    "get_preset",
    "judge",
    "mean_std",
    "plan",
    "run_experiment",
    "write_reports",
]
