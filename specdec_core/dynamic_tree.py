"""EAGLE-2's dynamic draft tree: grown by the draft's path probability, cut to the nodes worth verifying here.

Expansion: the root's top-k children are scored by their draft probability; at each later depth the k best-scored
nodes of the depth before (a beam) each propose their top-k children, scored by the product of the draft's
probabilities along the path (a sum of logs). Reranking: the N best-scored nodes of every depth form the tree. A
child's score never exceeds its parent's, so the best N hold their own parents (ties go to the shallower node).

EAGLE-2 (Li et al., 2024) found the score well calibrated on its targets: a node's path is accepted with about its
score, so a tree of the N best nodes yields about 1 + sum of their scores tokens per pass. Where it is not, `accept`
maps a draft probability q to the measured chance a+(q) that the target keeps that child (bench/eagle_calibration.py:
at T = 1 a deterministic child x is kept with p(x), under the greedy rule when x = argmax p), and a path scores the
product of a+ along it. N is chosen where the expected tokens, over the round's cost d x c + v(N + 1), are largest,
with v(T) this device's verify cost of T tokens in target steps and d the draft passes made. Growth stops before
`depth` when no deeper tree could beat the best cut of the tree so far (worth_growing): a node's children's draft
probabilities sum to at most 1, so their scores sum to at most R = max_q a+(q) / q times the node's own (R = 1
without a map), and each further depth multiplies that bound by R. That bound is safe but assumes a child as sure as
its parent; with `expect` (the measured mean a+ of the draft's rank-r child) growth looks ahead by expectation
instead: a beam node's r-th child is expected to score its parent's score times expect[r].
The children are the draft's top choices, deterministic given the path: verification divides by a one-hot q,
which keeps the target's law exact (gpu_demo.tree_decode's recursive rejection, one candidate at a time).
"""

from __future__ import annotations

from collections.abc import Sequence
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
    c: one draft pass's cost in target steps; accept: the map a+(q) a path's score multiplies along it."""

    top_k: int = 4
    depth: int = 5
    budget: int = 16
    v: tuple[float, ...] = ()
    c: float = 0.0
    accept: tuple[tuple[float, ...], tuple[float, ...]] = ()  # (q knots, a+ at them); empty: a+(q) = q
    expect: tuple[float, ...] = ()  # mean a+ of the draft's rank-r child, r = 1..; given: grow by expectation

    def __post_init__(self) -> None:
        check_count(self.top_k, "top_k", 1, MAX_BEAM)
        check_count(self.depth, "depth", 0, MAX_DEPTH)
        check_count(self.budget, "budget", 0, MAX_NODES)
        if any(not np.isfinite(x) or x <= 0 for x in self.v) or not (np.isfinite(self.c) and self.c >= 0):
            raise ValueError("v(T) must be positive and finite, and c finite and >= 0")
        if self.v and len(self.v) < self.budget + 1:
            raise ValueError(f"v(T) must cover T = 1..budget + 1 = {self.budget + 1}; got {len(self.v)} values")
        if self.accept:
            if len(self.accept) != 2:
                raise ValueError("an acceptance map is a pair (q knots, a+ values)")
            check_accept_map(*self.accept)
            object.__setattr__(self, "accept", tuple(tuple(float(x) for x in a) for a in self.accept))  # hashable
        e = np.asarray(self.expect, dtype=np.float64)
        if e.size > MAX_BEAM or not np.all(np.isfinite(e)) or np.any((e < 0) | (e > 1)) or float(e.sum()) > 1 + 1e-9:
            raise ValueError(f"expect holds at most {MAX_BEAM} chances in [0, 1], one per child rank, summing to at "
                             "most 1")
        object.__setattr__(self, "expect", tuple(float(x) for x in e))

    def edge(self, q: ArrayLike) -> NDArray[np.float64]:
        """a+(q): the chance the target keeps a child the draft gave probability q (piecewise linear; q, no map)."""
        q = np.asarray(q, dtype=np.float64)
        return np.interp(q, *self.accept) if self.accept else q

    def log_edge(self, log_q: ArrayLike) -> NDArray[np.float64]:
        """log a+(q) from log q (log q itself without a map; -inf where a+ = 0)."""
        log_q = np.asarray(log_q, dtype=np.float64)
        if not self.accept:
            return log_q
        with np.errstate(divide="ignore"):
            return np.log(self.edge(np.exp(log_q)))

    def growth(self) -> float:
        """R = max(1, sup_q a+(q) / q): the children of a node score at most R times its own score in sum."""
        if not self.accept:
            return 1.0
        x, y = (np.asarray(a, dtype=np.float64) for a in self.accept)
        return float(max(1.0, np.max(y[1:] / x[1:])))  # a+ / q on a linear piece peaks at a knot (a+(0) = 0)

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

    Bound: under each beam node (score s_b) the descendants j depths later score at most R^j s_b in sum (R =
    spec.growth()), each at most s_b (a+ <= 1), so any n of them score at most the n largest of floor(R^j) copies of
    s_b and one of (R^j - floor(R^j)) s_b; the N best of the grown tree score at most the N best of the nodes now plus
    those for j = 1..L.
    True without v (grow to `depth`), and whenever that bound beats the best ratio of best_count now."""
    if not spec.v:
        return drafted < spec.depth
    s, b = np.asarray(scores, dtype=np.float64), np.asarray(beam, dtype=np.float64)
    now = float(np.max(_ratios(s, spec, drafted)))
    if spec.expect:
        return _expected_to_pay(s, b, spec, drafted, now)
    r, extra = spec.growth(), [s]
    for L in range(1, spec.depth - drafted + 1):
        whole, part = divmod(r ** L, 1.0)  # depth L's bound: int(whole) copies of each s_b and one of part x s_b
        extra += [np.tile(b, int(whole)), part * b if part > 1e-12 else b[:0]]
        if float(np.max(_ratios(np.concatenate(extra), spec, drafted + L))) > now:
            return True
    return False


def _expected_to_pay(scores: NDArray[np.float64], beam: NDArray[np.float64], spec: DynamicTree, drafted: int,
                     now: float) -> bool:
    """Whether some L more passes beat `now` on the expected tree: each beam node's rank-r child scores its score
    times expect[r], the top_k of a depth form the next beam (the growth rule run on expectations)."""
    e = np.zeros(spec.top_k)
    e[: min(spec.top_k, len(spec.expect))] = spec.expect[: spec.top_k]
    grown = scores
    for L in range(1, spec.depth - drafted + 1):
        new = (beam[:, None] * e[None, :]).ravel()  # (w * top_k,) expected child scores
        grown = np.concatenate([grown, new])
        if float(np.max(_ratios(grown, spec, drafted + L))) > now:
            return True
        beam = np.sort(new)[::-1][: spec.top_k]
    return False


def check_accept_map(q: Sequence[float], a: Sequence[float]) -> None:
    """An acceptance map: knots 0 = q_0 < q_1 < .. < q_m = 1 and values 0 = a_0 <= a_1 <= .. <= a_m <= 1."""
    x, y = np.asarray(q, dtype=np.float64), np.asarray(a, dtype=np.float64)
    if x.ndim != 1 or x.shape != y.shape or x.size < 2 or x.size > 64 or not (np.all(np.isfinite(x))
                                                                           and np.all(np.isfinite(y))):
        raise ValueError("an acceptance map needs two matching lists of 2 to 64 finite numbers (q knots, a+ values)")
    if x[0] != 0.0 or x[-1] != 1.0 or np.any(np.diff(x) <= 0):
        raise ValueError("the acceptance map's q knots must rise strictly from 0 to 1")
    if y[0] != 0.0 or np.any(np.diff(y) < 0) or y[-1] > 1.0:
        raise ValueError("the acceptance map's values must rise from 0 and stay at most 1")


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
