"""The algebra of speculative decoding: expected tokens per step, speedup, best draft length.

Notation (seed document): a draft proposes ``gamma`` tokens, each accepted with conditional
probability ``alpha`` (or ``alpha_j`` at position j); a draft token costs ``c`` and a verification
pass costs ``v``, both in units of one ordinary target decode step.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specdec_core.validate import (
    check_alpha,
    check_alphas,
    check_c,
    check_gamma,
    check_v,
    scalar_or_array,
)


def expected_tokens(alpha: ArrayLike, gamma: ArrayLike) -> float | NDArray[np.float64]:
    """E[N] = (1 - alpha^(gamma+1)) / (1 - alpha); exactly gamma + 1 at alpha = 1. Broadcasts."""
    a = check_alpha(alpha)
    g = check_gamma(gamma)
    a, g = np.broadcast_arrays(a, g)
    with np.errstate(divide="ignore", invalid="ignore"):
        # expm1/log form keeps full precision as alpha -> 1, where 1 - a^(g+1) cancels.
        geometric = np.expm1((g + 1) * np.log(a)) / (a - 1.0)
    out = np.where(a == 1.0, g + 1.0, np.where(a == 0.0, 1.0, geometric))
    return scalar_or_array(out.astype(np.float64))


def expected_tokens_positional(alphas: ArrayLike) -> float:
    """E[N] = 1 + sum_i prod_{j<=i} alpha_j for conditional rates alpha_1..alpha_gamma; 1 if empty."""
    a = check_alphas(alphas)
    return float(1.0 + np.cumprod(a).sum())


def step_cost(gamma: ArrayLike, c: ArrayLike, v: ArrayLike = 1.0) -> float | NDArray[np.float64]:
    """Cost of one speculative step in target decode steps: gamma * c + v."""
    g = check_gamma(gamma)
    return scalar_or_array(g * check_c(c) + check_v(v))


def speedup(
    alpha: ArrayLike, gamma: ArrayLike, c: ArrayLike, v: ArrayLike = 1.0
) -> float | NDArray[np.float64]:
    """Speedup = E[N] / (gamma * c + v); gamma = 0 gives 1 / v. Broadcasts."""
    return scalar_or_array(np.asarray(expected_tokens(alpha, gamma)) / np.asarray(step_cost(gamma, c, v)))


def speedup_positional(alphas: ArrayLike, c: float, v: float = 1.0) -> float:
    """Speedup with per-position rates: (1 + sum_i prod_{j<=i} alpha_j) / (gamma * c + v)."""
    a = check_alphas(alphas)
    return expected_tokens_positional(a) / float(step_cost(len(a), c, v))


def best_gamma_grid(
    alpha: ArrayLike, c: ArrayLike, v: ArrayLike = 1.0, max_gamma: int = 32
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """argmax over integer gamma in [0, max_gamma] of speedup, elementwise; ties go to the smaller gamma."""
    gmax = int(check_gamma(max_gamma, "max_gamma"))
    a, cc, vv = np.broadcast_arrays(check_alpha(alpha), check_c(c), check_v(v))
    gammas = np.arange(gmax + 1).reshape((-1,) + (1,) * a.ndim)  # (G, *shape)
    s = np.asarray(speedup(a[None], gammas, cc[None], vv[None]))   # (G, *shape)
    best = np.argmax(s, axis=0)                                     # first maximum = smallest gamma
    return best.astype(np.int64), np.take_along_axis(s, best[None], axis=0)[0]


def best_gamma(alpha: float, c: float, v: float = 1.0, max_gamma: int = 32) -> tuple[int, float]:
    """(gamma*, speedup) maximising E[N] / (gamma c + v) over integers 0..max_gamma (0 = don't speculate)."""
    g, s = best_gamma_grid(alpha, c, v, max_gamma)
    return int(g), float(s)


def accepted_length_pmf(alpha: float, gamma: int) -> NDArray[np.float64]:
    """P(N = k) for k = 1..gamma+1: alpha^(k-1) (1 - alpha) for k <= gamma, alpha^gamma at k = gamma+1."""
    a = float(check_alpha(alpha))
    g = int(check_gamma(gamma))
    return accepted_length_pmf_positional(np.full(g, a))


def accepted_length_pmf_positional(alphas: ArrayLike) -> NDArray[np.float64]:
    """P(N = k) = (prod_{j<k} alpha_j)(1 - alpha_k) for k <= gamma, prod_j alpha_j at k = gamma + 1."""
    a = check_alphas(alphas)
    reach = np.concatenate([[1.0], np.cumprod(a)])   # P(N >= k) for k = 1..gamma+1
    stop = np.concatenate([1.0 - a, [1.0]])          # P(stop at k | reached k)
    return reach * stop


def decay_alphas(alpha: float, rho: float, gamma: int) -> NDArray[np.float64]:
    """alpha_j = alpha * rho^(j-1) for j = 1..gamma: acceptance that decays with draft position."""
    a = float(check_alpha(alpha))
    r = float(check_alpha(rho, "rho"))
    g = int(check_gamma(gamma))
    return a * r ** np.arange(g, dtype=np.float64)


def break_even_alpha(gamma: int, c: float, v: float = 1.0) -> float | None:
    """The alpha at which speedup = 1, i.e. E[N](alpha) = gamma c + v; 0 if even alpha = 0 pays, None if none does."""
    g = int(check_gamma(gamma))
    cost = float(step_cost(g, c, v))
    if cost <= 1.0:
        return 0.0
    if cost > g + 1.0:
        return None
    lo, hi = 0.0, 1.0                                  # E[N] is increasing in alpha on [0, 1]
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if float(expected_tokens(mid, g)) < cost:
            lo = mid
        else:
            hi = mid
    return hi
