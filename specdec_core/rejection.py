"""The accept/resample rule of speculative sampling, its exact emitted law, and a sampled check.

A draft proposes x ~ q. The target keeps x with probability a(x) = min(1, p(x)/q(x)); otherwise it
draws a replacement from the residual r = (p - q)+ / ||(p - q)+||_1. The emitted token then has law
min(p, q) + (1 - alpha) r = p, with alpha = sum_x min(p(x), q(x)) = 1 - TV(p, q).

Every function here is batched over leading axes (the vocabulary is the last axis) except the
sampler, which draws n tokens for one (p, q) pair.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specdec_core.validate import check_distribution, scalar_or_array

MAX_DRAWS = 1_000_000


def check_pair(p: ArrayLike, q: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """p and q: laws over the same vocabulary (same last axis), leading axes broadcastable."""
    pa = check_distribution(p, "p")
    qa = check_distribution(q, "q")
    if pa.shape[-1] != qa.shape[-1]:
        raise ValueError(
            f"p and q must be over the same vocabulary; got lengths {pa.shape[-1]} and {qa.shape[-1]}"
        )
    try:
        pa, qa = np.broadcast_arrays(pa, qa)
    except ValueError as exc:
        raise ValueError(f"p and q have incompatible batch shapes {pa.shape} and {qa.shape}") from exc
    return pa, qa


def accepted_mass(p: ArrayLike, q: ArrayLike) -> NDArray[np.float64]:
    """min(p(x), q(x)) per token = q(x) min(1, p(x)/q(x)): the mass kept without resampling; sums to alpha."""
    pa, qa = check_pair(p, q)
    return np.minimum(pa, qa)


def acceptance_rate(p: ArrayLike, q: ArrayLike) -> float | NDArray[np.float64]:
    """alpha = sum_x min(p(x), q(x)) = 1 - TV(p, q); 1 when p == q, 0 for disjoint supports."""
    return scalar_or_array(accepted_mass(p, q).sum(axis=-1))


def argmax_acceptance(p: ArrayLike, q: ArrayLike) -> float:
    """p(argmax q): acceptance when the draft proposes its argmax and verification takes q as one-hot there
    (vLLM V1, TensorRT-LLM). min(1, p(x) / 1) keeps x with probability p(x); the residual (p - onehot)+ keeps
    the output exactly p. Ties go to the lowest id, as numpy's and torch's argmax do."""
    pa, qa = check_pair(p, q)
    if pa.ndim != 1:
        raise ValueError("argmax_acceptance takes one pair of laws, shape (V,)")
    return float(pa[int(np.argmax(qa))])


def matched_mass(p: ArrayLike, q: ArrayLike) -> NDArray[np.float64]:
    """p(x) q(x) per token: the chance sample-and-compare keeps x (x ~ q proposed, y ~ p drawn apart, y = x)."""
    pa, qa = check_pair(p, q)
    return pa * qa


def match_acceptance(p: ArrayLike, q: ArrayLike) -> float | NDArray[np.float64]:
    """sum_x p(x) q(x): acceptance of sample-and-compare (draw y ~ p apart from x ~ q, keep x iff y = x, emit y).

    Exact too (it emits y ~ p), but it keeps at most sum min(p, q) = alpha, since p q <= min(p, q); the two are
    equal when either law is a point mass (a greedy side) or the supports are disjoint.
    """
    return scalar_or_array(matched_mass(p, q).sum(axis=-1))


def total_variation(p: ArrayLike, q: ArrayLike) -> float | NDArray[np.float64]:
    """TV(p, q) = 1/2 sum_x |p(x) - q(x)| = sum_x (p(x) - q(x))+."""
    pa, qa = check_pair(p, q)
    return scalar_or_array(0.5 * np.abs(pa - qa).sum(axis=-1))


def acceptance_probability(p: ArrayLike, q: ArrayLike) -> NDArray[np.float64]:
    """a(x) = min(1, p(x)/q(x)) where q(x) > 0, and 0 where q(x) = 0 (x is never proposed)."""
    pa, qa = check_pair(p, q)
    return _accept(pa, qa)


def _accept(p: NDArray[np.float64], q: NDArray[np.float64]) -> NDArray[np.float64]:
    """min(1, p/q) with the q = 0 cells set to 0 and no division warning."""
    safe_q = np.where(q > 0, q, 1.0)
    return np.where(q > 0, np.minimum(1.0, p / safe_q), 0.0)


def _residual(p: NDArray[np.float64], q: NDArray[np.float64]) -> NDArray[np.float64]:
    """(p - q)+ normalised; p itself where the residual is empty (it is then drawn with probability 0)."""
    resid = np.maximum(p - q, 0.0)                       # (..., V)
    mass = resid.sum(axis=-1, keepdims=True)             # (..., 1)
    empty = mass <= 0.0                                  # (..., 1): p == q, nothing to resample
    np.divide(resid, mass, out=resid, where=~empty)
    return np.where(empty, p, resid) if empty.any() else resid


def residual_distribution(p: ArrayLike, q: ArrayLike) -> NDArray[np.float64]:
    """r = (p - q)+ / ||(p - q)+||_1; when p == q the residual is empty and r = p (never drawn, no NaN)."""
    pa, qa = check_pair(p, q)
    return _residual(pa, qa)


def rule_law(
    q_propose: NDArray[np.float64], accept: NDArray[np.float64], residual: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Exact law of: x ~ q_propose, keep x w.p. accept(x), else draw from residual:
    q a + (1 - sum_y q(y) a(y)) r. NaN in the residual propagates (the rule is then undefined)."""
    kept = q_propose * accept                            # (..., V)
    reject = np.clip(1.0 - kept.sum(axis=-1, keepdims=True), 0.0, 1.0)
    with np.errstate(invalid="ignore"):
        return kept + reject * residual


def emitted_distribution(p: ArrayLike, q: ArrayLike) -> tuple[NDArray[np.float64], float | NDArray[np.float64]]:
    """(law of the emitted token, alpha): q min(1, p/q) + (1 - alpha)(p - q)+/||.|| = p; exact, batched."""
    pa, qa = check_pair(p, q)
    accepted = np.minimum(pa, qa)                        # (..., V) = q(x) min(1, p(x)/q(x))
    alpha = accepted.sum(axis=-1)                        # (...,)
    reject = np.clip(1.0 - alpha, 0.0, 1.0)[..., None]   # (..., 1) rejected mass = residual mass
    law = accepted + reject * _residual(pa, qa)          # (..., V)
    return law, scalar_or_array(alpha)


def check_draws(n: int) -> int:
    """n an integer in [1, MAX_DRAWS]."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= MAX_DRAWS:
        raise ValueError(f"n must be an integer in [1, {MAX_DRAWS:,}]; got {n!r}")
    return int(n)


def _rng(seed: int | np.random.Generator | None) -> np.random.Generator:
    """A Generator from a seed, or the Generator itself."""
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)


def draw_from(law: NDArray[np.float64], u: NDArray[np.float64]) -> NDArray[np.int64]:
    """Inverse-CDF draws: the first x with cdf(x) > u, for u in [0, 1); never lands on a zero-mass x."""
    cdf = np.cumsum(law)
    cdf /= cdf[-1]                                       # last entry exactly 1, so u < 1 stays in range
    return np.searchsorted(cdf, u, side="right").astype(np.int64)


def sample_rule(
    q_propose: NDArray[np.float64], accept: NDArray[np.float64], residual: NDArray[np.float64],
    n: int, seed: int | np.random.Generator | None = 0,
) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """n independent rounds of: x ~ q_propose, keep w.p. accept(x), else y ~ residual -> (tokens, kept)."""
    n = check_draws(n)
    if q_propose.ndim != 1:
        raise ValueError("the sampler draws for one (p, q) pair: pass 1-D laws")
    rng = _rng(seed)
    proposal = draw_from(q_propose, rng.random(n))       # (n,)
    kept = rng.random(n) < accept[proposal]              # (n,)
    tokens = proposal.copy()
    n_rejected = int(n - kept.sum())
    if n_rejected:
        if not np.all(np.isfinite(residual)) or residual.sum() <= 0:
            raise ValueError("the residual is not a probability vector (0/0 from normalising an empty residual)")
        tokens[~kept] = draw_from(residual, rng.random(n_rejected))
    return tokens, kept


def speculative_sample(
    p: ArrayLike, q: ArrayLike, n: int, seed: int | np.random.Generator | None = 0
) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """n draws through the real rule: x ~ q, keep w.p. min(1, p(x)/q(x)), else resample from (p - q)+."""
    pa, qa = check_pair(p, q)
    return sample_rule(qa, _accept(pa, qa), _residual(pa, qa), n, seed)


def empirical_law(tokens: NDArray[np.int64], vocab: int) -> NDArray[np.float64]:
    """Frequencies of each token id 0..vocab-1 among the draws."""
    return np.bincount(tokens, minlength=vocab).astype(np.float64) / max(tokens.size, 1)


def decomposition(p: ArrayLike, q: ArrayLike) -> dict[str, NDArray[np.float64] | float]:
    """The two pieces of the emitted law: accepted min(p, q) and resampled (1 - alpha) r, their sum, alpha, TV,
    the identity gap alpha - (1 - TV) (rounding only), and whether the residual is empty (p == q)."""
    law, alpha = emitted_distribution(p, q)
    pa, qa = check_pair(p, q)
    reject = 1.0 - np.asarray(alpha)[..., None]          # (..., 1)
    tv = total_variation(pa, qa)
    return {
        "accepted": np.minimum(pa, qa),                  # (..., V)
        "resampled": reject * _residual(pa, qa),         # (..., V) = (1 - alpha) r
        "emitted": law,
        "alpha": alpha,
        "tv": tv,
        "identity_gap": alpha - (1.0 - tv),
        "residual_empty": bool(np.all(np.maximum(pa - qa, 0.0).sum(axis=-1) == 0.0)),
        "max_error": float(np.abs(law - pa).max()),
    }
