"""From measured decoding rounds (plain lists) to the algebra's inputs: alpha_j, c, v, and what they predict.

Pure numpy. The live page and tests hand in per-round values taken from the decoder's events
(drafted count k, accepted count n, emitted count, draft and verify seconds) and the baseline's
per-token seconds; nothing here times anything.

Conventions: c = (draft seconds per drafted token) / (baseline seconds per token) and
v = (verify seconds per round) / (baseline seconds per token), both in target decode steps, as in
``specdec_core.algebra``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from specdec_core import algebra
from specdec_core.validate import check_gamma


def _ints(x: Sequence[int], name: str) -> NDArray[np.int64]:
    """A 1-D array of integers >= 0 from a plain list."""
    arr = np.asarray(list(x), dtype=np.int64).reshape(-1)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be integers >= 0; got {list(x)!r}")
    return arr


def _seconds(x: Sequence[float], name: str) -> NDArray[np.float64]:
    """A 1-D array of finite times >= 0 from a plain list."""
    arr = np.asarray(list(x), dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{name} must be finite times >= 0 s; got {list(x)!r}")
    return arr


def positional_counts(
    drafted: Sequence[int], accepted: Sequence[int], gamma: int
) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """(reached_j, accepted_j) for j = 1..gamma: position j is reached when k >= j and n >= j - 1.

    Rounds are (k drafted, n accepted) with 0 <= n <= k; accepted_j counts reached rounds with n >= j.
    """
    g = int(check_gamma(gamma))
    k, n = _ints(drafted, "drafted counts"), _ints(accepted, "accepted counts")
    if k.shape != n.shape or np.any(n > k):
        raise ValueError("each round needs 0 <= accepted <= drafted, with one entry per round in both lists")
    j = np.arange(1, g + 1)[:, None]  # (g, 1)
    reached = (k[None, :] >= j) & (n[None, :] >= j - 1)  # (g, R)
    acc = reached & (n[None, :] >= j)
    return reached.sum(axis=1), acc.sum(axis=1)


def alpha_by_position(drafted: Sequence[int], accepted: Sequence[int], gamma: int) -> NDArray[np.float64]:
    """alpha_j = accepted_j / reached_j, j = 1..gamma; NaN where position j was never reached."""
    reached, acc = positional_counts(drafted, accepted, gamma)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(reached > 0, acc / np.maximum(reached, 1), np.nan)


def pooled_alpha(drafted: Sequence[int], accepted: Sequence[int], gamma: int) -> float:
    """Constant-alpha fit (maximum likelihood): sum_j accepted_j / sum_j reached_j; NaN if nothing was reached."""
    reached, acc = positional_counts(drafted, accepted, gamma)
    total = int(reached.sum())
    return float(acc.sum() / total) if total else math.nan


def fill_unreached(alphas: Sequence[float]) -> NDArray[np.float64]:
    """alpha_j with NaN (never reached) replaced by 0: such a position adds nothing to E[N] anyway."""
    a = np.asarray(list(alphas), dtype=np.float64)
    return np.where(np.isnan(a), 0.0, a)


def accepted_length_counts(drafted: Sequence[int], emitted: Sequence[int], gamma: int) -> NDArray[np.int64]:
    """Counts of N = emitted tokens per round, N = 1..gamma+1, over full rounds (k == gamma) only."""
    g = int(check_gamma(gamma))
    k, e = _ints(drafted, "drafted counts"), _ints(emitted, "emitted counts")
    full = e[k == g]
    if np.any((full < 1) | (full > g + 1)):
        raise ValueError(f"emitted tokens per full round must be in [1, {g + 1}]")
    return np.bincount(full - 1, minlength=g + 1).astype(np.int64)


def acceptance_probability(p_x: Sequence[float], q_x: Sequence[float]) -> NDArray[np.float64]:
    """min(1, p(x)/q(x)) per drafted token; 0 where q(x) = 0 (the exact rule rejects there)."""
    p, q = np.asarray(list(p_x), dtype=np.float64), np.asarray(list(q_x), dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(q > 0, np.minimum(1.0, p / np.where(q > 0, q, 1.0)), 0.0)


def per_token_seconds(seconds: Sequence[float], tokens: int) -> float:
    """Total seconds / tokens (NaN when tokens == 0)."""
    s = _seconds(seconds, "seconds")
    return float(s.sum() / tokens) if tokens > 0 else math.nan


@dataclass(frozen=True)
class Measured:
    """Everything the live panel shows, from one speculative run and its autoregressive baseline."""

    gamma: int
    rounds: int
    tokens: int
    alphas: NDArray[np.float64]  # alpha_j, NaN where unreached
    reached: NDArray[np.int64]
    alpha_const: float  # pooled fit
    length_counts: NDArray[np.int64]  # N = 1..gamma+1, full rounds only
    pmf_const: NDArray[np.float64]  # accepted_length_pmf(alpha_const, gamma)
    pmf_positional: NDArray[np.float64]  # accepted_length_pmf_positional(alpha_j)
    tokens_per_pass: float
    c: float
    v: float
    spec_tokens_per_s: float
    base_tokens_per_s: float
    predicted_speedup: float  # speedup_positional(alpha_j, c, v)
    predicted_speedup_const: float  # speedup(alpha_const, gamma, c, v)
    measured_speedup: float  # baseline s/token over speculative s/token
    expected_tokens: float  # E[N] from alpha_j
    t_target_s: float = math.nan  # baseline seconds per target step (event time): the unit of c and v


def summarise(
    gamma: int,
    drafted: Sequence[int],
    accepted: Sequence[int],
    emitted: Sequence[int],
    draft_s: Sequence[float],
    verify_s: Sequence[float],
    spec_wall_s: Sequence[float],
    base_step_s: Sequence[float],
    base_wall_s: Sequence[float],
) -> Measured:
    """The algebra on measured rates and costs.

    c = mean draft s per drafted token / baseline s per token; v = mean verify s per round / baseline s per
    token (event times); speeds use each run's wall time per token (time inside the decoder, page excluded).
    """
    g = int(check_gamma(gamma))
    k = _ints(drafted, "drafted counts")
    e = _ints(emitted, "emitted counts")
    reached, _ = positional_counts(drafted, accepted, g)
    alphas = alpha_by_position(drafted, accepted, g)
    a_const = pooled_alpha(drafted, accepted, g)
    a_fill = fill_unreached(alphas)
    tokens, rounds = int(e.sum()), int(e.size)
    t_base = per_token_seconds(base_step_s, len(list(base_step_s)))
    n_drafted = int(k.sum())
    c = per_token_seconds(draft_s, n_drafted) / t_base if n_drafted and t_base > 0 else math.nan
    v = per_token_seconds(verify_s, rounds) / t_base if rounds and t_base > 0 else math.nan
    spec_tps = 1.0 / per_token_seconds(spec_wall_s, tokens) if tokens and sum(spec_wall_s) > 0 else math.nan
    n_base = len(list(base_wall_s))
    base_tps = 1.0 / per_token_seconds(base_wall_s, n_base) if n_base and sum(base_wall_s) > 0 else math.nan
    a_for_const = 0.0 if math.isnan(a_const) else a_const
    ok_costs = math.isfinite(c) and math.isfinite(v) and v > 0
    return Measured(
        gamma=g,
        rounds=rounds,
        tokens=tokens,
        alphas=alphas,
        reached=reached,
        alpha_const=a_const,
        length_counts=accepted_length_counts(drafted, emitted, g),
        pmf_const=algebra.accepted_length_pmf(a_for_const, g),
        pmf_positional=algebra.accepted_length_pmf_positional(a_fill),
        tokens_per_pass=tokens / rounds if rounds else math.nan,
        c=c,
        v=v,
        spec_tokens_per_s=spec_tps,
        base_tokens_per_s=base_tps,
        predicted_speedup=algebra.speedup_positional(a_fill, c, v) if ok_costs else math.nan,
        predicted_speedup_const=float(algebra.speedup(a_for_const, g, c, v)) if ok_costs else math.nan,
        measured_speedup=spec_tps / base_tps if math.isfinite(spec_tps) and math.isfinite(base_tps) else math.nan,
        expected_tokens=algebra.expected_tokens_positional(a_fill),
        t_target_s=t_base,
    )
