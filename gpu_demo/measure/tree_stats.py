"""Per-round statistics of token-tree decoding: measured per-rank acceptance, and E[N] predicted from it.

specdec_core.trees models a tree with per-rank rates a_r, the same at every depth (siblings exclude each other). Here
a_r(d) is counted from TreeRoundEvents, per depth and pooled, and E[N] = 1 + sum_j pi_j is evaluated with rates
per depth (with one row per depth equal to the pooled rates it is specdec_core.trees.expected_accepted_length).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpu_demo.tree_decode import TreeRoundEvent
from specdec_core.trees import Tree


def measured_rank_rates(events: Sequence[TreeRoundEvent], max_rank: int, max_depth: int
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """a_r(d) = P(the rank-r child is kept | its parent at depth d - 1 was reached and has >= r children).

    Returns (kept, reached, pooled): kept and reached are (max_depth, max_rank) counts, pooled the per-rank rates
    over all depths (NaN where rank r was never offered). Siblings exclude each other, as in specdec_core.trees.
    """
    kept = np.zeros((max_depth, max_rank), dtype=np.int64)
    reached = np.zeros((max_depth, max_rank), dtype=np.int64)
    for e in events:
        visited = [-1] + e.path
        for d, node in enumerate(visited):
            b = sum(1 for par in e.parent if par == node)
            if b == 0 or d >= max_depth:
                continue
            reached[d, : min(b, max_rank)] += 1
            if d < len(e.path) and e.rank[e.path[d]] <= max_rank:
                kept[d, e.rank[e.path[d]] - 1] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled = np.where(reached.sum(0) > 0, kept.sum(0) / np.maximum(reached.sum(0), 1), np.nan)
    return kept, reached, pooled


def expected_length_by_depth(tree: Tree, rates: np.ndarray) -> float:
    """E[N] = 1 + sum_j pi_j with pi_j = a_{rank j}(depth j) pi_parent: specdec_core.trees' sum with rates per depth
    (rates (D, R); NaN or a missing depth or rank counts as 0)."""
    a = np.nan_to_num(np.asarray(rates, dtype=np.float64))
    pi = np.zeros(tree.n_nodes)
    for j, (par, rk, d) in enumerate(zip(tree.parent, tree.rank, tree.depth)):
        rate = a[d - 1, rk - 1] if d - 1 < a.shape[0] and rk - 1 < a.shape[1] else 0.0
        pi[j] = rate * (1.0 if par < 0 else pi[par])
    return 1.0 + float(pi.sum())
