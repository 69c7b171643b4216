"""Temperature, top-k and top-p as maps from logits to a probability law over the vocabulary.

All maps act on the last axis and are batched over leading axes. Order of application (as in the
common decoders): temperature, then top-k, then top-p, then renormalise.

Ties are broken deterministically by token id: when several tokens share a probability, the one with
the lower id ranks first. So temperature 0 picks the lowest-id argmax, top-k keeps exactly k tokens
(lower ids win a tie at the k-th place), and top-p walks tokens in that same order.
"""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specdec_core.validate import _as_float_array

TOP_P_TOL = 1e-12  # cumulative-mass comparisons forgive this much rounding


def check_logits(logits: ArrayLike, name: str = "logits") -> NDArray[np.float64]:
    """Logits: a non-empty float array along the last axis; -inf allowed (a banned token), NaN and +inf not."""
    try:
        arr = np.asarray(logits, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be an array of numbers; got {logits!r}") from exc
    if arr.ndim == 0 or arr.shape[-1] == 0:
        raise ValueError(f"{name} must be a non-empty vector; got {logits!r}")
    if np.any(np.isnan(arr)) or np.any(arr == np.inf):
        raise ValueError(f"{name} must be finite or -inf; got NaN or +inf")
    if np.any(np.all(arr == -np.inf, axis=-1)):
        raise ValueError(f"{name} must have at least one finite entry per row")
    return arr


def check_temperature(temperature: float) -> float:
    """temperature >= 0 and finite (0 means greedy)."""
    t = float(_as_float_array(temperature, "temperature"))
    if t < 0.0:
        raise ValueError(f"temperature must be >= 0 (0 = greedy); got {temperature!r}")
    return t


def check_top_k(top_k: int | None) -> int | None:
    """top_k an integer >= 1, or None for no truncation; k >= V keeps every token."""
    if top_k is None:
        return None
    if isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral) or top_k < 1:
        raise ValueError(f"top_k must be an integer >= 1 (or None for no truncation); got {top_k!r}")
    return int(top_k)


def check_top_p(top_p: float) -> float:
    """top_p in (0, 1]; 1 means no truncation."""
    tp = float(_as_float_array(top_p, "top_p"))
    if not 0.0 < tp <= 1.0:
        raise ValueError(f"top_p must be in (0, 1] (1 = no truncation); got {top_p!r}")
    return tp


def softmax(logits: ArrayLike) -> NDArray[np.float64]:
    """softmax(z)_i = exp(z_i - max z) / sum_j exp(z_j - max z); -inf logits get probability 0."""
    z = check_logits(logits)
    e = np.exp(z - z.max(axis=-1, keepdims=True))   # (..., V)
    return e / e.sum(axis=-1, keepdims=True)


def rank_order(probs: NDArray[np.float64]) -> NDArray[np.int64]:
    """Token ids sorted by probability descending, lower id first among ties (a stable sort)."""
    return np.argsort(-probs, axis=-1, kind="stable")


def apply_temperature(logits: ArrayLike, temperature: float) -> NDArray[np.float64]:
    """softmax(z / T) for T > 0; one-hot at the lowest-id argmax for T = 0 (the greedy limit)."""
    z = check_logits(logits)
    t = check_temperature(temperature)
    if t > 0.0:
        # shift before dividing: (z - max z) / T <= 0, so a tiny T cannot overflow to inf - inf
        return softmax((z - z.max(axis=-1, keepdims=True)) / t)
    top = np.argmax(z, axis=-1)                      # first maximum = lowest id among ties
    out = np.zeros_like(z)
    np.put_along_axis(out, top[..., None], 1.0, axis=-1)
    return out


def top_k_filter(probs: ArrayLike, top_k: int | None) -> NDArray[np.float64]:
    """Keep the k most probable tokens (lower id wins a tie), zero the rest, renormalise."""
    pr = _as_float_array(probs, "probs")
    k = check_top_k(top_k)
    if k is None or k >= pr.shape[-1]:
        return pr / pr.sum(axis=-1, keepdims=True)
    order = rank_order(pr)                            # (..., V)
    keep = np.zeros(pr.shape, dtype=bool)
    np.put_along_axis(keep, order[..., :k], True, axis=-1)
    out = np.where(keep, pr, 0.0)
    return out / out.sum(axis=-1, keepdims=True)


def top_p_filter(probs: ArrayLike, top_p: float) -> NDArray[np.float64]:
    """Keep the smallest top-ranked set whose mass reaches top_p (the crossing token is kept); renormalise."""
    pr = _as_float_array(probs, "probs")
    tp = check_top_p(top_p)
    pr = pr / pr.sum(axis=-1, keepdims=True)
    if tp == 1.0:
        return pr
    order = rank_order(pr)                            # (..., V)
    sorted_p = np.take_along_axis(pr, order, axis=-1)
    mass_before = np.cumsum(sorted_p, axis=-1) - sorted_p
    keep_sorted = mass_before < tp - TOP_P_TOL        # the first token is always kept
    keep = np.zeros(pr.shape, dtype=bool)
    np.put_along_axis(keep, order, keep_sorted, axis=-1)
    out = np.where(keep, pr, 0.0)
    return out / out.sum(axis=-1, keepdims=True)


def sampling_distribution(
    logits: ArrayLike, temperature: float = 1.0, top_k: int | None = None, top_p: float = 1.0
) -> NDArray[np.float64]:
    """The law a sampler really draws from: top_p(top_k(softmax(z / T))); one-hot argmax at T = 0."""
    check_top_k(top_k)
    check_top_p(top_p)
    probs = apply_temperature(logits, temperature)
    return top_p_filter(top_k_filter(probs, top_k), top_p)
