"""Chi-square goodness of fit in pure numpy: statistic, degrees of freedom and p-value.

The p-value is the chi-square survival function, Q(dof/2, stat/2), where Q is the regularised upper
incomplete gamma function, computed by its power series for x < a + 1 and by a continued fraction
(modified Lentz) otherwise, as in Numerical Recipes section 6.2.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specdec_core.validate import _as_float_array, check_distribution

_EPS = 1e-15
_TINY = 1e-300
_MAX_ITER = 10_000


def _log_prefactor(a: float, x: float) -> float:
    """log(x^a e^-x / Gamma(a))."""
    return a * math.log(x) - x - math.lgamma(a)


def _lower_series(a: float, x: float) -> float:
    """P(a, x) = x^a e^-x / Gamma(a) * sum_n x^n / (a (a+1) ... (a+n)); converges fast for x < a + 1."""
    term = total = 1.0 / a
    ap = a
    for _ in range(_MAX_ITER):
        ap += 1.0
        term *= x / ap
        total += term
        if abs(term) < abs(total) * _EPS:
            break
    return total * math.exp(_log_prefactor(a, x))


def _upper_fraction(a: float, x: float) -> float:
    """Q(a, x) by the continued fraction 1/(x+1-a- 1(1-a)/(x+3-a- 2(2-a)/(x+5-a- ...))), for x >= a + 1."""
    b = x + 1.0 - a
    c = 1.0 / _TINY
    d = 1.0 / b
    h = d
    for i in range(1, _MAX_ITER):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        d = _TINY if abs(d) < _TINY else d
        c = b + an / c
        c = _TINY if abs(c) < _TINY else c
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    return h * math.exp(_log_prefactor(a, x))


def regularized_upper_gamma(a: float, x: float) -> float:
    """Q(a, x) = Gamma(a, x) / Gamma(a) for a > 0, x >= 0; Q(a, 0) = 1 and Q(a, inf) = 0."""
    if not a > 0.0 or math.isnan(x) or x < 0.0:
        raise ValueError(f"regularized_upper_gamma needs a > 0 and x >= 0; got a={a!r}, x={x!r}")
    if x == 0.0:
        return 1.0
    if math.isinf(x):
        return 0.0
    if x < a + 1.0:
        return max(0.0, 1.0 - _lower_series(a, x))
    return min(1.0, _upper_fraction(a, x))


def chi2_sf(stat: float, dof: int) -> float:
    """P(X >= stat) for X ~ chi-square(dof) = Q(dof / 2, stat / 2); dof >= 1."""
    if dof < 1:
        raise ValueError(f"dof must be an integer >= 1; got {dof!r}")
    return regularized_upper_gamma(dof / 2.0, stat / 2.0)


def merge_low_expected(
    observed: NDArray[np.float64], expected: NDArray[np.float64], min_expected: float = 5.0
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Pool every cell with expected count < min_expected into one cell, then grow that pool with the
    smallest remaining cells until it too reaches min_expected (or nothing is left to add)."""
    order = np.argsort(expected, kind="stable")
    o, e = observed[order], expected[order]
    n_small = int(np.searchsorted(e, min_expected, side="left"))   # cells with e < min_expected
    if n_small == 0:
        return o, e
    cut = n_small
    while cut < e.size and e[:cut].sum() < min_expected:
        cut += 1                                                      # absorb the next-smallest cell
    pooled_o = np.concatenate([[o[:cut].sum()], o[cut:]])
    pooled_e = np.concatenate([[e[:cut].sum()], e[cut:]])
    return pooled_o, pooled_e


def chi_square_gof(
    observed_counts: ArrayLike, expected_probs: ArrayLike, min_expected: float = 5.0
) -> tuple[float, int, float]:
    """Pearson's sum (O - nE)^2 / nE over cells (low-expected cells merged) -> (stat, dof, p_value).

    A count in a cell of probability 0 is impossible under the law: (inf, dof, 0.0). With a single
    cell left there is nothing to test: (0.0, 0, 1.0).
    """
    obs = _as_float_array(observed_counts, "observed_counts")
    probs = check_distribution(expected_probs, "expected_probs")
    if obs.ndim != 1 or probs.ndim != 1 or obs.shape != probs.shape:
        raise ValueError(
            f"observed_counts and expected_probs must be 1-D of the same length; got {obs.shape} and {probs.shape}"
        )
    if np.any(obs < 0) or np.any(obs != np.round(obs)):
        raise ValueError("observed_counts must be non-negative integers")
    if not min_expected > 0:
        raise ValueError(f"min_expected must be > 0; got {min_expected!r}")
    n = obs.sum()
    if n <= 0:
        raise ValueError("observed_counts must hold at least one observation")
    possible = probs > 0
    o, e = merge_low_expected(obs[possible], n * probs[possible], min_expected)
    dof = int(o.size - 1)
    if np.any(obs[~possible] > 0):
        return math.inf, dof, 0.0
    if dof == 0:
        return 0.0, 0, 1.0
    stat = float(np.sum((o - e) ** 2 / e))
    return stat, dof, chi2_sf(stat, dof)
