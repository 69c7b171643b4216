"""The best token tree for a node budget, by dynamic programming over (depth left, nodes left, sibling rank).

Under positional acceptance (specdec_core.trees: a_r for the rank-r child, the same at every depth and path),
a tree's E[N] = 1 + sum_j pi_j. The greedy placement (trees.greedy_tree, a static tree in the spirit of EAGLE-2's,
which re-ranks by the draft's confidence in each context) is the best tree of its size when a_1 >= a_2 >= ...:
a node's value never exceeds its parent's or its elder sibling's, so the budget's best nodes form a valid tree.
When a later rank accepts more (a real pair can do this: p = [0, 1], q = [0.9, 0.1] drafted without replacement
gives a_1 = 0.1, a_2 = 0.9), greedy can miss it: a rank-r child needs ranks 1..r-1 beside it. The programme

    g(d, n) = best sum of path probabilities below a kept node with at most n nodes in at most d levels
            = K_1(d, n),   K_r(d, m) = max(0, max_{1 <= k <= m} [a_r (1 + g(d - 1, k - 1)) + K_{r+1}(d, m - k)])

(child r takes k nodes: itself and k - 1 below it; ranks are used in order) is exact for any rates.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specdec_core.trees import MAX_DEPTH, MAX_NODES, Tree, check_rates


def check_budget(budget: int) -> int:
    """A node budget: an integer in [0, MAX_NODES]."""
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or not 0 <= budget <= MAX_NODES:
        raise ValueError(f"node budget must be an integer in [0, {MAX_NODES}]; got {budget!r}")
    return int(budget)


def _programme(a: NDArray[np.float64], n: int, depth: int) -> NDArray[np.int64]:
    """choice[d, r, m]: nodes given to the rank-(r+1) child with m nodes left and d levels (0 = no child)."""
    R = a.size
    g = np.zeros((depth + 1, n + 1))                     # g[d, m]
    choice = np.zeros((depth + 1, R + 1, n + 1), dtype=np.int64)
    for d in range(1, depth + 1):
        K = np.zeros((R + 1, n + 1))                     # K[r, m]: ranks r+1..R still free; K[R] = 0
        for r in range(R - 1, -1, -1):
            for m in range(1, n + 1):
                k = np.arange(1, m + 1)                  # nodes for child r+1: itself + (k - 1) below
                vals = a[r] * (1.0 + g[d - 1, k - 1]) + K[r + 1, m - k]
                best = int(np.argmax(vals))
                if vals[best] > K[r, m - 1] + 1e-15 and vals[best] > 0.0:
                    K[r, m], choice[d, r, m] = vals[best], best + 1
                else:                                    # fewer nodes do as well: leave this one unused
                    K[r, m], choice[d, r, m] = K[r, m - 1], -1
        g[d] = K[0]
    return choice


def optimal_tree(rates: ArrayLike, budget: int, max_depth: int = MAX_DEPTH) -> Tree:
    """The tree of at most `budget` nodes and depth <= max_depth with the largest E[N] = 1 + sum_j pi_j."""
    a = check_rates(rates)
    n = check_budget(budget)
    depth = int(min(max(int(max_depth), 0), MAX_DEPTH, n))
    choice = _programme(a, n, depth)
    parent: list[int] = []
    rank: list[int] = []

    def place(par: int, d: int, m: int) -> None:
        r = 0
        while r < a.size and m > 0 and d > 0:
            k = int(choice[d, r, m])
            if k < 0:                                     # the best with m nodes uses fewer: look at m - 1
                m -= 1
                continue
            if k == 0:
                return
            j = len(parent)
            parent.append(par)
            rank.append(r + 1)
            place(j, d - 1, k - 1)
            m -= k
            r += 1

    place(-1, depth, n)
    return _breadth_first(parent, rank)


def _breadth_first(parent: list[int], rank: list[int]) -> Tree:
    """The same tree renumbered breadth first, siblings by rank (parents still come first)."""
    kids: dict[int, list[int]] = {}
    for j, par in enumerate(parent):
        kids.setdefault(par, []).append(j)
    order, frontier = [], [-1]
    while frontier:
        nxt = []
        for node in frontier:
            for child in sorted(kids.get(node, []), key=lambda c: rank[c]):
                order.append(child)
                nxt.append(child)
        frontier = nxt
    new = {old: i for i, old in enumerate(order)}
    return Tree(tuple(new[parent[o]] if parent[o] >= 0 else -1 for o in order), tuple(rank[o] for o in order))


MAX_DEPTH_FACTOR = 2.0   # per-level acceptance factor: past 2, a rate of 0.5 reaches 1 by the second level


def expected_length_with_depth_decay(tree: Tree, rates: ArrayLike, decay: float) -> float:
    """E[N] = 1 + sum_j prod_{i in path(j)} clip(a_rank(i) decay^(depth(i) - 1), 0, 1): acceptance scaled per level.

    decay = 1 is positional acceptance (trees.expected_accepted_length); below 1 deeper positions accept less, above
    1 they accept more (a draft conditioned on accepted tokens can agree more once a phrase is under way). The
    factor is bounded to [0, MAX_DEPTH_FACTOR] and each scaled rate is clipped to [0, 1].
    """
    a = check_rates(rates)
    if not 0.0 <= float(decay) <= MAX_DEPTH_FACTOR:
        raise ValueError(f"depth decay must be in [0, {MAX_DEPTH_FACTOR:g}]; got {decay!r}")
    pi = np.zeros(tree.n_nodes)
    depth = tree.depth
    for j, (par, r) in enumerate(zip(tree.parent, tree.rank)):
        step = min(1.0, (a[r - 1] if r <= a.size else 0.0) * float(decay) ** (int(depth[j]) - 1))
        pi[j] = step * (1.0 if par < 0 else pi[par])
    return 1.0 + float(pi.sum())
