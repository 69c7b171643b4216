"""The probe's maths: a stack of linear layers on T tokens under the roofline, its knee, and a fitted knee
that says when it should not be trusted. Pure numpy; the measuring lives in gpu_demo.

    t(T) = max(2 n T / peak, (n x weight_bytes + T x act_bytes) / bandwidth)      model
    K    = peak x weight_bytes / (2 x bandwidth)                                   model knee, tokens
    t(T) ~ t0 x max(1, T / K)                                                      fitted to measurements
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray


def linear_stack_time(n_weights: float, tokens: ArrayLike, weight_bytes: float, peak_flops: float,
                      bandwidth: float, act_bytes_per_token: float = 0.0) -> NDArray[np.float64]:
    """A stack of linears on T tokens: max(2 n T / peak, (n x weight_bytes + T x act_bytes) / bandwidth)."""
    if min(n_weights, weight_bytes, peak_flops, bandwidth) <= 0:
        raise ValueError("n_weights, weight_bytes, peak_flops and bandwidth must all be > 0")
    t = np.asarray(tokens, dtype=np.float64)
    compute = 2.0 * n_weights * t / peak_flops
    return np.maximum(compute, (n_weights * weight_bytes + t * act_bytes_per_token) / bandwidth)


def knee_tokens(peak_flops: float, bandwidth: float, weight_bytes: float) -> float:
    """Tokens per pass where weight reads and compute take equal time: peak x weight_bytes / (2 x bandwidth)."""
    return peak_flops * weight_bytes / (2.0 * bandwidth)


def _knee_curve(t: NDArray[np.float64], ks: NDArray[np.float64], y: NDArray[np.float64]):
    """For each K: log t0 and the log-space residuals of t(T) = t0 max(1, T / K); (K,) and (K, N)."""
    shape_term = np.log(np.maximum(1.0, t[None, :] / ks[:, None]))              # (K, N)
    log_t0 = (y[None, :] - shape_term).mean(axis=1)                             # (K,)
    return log_t0, y[None, :] - shape_term - log_t0[:, None]                    # (K,), (K, N)


def fit_knee(tokens: ArrayLike, times: ArrayLike, n_grid: int = 400) -> tuple[float, float]:
    """Fit t(T) = t0 x max(1, T / K) in log space by a grid over K; returns (K, t0). K >= max T: no knee seen."""
    t = np.asarray(tokens, dtype=np.float64)
    y = np.log(np.asarray(times, dtype=np.float64))
    if t.shape != y.shape or t.size < 2 or np.any(t <= 0) or not np.all(np.isfinite(y)):
        raise ValueError("need at least two positive token counts with positive, finite times")
    ks = np.geomspace(t.min() / 2.0, t.max() * 2.0, n_grid)                      # (K,)
    log_t0, resid = _knee_curve(t, ks, y)
    best = int(np.argmin((resid**2).sum(axis=1)))
    return float(ks[best]), float(np.exp(log_t0[best]))


@dataclass(frozen=True)
class KneeFit:
    """A fitted knee with what it rests on; ``reliable`` is False, with ``reason`` saying why, when it is a guess."""

    knee: float            # tokens per pass, K of t0 max(1, T / K)
    t0: float              # seconds per pass on the flat part
    rms_log: float         # root-mean-square log residual (0.1 ~ a 10% typical miss)
    n_points: int
    below: int             # measured token counts at or below the knee
    above: int             # measured token counts above it
    reached: bool          # the knee lies inside the measured range
    reliable: bool
    reason: str = ""


MIN_KNEE_POINTS = 5        # token counts a knee fit needs before it is trusted
MIN_SIDE_POINTS = 2        # measured points needed on each side of a knee that was reached
MAX_KNEE_RMS = 0.15        # log residual above which flat-then-linear does not describe the times


def knee_fit(tokens: ArrayLike, times: ArrayLike) -> KneeFit:
    """fit_knee plus its quality: unreliable with fewer than 5 points, fewer than 2 on a side of a knee
    inside the range, or a root-mean-square log residual above 0.15."""
    t = np.asarray(tokens, dtype=np.float64)
    knee, t0 = fit_knee(t, times)
    y = np.log(np.asarray(times, dtype=np.float64))
    rms = float(np.sqrt(np.mean(_knee_curve(t, np.array([knee]), y)[1] ** 2)))
    below, above = int(np.sum(t <= knee)), int(np.sum(t > knee))
    reached = knee < t.max()
    reasons = []
    if t.size < MIN_KNEE_POINTS:
        reasons.append(f"only {t.size} token counts were timed (a fit needs {MIN_KNEE_POINTS})")
    if reached and min(below, above) < MIN_SIDE_POINTS:
        side = "above" if above < below else "at or below"
        reasons.append(f"only {min(below, above)} measured point(s) lie {side} the knee")
    if rms > MAX_KNEE_RMS:
        reasons.append(f"the times miss the flat-then-linear shape by {rms:.0%} (log rms; over "
                       f"{MAX_KNEE_RMS:.0%} is a poor fit)")
    return KneeFit(knee, t0, rms, int(t.size), below, above, bool(reached), not reasons, "; ".join(reasons))
