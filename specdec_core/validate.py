"""Input checks shared by the core: each raises ValueError that names the allowed range."""

from __future__ import annotations

import numbers

import numpy as np
from numpy.typing import ArrayLike, NDArray


def _show(x: object, limit: int = 8) -> str:
    """A value for a message: arrays as plain lists ([nan, 0.5], never array([...]) reprs), long ones cut."""
    if isinstance(x, (np.ndarray, list, tuple)):
        flat = np.asarray(x, dtype=object).ravel().tolist()
        items = [f"{v:g}" if isinstance(v, float) else str(v) for v in flat[:limit]]
        return "[" + ", ".join(items) + (", ..." if len(flat) > limit else "") + "]"
    return repr(x)


def _as_float_array(x: ArrayLike, name: str) -> NDArray[np.float64]:
    """Convert to a float64 array, refusing non-numeric and non-finite input."""
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a number or an array of numbers; got {_show(x)}") from exc
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite; got {_show(x)}")
    return arr


def check_alpha(alpha: ArrayLike, name: str = "alpha") -> NDArray[np.float64]:
    """alpha in [0, 1] (an acceptance probability)."""
    arr = _as_float_array(alpha, name)
    if np.any(arr < 0.0) or np.any(arr > 1.0):
        raise ValueError(f"{name} must be in [0, 1]; got {alpha!r}")
    return arr


def check_gamma(gamma: ArrayLike, name: str = "gamma") -> NDArray[np.int64]:
    """gamma an integer >= 0 (the draft length); integral floats such as 3.0 are accepted."""
    if isinstance(gamma, bool) or (isinstance(gamma, np.ndarray) and gamma.dtype == bool):
        raise ValueError(f"{name} must be an integer >= 0; got {gamma!r}")
    if isinstance(gamma, numbers.Integral):
        arr = np.asarray(int(gamma), dtype=np.int64)
    else:
        farr = _as_float_array(gamma, name)
        if np.any(farr != np.round(farr)):
            raise ValueError(f"{name} must be an integer >= 0; got {gamma!r}")
        arr = farr.astype(np.int64)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be an integer >= 0; got {gamma!r}")
    return arr


def check_c(c: ArrayLike, name: str = "c") -> NDArray[np.float64]:
    """c >= 0 (draft-token cost in target decode steps)."""
    arr = _as_float_array(c, name)
    if np.any(arr < 0.0):
        raise ValueError(f"{name} must be >= 0; got {c!r}")
    return arr


def check_v(v: ArrayLike, name: str = "v") -> NDArray[np.float64]:
    """v > 0 (verification cost in target decode steps)."""
    arr = _as_float_array(v, name)
    if np.any(arr <= 0.0):
        raise ValueError(f"{name} must be > 0; got {v!r}")
    return arr


def check_alphas(alphas: ArrayLike, name: str = "alphas") -> NDArray[np.float64]:
    """A 1-D sequence of conditional acceptance rates, each in [0, 1]; may be empty (gamma = 0)."""
    arr = check_alpha(alphas, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D sequence of rates in [0, 1]; got shape {arr.shape}")
    return arr


def check_distribution(p: ArrayLike, name: str = "p", atol: float = 1e-9) -> NDArray[np.float64]:
    """p non-negative along the last axis and summing to 1 within atol."""
    arr = _as_float_array(p, name)
    if arr.ndim == 0 or arr.shape[-1] == 0:
        raise ValueError(f"{name} must be a non-empty vector of probabilities; got {p!r}")
    if np.any(arr < 0.0):
        raise ValueError(f"{name} must be non-negative; got a minimum of {arr.min():.3g}")
    with np.errstate(over="ignore"):
        sums = arr.sum(axis=-1)
    if not np.all(np.isfinite(sums)):
        raise ValueError(f"{name} must sum to 1 within {atol:g}; its entries are too large to add up")
    if np.any(np.abs(sums - 1.0) > atol):
        worst = float(np.max(np.abs(sums - 1.0)))
        raise ValueError(f"{name} must sum to 1 within {atol:g}; it is off by {worst:.3g}")
    return arr


def scalar_or_array(arr: NDArray) -> float | NDArray:
    """Return a Python float for 0-d results and the array otherwise."""
    return float(arr) if np.ndim(arr) == 0 else arr


def check_count(x: int, name: str, lo: int, hi: int) -> int:
    """An integer (not a bool) in [lo, hi], or ValueError naming the range."""
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or not lo <= x <= hi:
        raise ValueError(f"{name} must be an integer in [{lo}, {hi:,}]; got {x!r}")
    return int(x)
