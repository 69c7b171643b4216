"""EAGLE-2's dynamic draft tree: grown by the draft's path probability, cut to the nodes worth verifying here.

Expansion: the root's top-k children are scored by their draft probability; at each later depth the k best-scored
nodes of the depth before (a beam) each propose their top-k children, scored by the product of the draft's
probabilities along the path (a sum of logs). Reranking: the N best-scored nodes of every depth form the tree. A
child's score never exceeds its parent's, so the best N hold their own parents (ties go to the shallower node).

EAGLE-2 (Li et al., 2024) found the score well calibrated: a node's path is accepted with about its score, so a
tree of the N best nodes yields about 1 + sum of their scores tokens per pass. N is chosen where that, over the
round's cost d x c + v(N + 1), is largest, with v(T) this device's verify cost of T tokens in target steps and d the
draft passes made. Growth stops before `depth` when no deeper tree could beat the best cut of the tree so far
(worth_growing): a node's children's draft probabilities sum to at most 1, so each further depth adds under a beam
node at most its own score, spread over its descendants there.
The children are the draft's top choices, deterministic given the path: verification divides by a one-hot q,
which keeps the target's law exact (gpu_demo.tree_decode's recursive rejection, one candidate at a time).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specdec_core.trees import MAX_DEPTH, MAX_NODES, MAX_RANK, Tree
from specdec_core.validate import check_count

MAX_BEAM = MAX_RANK


@dataclass(frozen=True)
class DynamicTree:
    """How to grow a dynamic tree: top_k children per expanded node and k nodes expanded per depth, `depth`
    draft passes, at most `budget` nodes verified; v: v(T) for T = 1, 2, ... (empty: verify `budget` nodes);
    c: one draft pass's cost in target steps."""

    top_k: int = 4
    depth: int = 5
    budget: int = 16
    v: tuple[float, ...] = ()
    c: float = 0.0

    def __post_init__(self) -> None:
        check_count(self.top_k, "top_k", 1, MAX_BEAM)
        check_count(self.depth, "depth", 0, MAX_DEPTH)
        check_count(self.budget, "budget", 0, MAX_NODES)
        if any(not np.isfinite(x) or x <= 0 for x in self.v) or not (np.isfinite(self.c) and self.c >= 0):
            raise ValueError("v(T) must be positive and finite, and c finite and >= 0")
        if self.v and len(self.v) < self.budget + 1:
            raise ValueError(f"v(T) must cover T = 1..budget + 1 = {self.budget + 1}; got {len(self.v)} values")

    def limited(self, max_depth: int) -> DynamicTree:
        """The same rule with at most max_depth draft passes (never draft past the requested length)."""
        return replace(self, depth=max(0, min(self.depth, max_depth)))


def _ratios(scores: NDArray[np.float64], spec: DynamicTree, drafted: int) -> NDArray[np.float64]:
    """(1 + sum of the N largest scores) / (drafted c + v(N + 1)) for N = 0..min(budget, len(scores))."""
    s = np.sort(scores)[::-1][: spec.budget]  # (<= budget,) descending
    n = np.arange(s.size + 1)
    tokens = 1.0 + np.concatenate([[0.0], np.cumsum(s)])  # (N + 1,)
    return tokens / (drafted * spec.c + np.asarray(spec.v)[n])  # v(N + 1) is v[N]


def best_count(scores: ArrayLike, spec: DynamicTree, drafted: int | None = None) -> int:
    """N in 0..budget maximising (1 + sum of the N largest scores) / (drafted c + v(N + 1)); budget without v.

    `drafted` (default: spec.depth) is the draft passes made to grow the tree; they are paid whatever N is, N = 0
    (a plain step that verifies no node) included: leaving them out there would throw a grown tree away whenever
    it does not repay its own drafting, which it no longer can."""
    s = np.asarray(scores, dtype=np.float64)
    if not spec.v:
        return int(min(s.size, spec.budget))
    return int(np.argmax(_ratios(s, spec, spec.depth if drafted is None else drafted)))  # ties: the smaller tree


def worth_growing(scores: ArrayLike, beam: ArrayLike, spec: DynamicTree, drafted: int) -> bool:
    """Whether L more draft passes (1 <= L <= depth - drafted) could give a cut better than the best one now.

    Bound: under each beam node (score s_b) the descendants at one later depth have scores summing to at most s_b,
    each at most s_b, so any N of the grown nodes score at most the N best of the nodes now plus L copies of every
    s_b. True without v (grow to `depth`), and whenever that bound beats the best ratio of best_count now."""
    if not spec.v:
        return drafted < spec.depth
    s, b = np.asarray(scores, dtype=np.float64), np.asarray(beam, dtype=np.float64)
    now = float(np.max(_ratios(s, spec, drafted)))
    return any(float(np.max(_ratios(np.concatenate([s, np.tile(b, L)]), spec, drafted + L))) > now
               for L in range(1, spec.depth - drafted + 1))


def rerank(parent: ArrayLike, log_score: ArrayLike, depth: ArrayLike, n: int) -> list[int]:
    """The n best-scored candidates whose parents are kept too, in tree order (depth, then score): indices.

    parent[i] is -1 (the root) or an earlier candidate; a candidate whose parent is not kept is skipped."""
    par, score, dep = np.asarray(parent), np.asarray(log_score, dtype=np.float64), np.asarray(depth)
    order = np.lexsort((dep, -score))  # best score first, the shallower first among equals
    kept: set[int] = set()
    for i in order:
        if len(kept) == n:
            break
        if par[i] < 0 or int(par[i]) in kept:
            kept.add(int(i))
    return sorted(kept, key=lambda i: (dep[i], -score[i], i))


def tree_of(parent: ArrayLike, chosen: list[int]) -> tuple[Tree, NDArray[np.int64]]:
    """The Tree of the chosen candidates (in tree order) and, per node, its candidate index: ranks 1..b per parent
    in the chosen order."""
    par = np.asarray(parent)
    index = {c: j for j, c in enumerate(chosen)}
    count: dict[int, int] = {}
    parents, ranks = [], []
    for c in chosen:
        p = -1 if par[c] < 0 else index[int(par[c])]
        count[p] = count.get(p, 0) + 1
        parents.append(p)
        ranks.append(count[p])
    return Tree(tuple(parents), tuple(ranks)), np.asarray(chosen, dtype=np.int64)
