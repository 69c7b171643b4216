"""Filling a token tree with a draft model's choices: one draft pass per depth, each node seeing only its path.

The shape is a :class:`specdec_core.trees.Tree` (parent and sibling rank per node). The rank-r child of a node is the
draft's r-th choice after that node's path: its r-th most probable token when greedy (q one-hot), its r-th draw
without replacement from q when sampling (q_r = q without the r - 1 earlier siblings, renormalised: the law the
recursive rejection in :mod:`gpu_demo.tree_decode` must divide by). Pass d feeds the nodes at depth d - 1 that get
children, at position p0 - 1 + d, under a tree mask over the nodes already fed (the draft's cost model in
specdec_core.tree_cost). After verification the draft keeps its accepted path (``keep``), like the target.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from gpu_demo.drafters import ModelDrafter, prefill_all_but_last
from gpu_demo.models.base import DecoderLM
from gpu_demo.sampler import SamplingConfig, logits_to_probs
from specdec_core.dynamic_tree import DynamicTree, best_count, rerank, tree_of, worth_growing
from specdec_core.trees import Tree, ancestor_mask

# ------------------------------------------------------------------------------------------------ the shape


def check_tree_model(model: object, role: str) -> None:
    """The model can run a tree pass and compact its cache: forward(idx, positions, tree_mask) and keep()."""
    if not callable(getattr(model, "keep", None)):
        raise ValueError(f"the {role} model ({type(model).__name__}) cannot verify a token tree: it has no "
                         "keep(start, slots) to compact the accepted path")


def prune(tree: Tree, max_depth: int) -> Tree:
    """The nodes of depth <= max_depth (whole levels go, so sibling ranks stay 1..b)."""
    keep = [j for j, d in enumerate(tree.depth) if d <= max_depth]
    new = {old: i for i, old in enumerate(keep)}
    return Tree(tuple(new.get(tree.parent[j], -1) for j in keep), tuple(tree.rank[j] for j in keep))


@functools.lru_cache(maxsize=64)
def ancestors(tree: Tree) -> torch.Tensor:
    """(n, n) bool: entry (i, j) when node j is node i or one of its ancestors (specdec_core.trees.ancestor_mask)."""
    return torch.from_numpy(ancestor_mask(tree))


@dataclass(frozen=True)
class DraftStep:
    """One depth of the drafting: fill `nodes` from the previous pass's rows/cols, then feed `fed` under `mask`."""

    b: int  # children drawn per fed parent (the widest sibling group at this depth)
    nodes: list[int]  # the nodes at this depth
    rows: list[int]  # their parent's row in the previous pass's output
    cols: list[int]  # their rank - 1
    fed: tuple[int, ...]  # the nodes at this depth that get children, fed in the next pass
    fed_so_far: tuple[int, ...]  # every node fed up to this pass, in feed order (= draft cache slot order)
    mask: torch.Tensor  # (len(fed), len(fed_so_far)) bool: each fed node's path among the fed nodes
    causal: bool  # one node fed per depth so far, each on the last one's path: slots are positions, a plain pass


@functools.lru_cache(maxsize=64)
def draft_plan(tree: Tree) -> list[DraftStep]:
    """Per depth, which rows fill which nodes and which nodes are fed next (computed once per shape)."""
    kids, anc = tree.kids, ancestors(tree)
    steps, parents, fed_all = [], [-1], []
    for _ in range(int(tree.depth.max(initial=0))):  # depth 1, 2, ...
        nodes = [j for u in parents for j in kids[u]]
        rows = [row for row, u in enumerate(parents) for _ in kids[u]]
        fed = tuple(j for j in nodes if kids[j])
        fed_all += fed
        mask = anc[list(fed)][:, fed_all]
        causal = len(fed) == 1 and len(fed_all) == len(steps) + 1 and bool(mask.all())
        steps.append(DraftStep(max(len(kids[u]) for u in parents), nodes, rows, [tree.rank[j] - 1 for j in nodes],
                               fed, tuple(fed_all), mask, causal))
        parents = list(fed)
    return steps


# --------------------------------------------------------------------------------------------- the drafter


@dataclass
class TreeDraft:
    """The filled tree: a token per node and the law q_j it was drawn from (one-hot for a deterministic choice)."""

    tree: Tree
    tokens: torch.Tensor  # (n,) long
    q: torch.Tensor  # (n, V) float32: q_j, the parent's law without the earlier siblings, renormalised


def choose_children(logits: torch.Tensor, b: int, sampling: SamplingConfig, generator: torch.Generator | None,
                    vocab_size: int, ids: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """b distinct children per row of logits (w, K): the top b (greedy, q_i one-hot) or b draws without
    replacement from q (Gumbel top-b), with q_i = q without x_1..x_{i-1}, renormalised (0 once q is exhausted).

    Column k of logits is token ids[k] (a sub-vocabulary head: every other id has logit -inf, so q = 0 there and
    the law is the same as over all V ids); ids None means K = V. Returns x (w, b) token ids, q_i (w, b, V).
    """
    if sampling.greedy:
        k = logits.topk(b, dim=-1).indices  # (w, b) columns
        x = k if ids is None else ids[k]  # (w, b) token ids
        return x, F.one_hot(x, vocab_size).float()  # (w, b), (w, b, V)
    tiny = torch.finfo(torch.float32).tiny
    q = logits_to_probs(logits, sampling)  # (w, K)
    u = torch.rand(q.shape, generator=generator, device=q.device).clamp_min_(tiny)  # (w, K)
    k = (q.log() - (-u.log()).log()).topk(b, dim=-1).indices  # (w, b): Gumbel top-b = draws without replacement
    onehot = F.one_hot(k, q.shape[-1]).float()  # (w, b, K)
    left = q.unsqueeze(1) * (1.0 - (onehot.cumsum(1) - onehot))  # (w, b, K): q without the earlier siblings
    mass = left.sum(-1, keepdim=True)  # (w, b, 1)
    q_i = torch.where(mass > 0, left / mass.clamp_min(tiny), 0.0)  # (w, b, K)
    if ids is None:
        return k, q_i
    full = q_i.new_zeros((*q_i.shape[:-1], vocab_size))  # (w, b, V)
    return ids[k], full.index_copy_(-1, ids, q_i)


Expand = Callable[[torch.Tensor, list[int], torch.Tensor, int], torch.Tensor]


@dataclass
class Grown:
    """A dynamic tree's draft, the candidates fed to the draft in feed order, and each chosen candidate's node."""

    draft: TreeDraft
    fed: list[int]
    node_of: dict[int, int]


def _on_path(parent: list[int], node: int, other: int) -> bool:
    """other is node or one of its ancestors (candidate indices; -1 is the root)."""
    while node >= 0:
        if node == other:
            return True
        node = parent[node]
    return False


def grow_dynamic(root_logits: torch.Tensor, spec: DynamicTree, expand: Expand, vocab_size: int,
                 ids: torch.Tensor | None = None) -> Grown:
    """EAGLE-2's tree (specdec_core.dynamic_tree): expand the top_k best-scored nodes per depth by their top_k
    children, stopping early where no deeper tree repays its passes (worth_growing), then keep the best nodes for
    this device's verify cost. expand(tokens (w,), parent rows in the last logits, mask (w, fed so far) of each new
    node's fed ancestors, depth) feeds them -> their logits (w, K), over the same columns as root_logits (1, K):
    column k is token ids[k] (a sub-vocabulary head), or token k where ids is None (K = V).
    Children are the draft's top choices, so each q is one-hot; a path scores the product of spec.edge(q) along it.
    One host read per depth."""
    parent: list[int] = []
    token: list[int] = []
    score: list[float] = []
    depth: list[int] = []
    beam, fed, logits = [-1], [], root_logits  # beam: the candidates whose laws are the rows of logits
    d = 0  # draft passes made: the root's, then one per expansion
    for d in range(1, spec.depth + 1):
        top_v, top_i = torch.log_softmax(logits.float(), -1).topk(min(spec.top_k, logits.shape[-1]), -1)  # (w, k)
        top_x = top_i if ids is None else ids[top_i]  # (w, k) token ids
        vals, xs = spec.log_edge(top_v.cpu().numpy()).tolist(), top_x.tolist()  # log a+(q) per child
        new = []
        for row, b in enumerate(beam):
            for lp, x in zip(vals[row], xs[row]):
                if lp == float("-inf"):  # a sub-vocabulary head allows fewer tokens than top_k (or a+ = 0)
                    continue
                new.append(len(parent))
                parent.append(b)
                token.append(x)
                score.append((score[b] if b >= 0 else 0.0) + lp)  # log of the product of a+(q) on the path
                depth.append(d)
        if d == spec.depth or not new:
            break
        nxt = sorted(new, key=lambda i: (-score[i], i))[: spec.top_k]  # the beam of the next depth
        if not worth_growing(np.exp(score), np.exp([score[i] for i in nxt]), spec, d):
            break  # no deeper tree repays its passes here: verify the best cut of this one
        fed += nxt
        mask = torch.tensor([[_on_path(parent, i, f) for f in fed] for i in nxt], device=root_logits.device)
        rows = [beam.index(parent[i]) for i in nxt]
        logits = expand(torch.tensor([token[i] for i in nxt], device=root_logits.device), rows, mask, d)
        beam = nxt
    chosen = rerank(parent, score, depth, best_count(np.exp(score), spec, d)) if parent else []
    tree, idx = tree_of(parent, chosen) if chosen else (Tree((), ()), np.zeros(0, dtype=np.int64))
    tokens = torch.tensor([token[i] for i in idx], dtype=torch.long, device=root_logits.device)  # (n,)
    q = F.one_hot(tokens, vocab_size).float()  # (n, V): deterministic choices
    return Grown(TreeDraft(tree, tokens, q), fed, {int(c): j for j, c in enumerate(idx)})


class TreeProposer:
    """What the tree engine asks of a draft: ``begin(prompt)``, ``propose(tree, sampling, generator)`` -> a
    :class:`TreeDraft` (of ``tree``, or of ``chain(0)`` when the draft has nothing to draft from yet) and
    ``commit(path, y)``. ``model`` holds the draft's cache (RoundEvent.kv_draft reads ``model.cache_len``)."""

    name = "tree draft"

    def __init__(self, model: object, name: str, vocab_size: int, max_seq_len: int) -> None:
        self.model, self.name = model, name
        self.vocab_size, self.max_seq_len = vocab_size, max_seq_len
        self._draft: TreeDraft | None = None

    def begin(self, prompt: torch.Tensor) -> None:
        """Start a run on prompt (after the target's prefill of prompt[:-1])."""
        raise NotImplementedError

    def propose(self, tree: Tree, sampling: SamplingConfig, generator: torch.Generator | None) -> TreeDraft:
        """Fill tree with tokens and the laws they were drawn from."""
        raise NotImplementedError

    def commit(self, path: Sequence[int], next_token: int) -> None:
        """Keep the accepted path and y."""
        raise NotImplementedError


class TreeDrafter(TreeProposer):
    """A draft model that fills a tree shape, one pass per depth, and keeps its accepted path afterwards.

    Cache convention as :class:`gpu_demo.drafters.ModelDrafter`: the committed sequence minus 1 or 2 pending ids.
    """

    def __init__(self, model: DecoderLM, name: str = "tree draft") -> None:
        check_tree_model(model, "draft")
        super().__init__(model, name, model.vocab_size, model.max_seq_len)
        self._pending = torch.empty(0, dtype=torch.long)
        self._p0 = 0  # draft cache length after the root: the tree's fed nodes follow it
        self._slot: dict[int, int] = {}  # node -> its draft cache slot (nodes that got children)

    @classmethod
    def from_drafter(cls, drafter: object) -> TreeDrafter:
        """The tree drafter over a pair's model draft (prompt lookup proposes one chain, not a tree)."""
        if isinstance(drafter, TreeDrafter):
            return drafter
        if not isinstance(drafter, ModelDrafter):
            raise ValueError(f"tree drafting needs a model draft; {getattr(drafter, 'name', drafter)!r} is not one")
        return cls(drafter.model, drafter.name)

    def begin(self, prompt: torch.Tensor) -> None:
        """Prefill with all prompt tokens but the last (pending)."""
        self._pending = prefill_all_but_last(self.model, prompt)

    def propose(self, tree: Tree | DynamicTree, sampling: SamplingConfig, generator: torch.Generator | None
                ) -> TreeDraft:
        """Fill `tree`: depth d's nodes are chosen from the laws after depth d - 1's nodes that have children.
        A DynamicTree is grown from the draft's own probabilities instead (grow_dynamic)."""
        if isinstance(tree, DynamicTree):
            return self._grow(tree)
        n, dev, V = tree.n_nodes, self.model.device, self.vocab_size
        tokens, q = torch.zeros(n, dtype=torch.long, device=dev), torch.zeros(n, V, device=dev)
        steps, self._slot = draft_plan(tree), {}
        if n:
            out = self.model.forward(self._pending.view(1, -1))[0, -1:]  # (1, V) the root's law
            self._p0 = self.model.cache_len
            self._slot = {j: self._p0 + i for i, j in enumerate(steps[-1].fed_so_far)}
            for d, st in enumerate(steps, start=1):  # out: the laws after the nodes fed last, in feed order
                x, qs = choose_children(out, st.b, sampling, generator, V)  # (w, b), (w, b, V)
                tokens[st.nodes], q[st.nodes] = x[st.rows, st.cols], qs[st.rows, st.cols]
                if not st.fed:
                    break
                feed = tokens[list(st.fed)].view(1, -1)  # (1, w)
                if st.causal:  # a chain so far: the plain pass is the same computation, cheaper
                    out = self.model.forward(feed)[0]
                    continue
                pos = torch.full((len(st.fed),), self._p0 - 1 + d, dtype=torch.long, device=dev)  # root: p0 - 1
                out = self.model.forward(feed, pos, st.mask.to(dev))[0]  # (w, V)
        self._draft = TreeDraft(tree, tokens, q)
        return self._draft

    def _grow(self, spec: DynamicTree) -> TreeDraft:
        """A dynamic tree: the root's law, then one tree-masked pass per depth over the beam (position p0 - 1 + d)."""
        if spec.depth == 0 or spec.budget == 0:
            grown = grow_dynamic(torch.zeros(0, self.vocab_size), spec, None, self.vocab_size)
        else:
            root = self.model.forward(self._pending.view(1, -1))[0, -1:]  # (1, V)
            self._p0 = self.model.cache_len
            dev = self.model.device

            def expand(tokens: torch.Tensor, rows: list[int], mask: torch.Tensor, d: int) -> torch.Tensor:
                pos = torch.full((tokens.numel(),), self._p0 - 1 + d, dtype=torch.long, device=dev)
                return self.model.forward(tokens.view(1, -1), pos, mask)[0]  # (w, V)

            grown = grow_dynamic(root, spec, expand, self.vocab_size)
            if grown.draft.tree.n_nodes == 0:  # nothing worth verifying: as if nothing was fed
                self.model.rollback(self._p0 - self._pending.numel())
        fed_slot = {c: self._p0 + i for i, c in enumerate(grown.fed)}
        self._slot = {j: fed_slot[c] for c, j in grown.node_of.items() if c in fed_slot}
        self._draft = grown.draft
        return self._draft

    def commit(self, path: Sequence[int], next_token: int) -> None:
        """Keep the root and the accepted path's fed nodes; a leaf at the end stays pending with y."""
        nxt = torch.tensor([next_token], dtype=torch.long, device=self.model.device)
        if self._draft is None or self._draft.tree.n_nodes == 0:  # nothing was fed: pending grows
            self._pending = torch.cat([self._pending, nxt])
            return
        self.model.keep(self._p0, [self._slot[j] for j in path if j in self._slot])
        last = path[-1] if path else None
        unfed = last is not None and last not in self._slot
        self._pending = torch.cat([self._draft.tokens[last:last + 1], nxt]) if unfed else nxt
