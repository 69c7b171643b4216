"""Two positions: the accept/resample rule applied position by position keeps the target's joint law.

Target and draft are first-order Markov chains over V tokens: p1(x1), P2(x2 | x1) and q1, Q2. One
speculative round drafts x1 ~ q1, x2 ~ Q2(. | x1) and verifies left to right. The joint law of the
first two emitted tokens is enumerated path by path (not through ``emitted_distribution``); the
per-token pieces, min(1, p/q) and the residual, are the ones in ``rejection``.
"""

from __future__ import annotations

import itertools

import numpy as np
from numpy.typing import NDArray

from specdec_core.rejection import acceptance_probability, acceptance_rate, check_pair, residual_distribution


def markov_example(v: int = 3, seed: int = 0, conc: float = 1.0) -> tuple[NDArray, NDArray, NDArray, NDArray]:
    """(p1, P2, q1, Q2): target start law and transition rows, and a draft whose rows are Dir(conc) draws."""
    if not 2 <= v <= 6:
        raise ValueError(f"the two-position example takes a vocabulary of 2 to 6 tokens; got {v!r}")
    rng = np.random.default_rng(seed)
    p1, q1 = rng.dirichlet(np.ones(v)), rng.dirichlet(np.full(v, conc))
    P2 = rng.dirichlet(np.ones(v), size=v)                 # (V, V): row x1 is p(. | x1)
    Q2 = rng.dirichlet(np.full(v, conc), size=v)           # (V, V): row x1 is q(. | x1)
    return p1, P2, q1, Q2


def _first_token_next_round(P2: NDArray, Q2: NDArray, prefix: int) -> NDArray:
    """Law of the first token a fresh round emits after `prefix`: enumerate z ~ Q2[prefix], keep or resample."""
    p, q = P2[prefix], Q2[prefix]
    out = np.zeros(p.size)
    r, keep = residual_distribution(p, q), acceptance_probability(p, q)  # (V,), (V,)
    for z in np.flatnonzero(q > 0):
        out[z] += q[z] * keep[z]
        out += q[z] * (1.0 - keep[z]) * r
    return out


def joint_emitted_two_positions(p1: NDArray, P2: NDArray, q1: NDArray, Q2: NDArray) -> NDArray:
    """J[t1, t2] = P(first two emitted tokens = t1, t2) by enumerating every draft and accept/reject path."""
    check_pair(p1, q1)
    check_pair(P2, Q2)
    v = p1.size
    joint = np.zeros((v, v))                               # (V, V)
    r1, keep_1 = residual_distribution(p1, q1), acceptance_probability(p1, q1)   # (V,), (V,)
    keep_2 = acceptance_probability(P2, Q2)                # (V, V): row x1 is min(1, P2/Q2)
    for x1, x2 in itertools.product(range(v), range(v)):
        draft = q1[x1] * Q2[x1, x2]                        # P(draft proposes x1, x2)
        if draft == 0.0:
            continue
        keep1, keep2 = keep_1[x1], keep_2[x1, x2]
        # both kept: emit x1, x2 (a bonus token follows, beyond the two we track)
        joint[x1, x2] += draft * keep1 * keep2
        # x1 kept, x2 rejected: emit x1, then a correction from (P2[x1] - Q2[x1])+
        joint[x1, :] += draft * keep1 * (1.0 - keep2) * residual_distribution(P2[x1], Q2[x1])
        # x1 rejected: emit y ~ r1; the round ends and the next round supplies the second token
        for y in np.flatnonzero(r1 > 0):
            joint[y, :] += draft * (1.0 - keep1) * r1[y] * _first_token_next_round(P2, Q2, y)
    return joint


def target_joint(p1: NDArray, P2: NDArray) -> NDArray:
    """p(t1, t2) = p1(t1) P2(t2 | t1)."""
    return p1[:, None] * P2


def position_alphas(p1: NDArray, P2: NDArray, q1: NDArray, Q2: NDArray) -> tuple[float, NDArray]:
    """alpha_1 = sum min(p1, q1), and alpha_2(x1) = sum min(P2[x1], Q2[x1]) for each accepted prefix x1."""
    return float(acceptance_rate(p1, q1)), np.asarray(acceptance_rate(P2, Q2))   # batched over the rows x1


def two_position_check(v: int = 3, seed: int = 0, conc: float = 0.5) -> dict[str, NDArray | float]:
    """Everything the page shows for one Markov example: the three joint laws, alpha_1, alpha_2(x1), max error."""
    p1, P2, q1, Q2 = markov_example(v, seed, conc)
    target, emitted = target_joint(p1, P2), joint_emitted_two_positions(p1, P2, q1, Q2)
    alpha_1, alpha_2 = position_alphas(p1, P2, q1, Q2)
    return {"target": target, "emitted": emitted, "draft": target_joint(q1, Q2), "alpha_1": alpha_1,
            "alpha_2": alpha_2, "max_error": float(np.abs(emitted - target).max())}
