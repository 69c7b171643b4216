"""Token trees: E[N] from per-rank acceptance; trees by branching per depth or by a node budget placed greedily.

Each node of a tree is the rank-th candidate proposed after its parent (rank 1 = the draft's first choice);
the root is the last accepted token. With a_r = P(the rank-r child is the one kept | its parent was kept),
the same at every depth (Sequoia's positional acceptance; siblings exclude each other, so sum_r a_r <= 1),
the path to node j is accepted with probability pi_j = product of a_rank along the path, and
    E[N] = 1 + sum_j pi_j              (linearity over the accepted nodes, plus the correction or bonus token).
A chain of gamma nodes gives 1 + a_1 + ... + a_1^gamma, the algebra page's expected_tokens(a_1, gamma).
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specdec_core.multidraft import K_MAX, WOR, multidraft_distribution
from specdec_core.rejection import _rng, check_draws
from specdec_core.validate import check_alphas

MAX_NODES = 128
MAX_DEPTH = 16
MAX_RANK = K_MAX
RATE_SUM_ATOL = 1e-9


@dataclass(frozen=True)
class Tree:
    """A draft tree: parent index per node (-1 = the root; parents come first) and 1-based sibling rank."""

    parent: tuple[int, ...]
    rank: tuple[int, ...]

    def __post_init__(self) -> None:
        n = len(self.parent)
        if len(self.rank) != n or n > MAX_NODES:
            raise ValueError(f"a tree has 0 to {MAX_NODES} nodes, one parent and one rank each; "
                             f"got {n} parents and {len(self.rank)} ranks")
        seen: dict[int, list[int]] = {}
        for j, (par, r) in enumerate(zip(self.parent, self.rank)):
            if not -1 <= par < j:
                raise ValueError(f"node {j}: its parent must be -1 (the root) or an earlier node; got {par}")
            seen.setdefault(par, []).append(r)
        for par, ranks in seen.items():
            if sorted(ranks) != list(range(1, len(ranks) + 1)) or len(ranks) > MAX_RANK:
                raise ValueError(f"the children of node {par} must have ranks 1..b with b <= {MAX_RANK}; got {ranks}")
        if n and self.depth.max() > MAX_DEPTH:
            raise ValueError(f"tree depth must be at most {MAX_DEPTH}; got {int(self.depth.max())}")

    @property
    def n_nodes(self) -> int:
        return len(self.parent)

    @property
    def depth(self) -> NDArray[np.int64]:
        """Depth of each node: 1 for a child of the root."""
        d = np.zeros(self.n_nodes, dtype=np.int64)
        for j, par in enumerate(self.parent):
            d[j] = 1 if par < 0 else d[par] + 1
        return d

    @functools.cached_property
    def kids(self) -> dict[int, tuple[int, ...]]:
        """The children of each node in rank order, -1 = the root (the one place a node's children are found)."""
        kids: dict[int, list[int]] = {j: [] for j in range(-1, self.n_nodes)}
        for j in sorted(range(self.n_nodes), key=lambda j: self.rank[j]):
            kids[self.parent[j]].append(j)
        return {j: tuple(c) for j, c in kids.items()}

    def children(self) -> NDArray[np.int64]:
        """(n_nodes + 1, MAX_RANK) table: row 0 is the root, row j + 1 node j; entry = child node id, or -1."""
        table = np.full((self.n_nodes + 1, MAX_RANK), -1, dtype=np.int64)
        for par, c in self.kids.items():
            table[par + 1, : len(c)] = c
        return table


def check_rates(rates: ArrayLike) -> NDArray[np.float64]:
    """a_1..a_R per-rank acceptance: R in [1, MAX_RANK], each in [0, 1], summing to at most 1."""
    a = check_alphas(rates, "per-rank acceptance")
    if not 1 <= a.size <= MAX_RANK:
        raise ValueError(f"give 1 to {MAX_RANK} per-rank acceptance rates; got {a.size}")
    if a.sum() > 1.0 + RATE_SUM_ATOL:
        raise ValueError(f"per-rank acceptance rates must sum to at most 1 (siblings exclude each other); "
                         f"they sum to {a.sum():.4g}")
    return a


def chain(gamma: int) -> Tree:
    """gamma nodes, each the rank-1 child of the one before: the ordinary draft chain."""
    if isinstance(gamma, bool) or not isinstance(gamma, (int, np.integer)) or not 0 <= gamma <= MAX_DEPTH:
        raise ValueError(f"a chain's length must be an integer in [0, {MAX_DEPTH}]; got {gamma!r}")
    return Tree(tuple(range(-1, gamma - 1)), (1,) * gamma)


def check_branching(branching: Sequence[int]) -> tuple[int, ...]:
    """b_1..b_D: D in [1, MAX_DEPTH], each an integer in [1, MAX_RANK], total nodes at most MAX_NODES."""
    b = tuple(branching)
    if not 1 <= len(b) <= MAX_DEPTH or any(isinstance(x, bool) or not isinstance(x, (int, np.integer))
                                           or not 1 <= x <= MAX_RANK for x in b):
        raise ValueError(f"branching needs 1 to {MAX_DEPTH} depths, each an integer in [1, {MAX_RANK}]; got {b!r}")
    total = int(np.cumprod(b).sum())
    if total > MAX_NODES:
        raise ValueError(f"branching {b} makes {total} nodes; at most {MAX_NODES} are allowed")
    return tuple(int(x) for x in b)


def branching_tree(branching: Sequence[int]) -> Tree:
    """Every node at depth d - 1 gets b_d children, ranks 1..b_d; nodes numbered breadth first."""
    b = check_branching(branching)
    parent, rank, level = [], [], [-1]
    for width in b:
        nxt = []
        for par in level:
            for r in range(1, width + 1):
                nxt.append(len(parent))
                parent.append(par)
                rank.append(r)
        level = nxt
    return Tree(tuple(parent), tuple(rank))


def greedy_tree(rates: ArrayLike, budget: int, max_depth: int = MAX_DEPTH) -> Tree:
    """Place `budget` nodes one at a time, each the open slot with the highest path probability (EAGLE-2's
    dynamic tree with exact rates). Path values fall along parent and rank, so this is the best tree of its size."""
    a = check_rates(rates)
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or not 0 <= budget <= MAX_NODES:
        raise ValueError(f"node budget must be an integer in [0, {MAX_NODES}]; got {budget!r}")
    parent: list[int] = []
    rank: list[int] = []
    depth: list[int] = []
    prob: list[float] = []
    heap = [(-a[0], 0, -1, 1, 1)]                 # (-path prob, order, parent, rank, depth)
    order = 1
    while heap and len(parent) < budget:
        neg, _, par, r, d = heapq.heappop(heap)
        j = len(parent)
        parent.append(par), rank.append(r), depth.append(d), prob.append(-neg)
        base = 1.0 if par < 0 else prob[par]
        if r < a.size:                            # the next sibling opens
            heapq.heappush(heap, (-base * a[r], order, par, r + 1, d))
            order += 1
        if d < max_depth:                         # the first child opens
            heapq.heappush(heap, (neg * a[0], order, j, 1, d + 1))
            order += 1
    return Tree(tuple(parent), tuple(rank))


def path_probabilities(tree: Tree, rates: ArrayLike) -> NDArray[np.float64]:
    """pi_j = a_{rank(j)} x pi_{parent(j)}, pi_root = 1: the probability that the path to node j is accepted."""
    a = check_rates(rates)
    return path_probabilities_by_depth(tree, np.broadcast_to(a, (MAX_DEPTH, a.size)))


def path_probabilities_by_depth(tree: Tree, rates: ArrayLike) -> NDArray[np.float64]:
    """pi_j = a_{rank j}(depth j) x pi_{parent(j)} with rates (D, R) per depth; NaN (never measured), a depth
    past D or a rank past R count as 0."""
    a = np.nan_to_num(np.atleast_2d(np.asarray(rates, dtype=np.float64)))
    pi = np.zeros(tree.n_nodes)
    for j, (par, r, d) in enumerate(zip(tree.parent, tree.rank, tree.depth)):
        rate = a[d - 1, r - 1] if d <= a.shape[0] and r <= a.shape[1] else 0.0
        pi[j] = rate * (1.0 if par < 0 else pi[par])
    return pi


def expected_length_by_depth(tree: Tree, rates: ArrayLike) -> float:
    """E[N] = 1 + sum_j pi_j with rates (D, R) per depth (:func:`path_probabilities_by_depth`)."""
    return 1.0 + float(path_probabilities_by_depth(tree, rates).sum())


def rank_counts(rounds: Iterable[tuple[Tree, Sequence[int]]], max_rank: int, max_depth: int
                ) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """a_r(d) = P(the rank-r child is kept | its parent at depth d - 1 was reached and has >= r children), counted
    over rounds of (tree, accepted path). -> (kept, reached) (max_depth, max_rank) counts and the rates pooled over
    depths (NaN where rank r was never offered). Siblings exclude each other, as in :func:`path_probabilities`."""
    kept = np.zeros((max_depth, max_rank), dtype=np.int64)
    reached = np.zeros((max_depth, max_rank), dtype=np.int64)
    for tree, path in rounds:
        for d, node in enumerate([-1, *path][:max_depth]):
            b = len(tree.kids[node])
            if b == 0:
                continue
            reached[d, : min(b, max_rank)] += 1
            if d < len(path) and tree.rank[path[d]] <= max_rank:
                kept[d, tree.rank[path[d]] - 1] += 1
    with np.errstate(invalid="ignore", divide="ignore"):
        pooled = np.where(reached.sum(0) > 0, kept.sum(0) / np.maximum(reached.sum(0), 1), np.nan)
    return kept, reached, pooled


def expected_accepted_length(tree: Tree, rates: ArrayLike) -> float:
    """E[N] = 1 + sum_j pi_j; 1 for the empty tree."""
    return 1.0 + float(path_probabilities(tree, rates).sum())


def branching_expected_length(branching: Sequence[int], rates: ArrayLike) -> float:
    """Closed form for a branching tree: 1 + sum_d prod_{i<=d} S(b_i), with S(b) = a_1 + ... + a_b."""
    a, b = check_rates(rates), check_branching(branching)
    s = np.array([a[: min(x, a.size)].sum() for x in b])
    return 1.0 + float(np.cumprod(s).sum())


def ancestor_mask(tree: Tree) -> NDArray[np.bool_]:
    """(n, n) tree attention mask: entry (i, j) True when node j is node i or one of its ancestors.

    Row i has depth(i) True entries, so the mask allows sum_i depth(i) of its n^2 entries; a causal (chain)
    mask over the same n slots would allow n (n + 1) / 2, letting siblings see each other.
    """
    n = tree.n_nodes
    anc = np.eye(n, dtype=bool)                                          # (n, n)
    for j, par in enumerate(tree.parent):
        if par >= 0:
            anc[j] |= anc[par]
    return anc


def verify_tokens(tree: Tree) -> int:
    """Tokens per sequence in the verify pass: the root (last accepted token) plus every node."""
    return tree.n_nodes + 1


def draft_widths(tree: Tree) -> NDArray[np.int64]:
    """Tokens per sequence in each draft pass: pass d feeds the nodes at depth d - 1 that have children."""
    if tree.n_nodes == 0:
        return np.zeros(0, dtype=np.int64)
    depth = tree.depth
    parents = {p for p in tree.parent}
    pdepth = np.array([0 if p < 0 else depth[p] for p in parents])
    return np.bincount(pdepth, minlength=int(depth.max())).astype(np.int64)


def simulate_accepted_length(tree: Tree, rates: ArrayLike, n: int,
                             seed: int | np.random.Generator | None = 0) -> NDArray[np.int64]:
    """n rounds: from the root, draw which rank is kept (or none, 1 - sum a); walk to that child if the tree has
    it, else stop. Returns N = accepted nodes + 1 per round."""
    a, n, rng = check_rates(rates), check_draws(n), _rng(seed)
    table = tree.children()
    cdf = np.cumsum(a)
    node = np.zeros(n, dtype=np.int64)            # row in the table: 0 = root
    length = np.ones(n, dtype=np.int64)
    alive = np.ones(n, dtype=bool)
    for _ in range(MAX_DEPTH):
        r = np.searchsorted(cdf, rng.random(n), side="right")            # 0..R-1 a rank, R = none kept
        child = np.where(r < a.size, table[node, np.minimum(r, MAX_RANK - 1)], -1)
        alive &= child >= 0
        length += alive
        node = np.where(alive, child + 1, node)
        if not alive.any():
            break
    return length


def rank_rates(p: ArrayLike, q: ArrayLike, k: int, rule: str = WOR) -> NDArray[np.float64]:
    """a_r = P(candidate r is the one kept) under the exact multi-draft rule, averaged over a batch of (p, q)."""
    ranks = multidraft_distribution(p, q, k, rule)[1]
    return ranks.reshape(-1, ranks.shape[-1]).mean(axis=0)


def parse_ints(text: str, name: str) -> tuple[int, ...]:
    """Whole numbers separated by commas or spaces."""
    parts = [t for t in text.replace(",", " ").split() if t]
    try:
        vals = tuple(int(t) for t in parts)
    except ValueError as exc:
        raise ValueError(f"{name} must be whole numbers separated by commas; could not read {text[:40]!r}") from exc
    if not vals:
        raise ValueError(f"{name} is empty; give at least one whole number")
    return vals


def parse_rates(text: str) -> NDArray[np.float64]:
    """Per-rank acceptance typed as numbers separated by commas, checked by check_rates."""
    parts = [t for t in text.replace(",", " ").split() if t]
    try:
        vals = np.array([float(t) for t in parts], dtype=np.float64)
    except ValueError as exc:
        raise ValueError("per-rank acceptance must be numbers separated by commas; "
                         f"could not read {text[:40]!r}") from exc
    return check_rates(vals)


def sglang_tree_counts(steps: int, topk: int, num_draft_tokens: int) -> tuple[int, int]:
    """SGLang's EAGLE tree: scored = topk + (steps - 1) topk^2 candidates, kept = num_draft_tokens - 1 nodes.

    Step 1 scores the root's topk children; each later step expands the topk kept nodes by topk each and keeps
    the topk best, so no step scores more than topk^2 and topk^steps is never built.
    """
    if steps < 1 or topk < 1 or num_draft_tokens < 1:
        raise ValueError("steps, topk and num_draft_tokens must be at least 1")
    scored = topk + (steps - 1) * topk * topk
    return scored, min(scored, num_draft_tokens - 1)
