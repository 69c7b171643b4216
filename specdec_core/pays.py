"""Whether a measured run pays, and why: the algebra's speedup from its own alpha_j, c and v.

A run's target passes split into rounds that drafted and rounds that drafted nothing (a lookup that found no
match, a request's first pass). A drafted round costs gamma c + v target steps and yields E[N] tokens; a round
that drafted nothing is a plain step: it costs 1 and yields 1. With a share f0 of empty rounds,

    speedup = ((1 - f0) E[N] + f0) / ((1 - f0) (gamma c + v) + f0),

which is speedup_positional at f0 = 0 and 1 at f0 = 1. Empty rounds only dilute: the run pays exactly when its
drafted rounds do (E[N] > gamma c + v), so the break-even alpha is the algebra's at this gamma, c and v.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from specdec_core import algebra
from specdec_core.validate import check_alphas


def check_fraction(f: float, name: str = "empty_fraction") -> float:
    """f as a float in [0, 1]; ValueError naming the range otherwise."""
    if isinstance(f, bool) or not isinstance(f, (int, float, np.floating, np.integer)) or not 0.0 <= f <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1]; got {f!r}")
    return float(f)


def empty_fraction(passes: int, drafted_rounds: int) -> float:
    """f0 = (passes - drafted rounds) / passes: the share of target passes that drafted nothing (0 for no passes)."""
    if passes <= 0:
        return 0.0
    return min(max((passes - drafted_rounds) / passes, 0.0), 1.0)


def speedup_with_empty_rounds(alphas: ArrayLike, c: float, v: float = 1.0, f0: float = 0.0) -> float:
    """((1 - f0) E[N] + f0) / ((1 - f0)(gamma c + v) + f0): drafted rounds beside plain steps that drafted nothing."""
    a = check_alphas(alphas)
    f = check_fraction(f0)
    en = algebra.expected_tokens_positional(a)
    cost = float(algebra.step_cost(a.size, c, v))
    return ((1.0 - f) * en + f) / ((1.0 - f) * cost + f)


@dataclass(frozen=True)
class PayReading:
    """The algebra on one run's measured alpha_j, c, v and share of empty rounds."""

    gamma: int
    expected_tokens: float      # E[N] of a drafted round
    round_cost: float           # gamma c + v, in target steps
    empty_fraction: float       # f0
    speedup: float              # speedup_with_empty_rounds
    break_even_alpha: float | None  # constant alpha with speedup 1 at this gamma, c, v; None: no alpha pays

    @property
    def pays(self) -> bool:
        """The algebra predicts a speedup above 1."""
        return self.speedup > 1.0


def pay_reading(alphas: ArrayLike, c: float, v: float = 1.0, f0: float = 0.0) -> PayReading:
    """E[N], gamma c + v, the speedup with empty rounds and the break-even alpha, for unreached alpha_j given as 0."""
    a = check_alphas(np.where(np.isnan(np.asarray(alphas, dtype=float)), 0.0, np.asarray(alphas, dtype=float)))
    g = a.size
    if not (math.isfinite(c) and math.isfinite(v)):
        raise ValueError(f"c and v must be finite; got c = {c!r}, v = {v!r}")
    return PayReading(g, algebra.expected_tokens_positional(a), float(algebra.step_cost(g, c, v)), check_fraction(f0),
                      speedup_with_empty_rounds(a, c, v, f0), algebra.break_even_alpha(g, c, v) if g else None)
