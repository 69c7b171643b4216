"""Vectorised Monte Carlo of speculative steps, independent of the closed forms it is checked against."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specdec_core.validate import check_alphas

MAX_STEPS = 10_000_000


def simulate_tokens_per_step(
    alphas: ArrayLike, n_steps: int, seed: int | np.random.Generator | None = 0, chunk: int = 1_000_000
) -> NDArray[np.int64]:
    """Tokens emitted in each of n_steps steps: 1 + (length of the accepted prefix of Bernoulli(alpha_j) draws).

    Position j is accepted when its uniform draw is below alpha_j; the step emits the accepted prefix
    plus one target token (the correction, or the bonus when all gamma drafts are accepted).
    """
    a = check_alphas(alphas)
    if not isinstance(n_steps, (int, np.integer)) or not 1 <= n_steps <= MAX_STEPS:
        raise ValueError(f"n_steps must be an integer in [1, {MAX_STEPS:,}]; got {n_steps!r}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    out = np.empty(n_steps, dtype=np.int64)
    for start in range(0, n_steps, chunk):
        n = min(chunk, n_steps - start)
        if a.size == 0:
            out[start:start + n] = 1
            continue
        accepted = rng.random((n, a.size), dtype=np.float64) < a           # (n, gamma)
        # length of the all-True prefix = index of the first False (gamma if none)
        first_reject = np.where(accepted.all(axis=1), a.size, np.argmin(accepted, axis=1))
        out[start:start + n] = first_reject + 1
    return out


def summarise(tokens: NDArray[np.int64]) -> dict[str, float]:
    """Mean, median (P50) and P99 of tokens per step."""
    if tokens.size == 0:
        raise ValueError("tokens must hold at least one step")
    return {
        "mean": float(tokens.mean()),
        "p50": float(np.percentile(tokens, 50)),
        "p99": float(np.percentile(tokens, 99)),
    }
