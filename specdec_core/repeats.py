"""Repeated, interleaved measurements: medians with their spread, the run order, and what a gap is made of.

Pure numpy. One timed run on a shared machine is one draw from a noisy clock, so the live page and the
bench run R repeats, interleaved A B B A so that a slow drift in the machine's load hits both sides, and
quote each quantity as its median over the repeats with the [min, max] range (the spread).

The gap between the measured and the predicted speedup splits exactly into three factors (``gap_parts``):

    measured / predicted = (tokens per round / E[N])                      the acceptance draw
                         x ((gamma c + v) t_T / wall seconds per round)   per-round work the algebra models
                         x (baseline wall seconds per token / t_T)         the baseline's own overhead

where t_T is the baseline's event seconds per target step (the unit of c and v). The middle factor is
below 1 by exactly the per-round overhead the algebra does not model (sampling, the acceptance test,
cache rollback, Python between passes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from specdec_core.measure import Measured

MIN_ROUNDS = 20  # fewer speculative rounds per repeat than this: too short for c, v and alpha_j to mean much
WIDE_SPREAD = 0.15  # (max - min) / median above this: the spread is wide, and part of any gap is noise
CLOSE = 0.10  # measured within 10% of predicted: the algebra accounts for the speedup
MAX_REPEATS = 9


def check_repeats(repeats: int, most: int = MAX_REPEATS) -> int:
    """repeats as an int in [1, most]; ValueError naming the range otherwise."""
    if isinstance(repeats, bool) or not isinstance(repeats, (int, np.integer)) or not 1 <= repeats <= most:
        raise ValueError(f"repeats must be an integer in [1, {most}]; got {repeats!r}")
    return int(repeats)


@dataclass(frozen=True)
class Spread:
    """Median of the finite values with their range [lo, hi] = [min, max]; n finite values (NaN when n = 0)."""

    median: float
    lo: float
    hi: float
    n: int

    @property
    def width(self) -> float:
        """hi - lo (0 for one value, NaN for none)."""
        return self.hi - self.lo

    def relative(self) -> float:
        """(hi - lo) / |median|: the spread as a fraction of the value; NaN for no value or a zero median."""
        return self.width / abs(self.median) if self.n and self.median != 0 else math.nan


def spread(values: ArrayLike) -> Spread:
    """median, min and max of the finite values (NaN, inf are left out and not counted in n)."""
    x = np.asarray(values, dtype=np.float64).reshape(-1)
    x = x[np.isfinite(x)]
    if x.size == 0:
        return Spread(math.nan, math.nan, math.nan, 0)
    return Spread(float(np.median(x)), float(x.min()), float(x.max()), int(x.size))


def race_order(repeats: int) -> list[bool]:
    """base_first per repeat, A B B A: repeat r runs the baseline first when r is odd.

    With an even number of repeats each side's mean position in time is the same, so a linear drift in
    the machine's speed cancels out of the comparison; repeat 0 runs speculative first.
    """
    return [r % 2 == 1 for r in range(check_repeats(repeats))]


def sweep_order(gammas: Sequence[int], repeats: int) -> list[tuple[int, int, bool]]:
    """(repeat, gamma, base_first) for a sweep: a baseline beside every gamma, gammas reversed on odd repeats,
    and the side that runs first alternating from one pair to the next (S B, B S, S B, ...)."""
    order: list[tuple[int, int, bool]] = []
    for r in range(check_repeats(repeats)):
        for g in (list(gammas) if r % 2 == 0 else list(gammas)[::-1]):
            order.append((r, int(g), len(order) % 2 == 1))
    return order


@dataclass(frozen=True)
class GapParts:
    """measured / predicted = accept x spec_round x base_step (exactly, when all are finite)."""

    ratio: float  # measured speedup / predicted speedup
    accept: float  # tokens per round / E[N] from alpha_j: how the acceptance draw compares with its mean
    spec_round: float  # (gamma c + v) t_T / measured wall seconds per round: below 1 by the unmodelled overhead
    # (c and v are timed apart from the rounds, so a loaded machine can put it above 1)
    base_step: float  # baseline wall seconds per token / t_T: >= 1 by the baseline's own overhead
    overhead_s_per_round: float  # wall seconds per round - (gamma c + v) t_T


def gap_parts(m: Measured) -> GapParts:
    """Split measured / predicted speedup of one run into its three factors (NaN where a side is missing)."""
    wall_round = m.tokens_per_pass / m.spec_tokens_per_s if m.spec_tokens_per_s > 0 else math.nan
    modelled_round = (m.gamma * m.c + m.v) * m.t_target_s
    base_wall = 1.0 / m.base_tokens_per_s if m.base_tokens_per_s > 0 else math.nan
    ok = m.t_target_s > 0 and math.isfinite(m.t_target_s)
    return GapParts(
        ratio=m.measured_speedup / m.predicted_speedup if m.predicted_speedup > 0 else math.nan,
        accept=m.tokens_per_pass / m.expected_tokens if m.expected_tokens > 0 else math.nan,
        spec_round=modelled_round / wall_round if ok and wall_round > 0 else math.nan,
        base_step=base_wall / m.t_target_s if ok else math.nan,
        overhead_s_per_round=wall_round - modelled_round,
    )


@dataclass(frozen=True)
class RepeatSummary:
    """Median and [min, max] over repeats of what the live panel shows, and of the gap's factors."""

    repeats: int
    rounds: Spread
    spec_tokens_per_s: Spread
    base_tokens_per_s: Spread
    alpha: Spread
    tokens_per_pass: Spread
    c: Spread
    v: Spread
    predicted: Spread
    measured: Spread
    ratio: Spread
    accept: Spread
    spec_round: Spread
    base_step: Spread
    overhead_s_per_round: Spread

    def short(self, min_rounds: int = MIN_ROUNDS) -> bool:
        """True when some repeat has fewer than min_rounds speculative rounds (or there is none)."""
        return not self.rounds.n or self.rounds.lo < min_rounds

    def noisy(self, wide: float = WIDE_SPREAD) -> bool:
        """True when the measured or the predicted speedup varies by more than `wide` of its median."""
        return any(s.n > 1 and s.relative() > wide for s in (self.measured, self.predicted))


def summarise_repeats(runs: Sequence[Measured]) -> RepeatSummary:
    """Each quantity's median and range over the repeats (a repeat missing a side counts where it can)."""
    parts = [gap_parts(m) for m in runs]

    def over(name: str, src: Sequence[object] = runs) -> Spread:
        return spread([getattr(x, name) for x in src])

    return RepeatSummary(
        repeats=len(runs), rounds=over("rounds"), spec_tokens_per_s=over("spec_tokens_per_s"),
        base_tokens_per_s=over("base_tokens_per_s"), alpha=over("alpha_const"), tokens_per_pass=over("tokens_per_pass"),
        c=over("c"), v=over("v"), predicted=over("predicted_speedup"), measured=over("measured_speedup"),
        ratio=over("ratio", parts), accept=over("accept", parts), spec_round=over("spec_round", parts),
        base_step=over("base_step", parts), overhead_s_per_round=over("overhead_s_per_round", parts),
    )


@dataclass(frozen=True)
class GapReading:
    """What the race says, as facts for the sentence under it.

    kind: "no-baseline" (measured unknown), "no-prediction" (nothing drafted, or costs unknown),
    "match" (within CLOSE of predicted), "below" or "above" predicted. slowdown: measured median < 1.
    """

    kind: str
    measured: float
    predicted: float
    ratio: float
    slowdown: bool
    predicted_slowdown: bool
    noisy: bool
    short: bool


def read_gap(s: RepeatSummary) -> GapReading:
    """Classify the race from its medians: the ratio is the median of the per-repeat measured / predicted."""
    meas, pred = s.measured.median, s.predicted.median
    ratio = s.ratio.median
    if not math.isfinite(meas):
        kind = "no-baseline"
    elif not math.isfinite(pred) or not math.isfinite(ratio):
        kind = "no-prediction"
    elif abs(ratio - 1.0) <= CLOSE:
        kind = "match"
    else:
        kind = "below" if ratio < 1.0 else "above"
    return GapReading(kind, meas, pred, ratio, math.isfinite(meas) and meas < 1.0,
                      math.isfinite(pred) and pred < 1.0, s.noisy(), s.short())
