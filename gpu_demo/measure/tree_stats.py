"""Per-round statistics of token-tree decoding, read from TreeRoundEvents; the maths is specdec_core.trees'.

specdec_core.trees models a tree with per-rank rates a_r (siblings exclude each other). Here a_r(d) is counted
from the events' (shape, accepted path), per depth and pooled (:func:`specdec_core.trees.rank_counts`), and E[N]
is predicted with rates per depth (:func:`specdec_core.trees.expected_length_by_depth`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from gpu_demo.tree_decode import TreeRoundEvent
from specdec_core.trees import Tree, expected_length_by_depth, rank_counts

__all__ = ["expected_length_by_depth", "measured_rank_rates"]


def measured_rank_rates(events: Sequence[TreeRoundEvent], max_rank: int, max_depth: int
                        ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kept, reached, pooled) per-rank acceptance counted over the events' rounds (specdec_core.trees.rank_counts)."""
    return rank_counts(((Tree(tuple(e.parent), tuple(e.rank)), e.path) for e in events), max_rank, max_depth)
