"""Temperature, top-k and top-p as maps from logits to a probability law over the vocabulary.

All maps act on the last axis and are batched over leading axes. Order of application (as in the
common decoders): temperature, then top-k, then top-p, then renormalise.

This module is the one definition of the semantics; the engine's torch version
(``gpu_demo.sampler.logits_to_probs``) implements the same law with the same constants, and
``tests/test_sampling_crosscheck.py`` pins the two together over random logits with ties.

- Off values: ``top_k = TOP_K_OFF`` (0) and ``top_p = TOP_P_OFF`` (1) keep every token, as in Hugging
  Face's ``GenerationConfig`` and vLLM's ``SamplingParams`` (0 disables top-k in both).
- Ties are kept, never broken by token id. Top-k keeps every token whose probability is at least the
  k-th largest, so a tie at the k-th place keeps more than k tokens: the rule of Hugging Face's
  ``TopKLogitsWarper`` and vLLM's ``apply_top_k_top_p`` (both mask ``x < kth value``). Top-p keeps token x
  iff the mass of the tokens *strictly* more probable than x is below top_p (the token that crosses
  top_p is kept, and so is every token tied with it). Hugging Face and vLLM break a tie at that boundary
  by their sort's order, which is unspecified; keeping the whole tie makes the law a function of the
  probabilities alone (relabelling the vocabulary permutes it), which is what lets two implementations agree.
- A running mass within ``TOP_P_TOL`` of top_p counts as reaching it (float32 rounding of the engine's
  laws is about 1e-7). Temperature 0 is greedy: one-hot at the argmax, the lowest id among tied maxima
  (``argmax`` in numpy and torch alike).
"""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specdec_core.validate import _as_float_array

TOP_K_OFF = 0  # top_k = 0 keeps every token
TOP_P_OFF = 1.0  # top_p = 1 keeps every token
TOP_P_TOL = 1e-6  # a running mass within this of top_p has reached it (float32 laws round at about 1e-7)


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


def check_top_k(top_k: int) -> int:
    """top_k an integer >= 0; 0 (TOP_K_OFF) means no truncation, and k >= V keeps every token."""
    if isinstance(top_k, bool) or not isinstance(top_k, numbers.Integral) or top_k < 0:
        raise ValueError(f"top_k must be an integer >= 0 (0 = off); got {top_k!r}")
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


def top_k_filter(probs: ArrayLike, top_k: int) -> NDArray[np.float64]:
    """Keep x iff probs(x) >= the k-th largest probability (a tie at the k-th place is kept whole); renormalise."""
    pr = _as_float_array(probs, "probs")
    k = check_top_k(top_k)
    if k == TOP_K_OFF or k >= pr.shape[-1]:
        return pr / pr.sum(axis=-1, keepdims=True)
    kth = -np.partition(-pr, k - 1, axis=-1)[..., k - 1 : k]   # (..., 1) the k-th largest
    out = np.where(pr >= kth, pr, 0.0)
    return out / out.sum(axis=-1, keepdims=True)


def top_p_filter(probs: ArrayLike, top_p: float) -> NDArray[np.float64]:
    """Keep x iff the mass strictly more probable than x is < top_p (the crossing token and its ties kept); renormalise.

    Computed as a threshold: walk the probabilities in descending order, count the prefix whose mass before
    it is still below top_p - TOP_P_TOL (at least one), and keep every token at least as probable as its last.
    """
    pr = _as_float_array(probs, "probs")
    tp = check_top_p(top_p)
    pr = pr / pr.sum(axis=-1, keepdims=True)
    if tp == TOP_P_OFF:
        return pr
    sorted_p = -np.sort(-pr, axis=-1)                 # (..., V) descending
    mass = np.cumsum(sorted_p, axis=-1)[..., :-1]     # (..., V-1) mass of the first i + 1
    n_keep = 1 + (mass < tp - TOP_P_TOL).sum(axis=-1, keepdims=True)   # (..., 1) in 1..V
    threshold = np.take_along_axis(sorted_p, n_keep - 1, axis=-1)      # (..., 1)
    out = np.where(pr >= threshold, pr, 0.0)
    return out / out.sum(axis=-1, keepdims=True)


def sampling_distribution(
    logits: ArrayLike, temperature: float = 1.0, top_k: int = TOP_K_OFF, top_p: float = TOP_P_OFF
) -> NDArray[np.float64]:
    """The law a sampler really draws from: top_p(top_k(softmax(z / T))); one-hot argmax at T = 0."""
    check_top_k(top_k)
    check_top_p(top_p)
    probs = apply_temperature(logits, temperature)
    return top_p_filter(top_k_filter(probs, top_k), top_p)
