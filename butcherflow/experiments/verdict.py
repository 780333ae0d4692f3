"""Whether the numbers support a claim: mean ± standard deviation over seeds, and two rules.

**The rule.** A comparison says run A beats run B on a metric (higher BLEU or chrF, lower
perplexity). With `a` and `b` the per-seed values:

- `d` = mean(a) − mean(b), signed so that `d > 0` is the claimed direction;
- `s` = the noise scale: the largest sample standard deviation (n − 1 in the denominator) over
  the sides trained with at least two seeds (a single-seed side borrows the other side's spread:
  the seed-to-seed noise is taken to be alike across architectures);
- verdict: `supported` when `d > s`; `not supported at this scale` when `d < −s`;
  `inconclusive: differences within one standard deviation` when `|d| ≤ s`; and
  `inconclusive: one seed on each side, no spread to compare with` when neither side has two
  seeds.

A claim holds several comparisons: it is `supported` when every comparison is, `not supported at
this scale` when any comparison goes the other way beyond `s`, and otherwise `inconclusive` (the
first inconclusive comparison's reason). One standard deviation is a deliberately plain
threshold, not a significance test: with three seeds it separates what the seeds cannot explain
from what they can, and the tables print the numbers so that a reader can apply their own.

**The paired rule** (`judge_paired`) compares the runs seed by seed (`dᵢ` = A − B at seed i):
supported when every `dᵢ` goes the claimed way and their mean exceeds their standard deviation;
`decide` lets it decide a claim when every comparison has two pairs or more. `RULE` states both
rules in full, as `docs/experiments/index.md` prints them.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import final

# The rule of the module docstring, as printed in docs/experiments/index.md.
RULE = """\
A comparison says run A beats run B on a metric (higher BLEU or chrF, lower perplexity). With
`d` = mean(A) − mean(B) over seeds, signed so that `d > 0` is the claimed direction, and `s` =
the largest sample standard deviation over the sides trained with two seeds or more (a
single-seed side borrows the other side's spread):

- **supported** when `d > s`;
- **not supported at this scale** when `d < −s`;
- **inconclusive: differences within one standard deviation** when `|d| ≤ s`;
- **inconclusive: one seed on each side, no spread to compare with** when no side has two seeds.

A claim is supported when all its comparisons are, not supported when any goes the other way
beyond `s`, and inconclusive otherwise. One standard deviation is a plain threshold, not a
significance test; every number is printed so that readers can apply their own.

**Paired by seed.** A seed fixes the initialisation and the batch order, and results move with
the seed alike across architectures (at 1000 updates seed 2 gives about 18 BLEU and seed 3
about 20 to every translation model), so the difference of two runs *at the same seed* is far
less noisy than either run. With `dᵢ` = A − B at seed i (claimed direction positive) over the
seeds both sides were trained with, `d̄` their mean, `s_d` their sample standard deviation and
the sign count (how many `dᵢ` are positive):

- **supported** when every `dᵢ > 0` and `d̄ > s_d`;
- **not supported at this scale** when every `dᵢ < 0` and `d̄ < −s_d`;
- **inconclusive: the seeds disagree** when the `dᵢ` differ in sign;
- **inconclusive: mean paired difference within one standard deviation** when they agree but
  `|d̄| ≤ s_d`;
- **inconclusive: fewer than two seeds on both sides** with fewer than two pairs.

With three seeds, "all three agree" alone would happen by chance one time in four for two
equal architectures (one in eight in a given direction); `d̄ > s_d` also asks that no single
seed carries the difference. Claims combine their comparisons' paired verdicts as above.

**Which rule decides.** The paired rule decides a claim when every one of its comparisons has
two pairs of seeds or more; otherwise the unpaired rule does. Both verdicts are printed beside
every comparison and claim, and the summary names the rule that decided.
"""

SUPPORTED = "supported"
NOT_SUPPORTED = "not supported at this scale"
WITHIN_NOISE = "inconclusive: differences within one standard deviation"
ONE_SEED = "inconclusive: one seed on each side, no spread to compare with"
NOT_MEASURED = "not measured yet"


def mean_std(values: Sequence[float]) -> tuple[float, float | None]:
    """The mean and the sample standard deviation (None for a single value).

    **Arguments:**

    - `values`: one value per seed (at least one).

    **Returns:** `(mean, std)`.
    """
    if not values:
        raise ValueError("mean_std of no values")
    mean = statistics.fmean(values)
    return mean, statistics.stdev(values) if len(values) > 1 else None


def format_mean_std(values: Sequence[float], digits: int = 2) -> str:
    """`"23.41 ± 0.37"`, or `"23.41 ± —"` for one seed, `"—"` for none."""
    if not values:
        return "—"
    mean, std = mean_std(values)
    return f"{mean:.{digits}f} ± " + ("—" if std is None else f"{std:.{digits}f}")


@final
@dataclass(frozen=True)
class Verdict:
    """The outcome of one comparison.

    **Arguments:**

    - `text`: one of the verdict strings of this module.
    - `difference`: `d` (claimed direction positive), None when not measured.
    - `spread`: `s`, None when no side has two seeds or nothing was measured.
    """

    text: str
    difference: float | None = None
    spread: float | None = None


def judge(better: Sequence[float], worse: Sequence[float], higher_is_better: bool) -> Verdict:
    """Apply the module's rule to one comparison.

    **Arguments:**

    - `better`: the per-seed values of the run claimed to be better.
    - `worse`: the per-seed values of the run it is claimed to beat.
    - `higher_is_better`: the metric's direction (False for perplexity).

    **Returns:** the `Verdict`; `NOT_MEASURED` when a side has no value.
    """
    if not better or not worse:
        return Verdict(NOT_MEASURED)
    if any(not math.isfinite(v) for v in (*better, *worse)):
        raise ValueError("judge: non-finite values")
    (mean_a, std_a), (mean_b, std_b) = mean_std(better), mean_std(worse)
    d = (mean_a - mean_b) if higher_is_better else (mean_b - mean_a)
    spreads = [s for s in (std_a, std_b) if s is not None]
    if not spreads:
        return Verdict(ONE_SEED, d, None)
    s = max(spreads)
    if d > s:
        return Verdict(SUPPORTED, d, s)
    if d < -s:
        return Verdict(NOT_SUPPORTED, d, s)
    return Verdict(WITHIN_NOISE, d, s)


SEEDS_DISAGREE = "inconclusive: the seeds disagree"
PAIRED_WITHIN_NOISE = "inconclusive: mean paired difference within one standard deviation"
FEW_PAIRS = "inconclusive: fewer than two seeds on both sides"
PAIRED, UNPAIRED = "paired", "unpaired"


@final
@dataclass(frozen=True)
class PairedVerdict:
    """The outcome of one comparison under the paired rule.

    **Arguments:**

    - `text`: one of the verdict strings of this module.
    - `seeds`: the seeds both sides have, ascending.
    - `differences`: `dᵢ` per seed (claimed direction positive), in `seeds` order.
    - `mean`, `spread`: `d̄` and `s_d` (None with fewer than one and two pairs).
    """

    text: str
    seeds: tuple[int, ...] = ()
    differences: tuple[float, ...] = ()
    mean: float | None = None
    spread: float | None = None

    @property
    def positive(self) -> int:
        """The sign count: how many seeds go the claimed way."""
        return sum(d > 0 for d in self.differences)


def judge_paired(
    better: Mapping[int, float], worse: Mapping[int, float], higher_is_better: bool
) -> PairedVerdict:
    """Apply the paired rule (module docstring) to one comparison.

    **Arguments:**

    - `better`, `worse`: seed -> value of the run claimed to be better, and of the other.
    - `higher_is_better`: the metric's direction (False for perplexity).

    **Returns:** the `PairedVerdict`; `NOT_MEASURED` when a side has no value.
    """
    if not better or not worse:
        return PairedVerdict(NOT_MEASURED)
    if any(not math.isfinite(v) for v in (*better.values(), *worse.values())):
        raise ValueError("judge_paired: non-finite values")
    seeds = tuple(sorted(set(better) & set(worse)))
    sign = 1.0 if higher_is_better else -1.0
    differences = tuple(sign * (better[s] - worse[s]) for s in seeds)
    if len(differences) < 2:
        mean = differences[0] if differences else None
        return PairedVerdict(FEW_PAIRS, seeds, differences, mean, None)
    mean, spread = statistics.fmean(differences), statistics.stdev(differences)
    if all(d > 0 for d in differences):
        text = SUPPORTED if mean > spread else PAIRED_WITHIN_NOISE
    elif all(d < 0 for d in differences):
        text = NOT_SUPPORTED if mean < -spread else PAIRED_WITHIN_NOISE
    else:
        text = SEEDS_DISAGREE
    return PairedVerdict(text, seeds, differences, mean, spread)


def decide(unpaired: Sequence[Verdict], paired: Sequence[PairedVerdict]) -> tuple[str, str]:
    """A claim's verdict and the rule that decided it (`PAIRED` or `UNPAIRED`): the paired rule
    when every comparison has two pairs of seeds or more, else the unpaired one."""
    if paired and all(len(v.differences) >= 2 for v in paired):
        return combine(paired), PAIRED
    return combine(unpaired), UNPAIRED


def combine(verdicts: Sequence[Verdict | PairedVerdict]) -> str:
    """A claim's verdict from its comparisons' (see the module docstring)."""
    texts = [v.text for v in verdicts]
    if not texts or all(t == NOT_MEASURED for t in texts):
        return NOT_MEASURED
    if NOT_SUPPORTED in texts:
        return NOT_SUPPORTED
    if all(t == SUPPORTED for t in texts):
        return SUPPORTED
    if NOT_MEASURED in texts:
        return "inconclusive: not every comparison has been measured"
    return next(t for t in texts if t.startswith("inconclusive"))
