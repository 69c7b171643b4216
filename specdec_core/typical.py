"""Medusa-2's typical acceptance at one position, with the law it really emits.

Medusa (Cai et al. 2024) keeps a candidate x when the target gives it more than a threshold set by the
target's entropy H(p) (in nats):  p(x) > tau = min(epsilon, delta exp(-H(p)))  (its posterior_threshold and
posterior_alpha; the released defaults are 0.09 and 0.3). When no candidate passes, the token is drawn from
p restricted to {p >= tau} and renormalised. No ratio to q and no residual: it is faster, but it is not
exact. Tokens with p <= tau can never be kept and are under-weighted in the fallback, and a kept candidate
carries the draft's law q, not p. Even q == p does not make it exact.

Candidates come either sampled i.i.d. from q (``sampled``, the setting comparable with the exact rule) or
as the draft's top-k tokens (``top``, what Medusa's heads propose).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specdec_core.mistakes import RuleCheck
from specdec_core.multidraft import check_k
from specdec_core.rejection import _rng, check_draws, check_pair, draw_from
from specdec_core.stats import chi_square_gof
from specdec_core.validate import check_distribution

MEDUSA_EPSILON = 0.09     # posterior_threshold in the Medusa repository
MEDUSA_DELTA = 0.3        # posterior_alpha, about sqrt(epsilon)
SAMPLED = "sampled"
TOP = "top"
CANDIDATES = {SAMPLED: "k candidates sampled i.i.d. from q", TOP: "the draft's top-k tokens (Medusa heads)"}


def check_thresholds(epsilon: float, delta: float) -> tuple[float, float]:
    """epsilon in [0, 1] and delta in [0, 1] (delta <= 1 keeps the fallback set {p >= tau} non-empty)."""
    for name, val in (("epsilon", epsilon), ("delta", delta)):
        if isinstance(val, bool) or not isinstance(val, (int, float, np.floating)) or not 0.0 <= val <= 1.0:
            raise ValueError(f"{name} must be a number in [0, 1]; got {val!r}")
    return float(epsilon), float(delta)


def check_candidates(candidates: str) -> str:
    """candidates one of CANDIDATES."""
    if candidates not in CANDIDATES:
        raise ValueError(f"candidates must be one of {', '.join(CANDIDATES)}; got {candidates!r}")
    return candidates


def entropy(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """H(p) = -sum_x p(x) log p(x) in nats, with 0 log 0 = 0; batched over leading axes."""
    logs = np.log(np.where(p > 0, p, 1.0))
    return -(p * logs).sum(axis=-1)


def typical_threshold(p: ArrayLike, epsilon: float = MEDUSA_EPSILON, delta: float = MEDUSA_DELTA):
    """tau = min(epsilon, delta exp(-H(p))); exp(-H) <= max p, so the argmax always clears tau when delta < 1."""
    pa = check_distribution(p, "p")
    epsilon, delta = check_thresholds(epsilon, delta)
    tau = np.minimum(epsilon, delta * np.exp(-entropy(pa)))
    return float(tau) if np.ndim(tau) == 0 else tau


def fallback_law(p: NDArray[np.float64], tau: NDArray[np.float64] | float) -> NDArray[np.float64]:
    """p restricted to {p >= tau} and renormalised: the law Medusa samples when no candidate passes."""
    kept = np.where(p >= np.asarray(tau)[..., None], p, 0.0)
    return kept / kept.sum(axis=-1, keepdims=True)


@dataclass(frozen=True)
class TypicalLaw:
    """The emitted law of typical acceptance and what it is made of; arrays batched over leading axes."""

    law: NDArray[np.float64]          # (..., V) exact law of the emitted token
    tau: NDArray[np.float64] | float  # threshold min(epsilon, delta exp(-H(p)))
    acceptance: NDArray[np.float64] | float   # P(a candidate is kept)
    tv_to_p: NDArray[np.float64] | float      # TV(law, p): zero only in special cases


def typical_distribution(p: ArrayLike, q: ArrayLike, k: int = 1, epsilon: float = MEDUSA_EPSILON,
                         delta: float = MEDUSA_DELTA, candidates: str = SAMPLED) -> TypicalLaw:
    """sampled: law = q 1[p > tau] (1 - (1 - beta)^k) / beta + (1 - beta)^k p_T, beta = sum_{p > tau} q;
    top: the first of q's top-k with p > tau (probability 1), else p_T."""
    pa, qa = check_pair(p, q)
    k, candidates = check_k(k), check_candidates(candidates)
    tau = np.asarray(typical_threshold(pa, epsilon, delta))
    passes = pa > tau[..., None]                                      # (..., V)
    p_t = fallback_law(pa, tau)
    if candidates == SAMPLED:
        q_pass = np.where(passes, qa, 0.0)                            # (..., V)
        beta = q_pass.sum(axis=-1, keepdims=True)                     # (..., 1) P(one candidate passes)
        none = (1.0 - beta) ** k                                      # (..., 1) P(no candidate passes)
        scale = np.divide(1.0 - none, beta, out=np.zeros_like(beta), where=beta > 0)
        law = q_pass * scale + none * p_t
        accept = 1.0 - none[..., 0]
    else:
        order = np.argsort(-qa, axis=-1, kind="stable")[..., :k]      # (..., k) the draft's top-k
        ok = np.take_along_axis(passes, order, axis=-1)               # (..., k)
        first = np.take_along_axis(order, np.argmax(ok, axis=-1)[..., None], axis=-1)   # (..., 1)
        hit = ok.any(axis=-1, keepdims=True)                          # (..., 1)
        one_hot = (np.arange(pa.shape[-1]) == first).astype(np.float64)
        law = np.where(hit, one_hot, p_t)
        accept = hit[..., 0].astype(np.float64)
    tv = 0.5 * np.abs(law - pa).sum(axis=-1)
    scalar = pa.ndim == 1
    return TypicalLaw(law, float(tau) if scalar else tau, float(accept) if scalar else accept,
                      float(tv) if scalar else tv)


def tv_curve(p: ArrayLike, q: ArrayLike, k: int, grid: ArrayLike, vary: str = "delta",
             epsilon: float = MEDUSA_EPSILON, delta: float = MEDUSA_DELTA,
             candidates: str = SAMPLED) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """TV(law, p) and the acceptance for each value of epsilon or delta on a grid, the other held fixed."""
    if vary not in ("epsilon", "delta"):
        raise ValueError(f"vary must be 'epsilon' or 'delta'; got {vary!r}")
    rows = [typical_distribution(p, q, k, float(g) if vary == "epsilon" else epsilon,
                                 float(g) if vary == "delta" else delta, candidates)
            for g in np.asarray(grid, dtype=float)]
    return np.array([r.tv_to_p for r in rows]), np.array([r.acceptance for r in rows])


def sample_typical(p: ArrayLike, q: ArrayLike, k: int, n: int, epsilon: float = MEDUSA_EPSILON,
                   delta: float = MEDUSA_DELTA, candidates: str = SAMPLED,
                   seed: int | np.random.Generator | None = 0) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """n positions through the rule -> (tokens, kept): the first candidate with p > tau, else a draw from p_T."""
    pa, qa = check_pair(p, q)
    k, n, candidates = check_k(k), check_draws(n), check_candidates(candidates)
    if pa.ndim != 1:
        raise ValueError("the sampler draws for one (p, q) pair: pass 1-D laws")
    rng = _rng(seed)
    tau = typical_threshold(pa, epsilon, delta)
    if candidates == SAMPLED:
        cands = draw_from(qa, rng.random(n * k)).reshape(n, k)       # (n, k)
    else:
        cands = np.tile(np.argsort(-qa, kind="stable")[:k], (n, 1))  # (n, k)
    ok = pa[cands] > tau                                              # (n, k)
    kept = ok.any(axis=1)
    tokens = cands[np.arange(n), np.argmax(ok, axis=1)]
    n_fallback = int((~kept).sum())
    if n_fallback:
        tokens[~kept] = draw_from(fallback_law(pa, tau), rng.random(n_fallback))
    return tokens.astype(np.int64), kept


def check_typical(p: ArrayLike, q: ArrayLike, k: int, n: int, epsilon: float = MEDUSA_EPSILON,
                  delta: float = MEDUSA_DELTA, candidates: str = SAMPLED, seed: int = 0) -> RuleCheck:
    """Typical acceptance's exact law against p, and n sampled positions tested against p by chi-square."""
    pa, qa = check_pair(p, q)
    exact = typical_distribution(pa, qa, k, epsilon, delta, candidates)
    tokens, kept = sample_typical(pa, qa, k, n, epsilon, delta, candidates, seed)
    counts = np.bincount(tokens, minlength=pa.size)
    stat, dof, p_value = chi_square_gof(counts, pa)
    label = f"Medusa typical acceptance ({CANDIDATES[candidates]})"
    return RuleCheck(name="typical", label=label, defined=True, law=exact.law,
                     max_error=float(np.abs(exact.law - pa).max()), tv_to_p=float(exact.tv_to_p),
                     empirical=counts / counts.sum(), kept=float(kept.mean()), kept_exact=float(exact.acceptance),
                     stat=stat, dof=dof, p_value=p_value)
