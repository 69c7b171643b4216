"""Token-tree speculative decoding: one target pass verifies a whole draft tree under a tree attention mask.

The tree's shape is a :class:`specdec_core.trees.Tree` (parent and sibling rank per node; a chain, a branching
tree, or a node budget placed greedily). A round (:func:`tree_round`, the whole algorithm on one screen):

1. the drafter fills the shape: the rank-r child of a node is the draft's r-th choice after that node's path (its
   r-th most probable token when greedy, its r-th draw without replacement from q when sampling), one draft pass per
   depth over the nodes that get children, each seeing only its own path (a tree mask);
2. the target runs ONE forward over [pending, node_1..node_n]: node j sits at position base + depth(j) and sees the
   committed prefix, the root (pending) and its own ancestors -> a law after every node;
3. the walk from the root: greedy keeps the child equal to the target's argmax; sampling tries the children in rank
   order by recursive rejection (SpecInfer): child i is kept w.p. min(1, r(x_i) / q_i(x_i)), with r = p at first
   and r <- (r - q_i)+ normalised after each rejection (q_i: the law child i was drawn from). The next token y is
   drawn from the last r (a correction) or, below a leaf, from its law (a bonus); the emitted law is p exactly;
4. the target's cache keeps pending + the accepted path: the path's entries, written in tree order, are compacted
   to base + 1.. (``keep``); y becomes pending;
5. the drafter keeps its own accepted path the same way; a leaf it never fed stays pending (the catch-up).

Models need ``forward(idx, positions, tree_mask)`` and ``keep(start, slots)`` (every built-in model and Llama).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import torch

from gpu_demo.decode import (
    RoundEvent,
    check_pair_sampling,
    check_prompt_and_length,
    cut_at_stop,
    make_generator,
    prefill,
    stepwise_inference,
    top_n,
)
from gpu_demo.device import Stopwatch
from gpu_demo.models.base import DecoderLM
from gpu_demo.models.eagle import EagleDrafter
from gpu_demo.models.eagle_tree import EagleTreeDrafter
from gpu_demo.sampler import SamplingConfig, logits_to_probs, sample, try_in_turn
from gpu_demo.tree_draft import (
    TreeDraft,
    TreeDrafter,
    TreeProposer,
    ancestors,
    check_tree_model,
    prune,
)
from specdec_core.dynamic_tree import DynamicTree
from specdec_core.trees import Tree

# ------------------------------------------------------------------------------------------------ the mask


@functools.lru_cache(maxsize=64)
def verify_mask(tree: Tree) -> torch.Tensor:
    """(n + 1, n + 1) bool over [root, nodes]: everyone sees the root, a node sees itself and its ancestors."""
    n = tree.n_nodes
    mask = torch.zeros(n + 1, n + 1, dtype=torch.bool)
    mask[:, 0] = True
    mask[1:, 1:] = ancestors(tree)
    return mask


def verify_args(tree: Tree, base: int, device: torch.device | str) -> tuple[torch.Tensor, ...]:
    """The extra forward arguments of the pass verifying [root, nodes] from a cache of `base` slots: none for no
    tree or a chain (the causal mask is the tree mask), else (positions base + depth (n + 1,), verify_mask)."""
    if not tree.n_nodes or tree.parent == tuple(range(-1, tree.n_nodes - 1)):
        return ()
    depth = torch.cat([torch.zeros(1, dtype=torch.long), torch.as_tensor(tree.depth, dtype=torch.long)])  # (n + 1,)
    return (base + depth).to(device), verify_mask(tree).to(device)


# ----------------------------------------------------------------------------------------------- the round


@dataclass
class TreeRound:
    """What one tree round did: the filled tree, the target's laws, the walk, and the two timings."""

    draft: TreeDraft
    p: torch.Tensor  # (n + 1, V) target law after the root and after every node (T = 1 softmax under greedy)
    path: list[int]  # accepted nodes, root to leaf
    tried: list[int]  # nodes whose verdict was taken (accepted or rejected), in walk order
    next_token: int
    uniforms: list[float]
    draft_s: float
    verify_s: float

    @property
    def emitted(self) -> list[int]:
        """The accepted path's tokens, then y."""
        return self.draft.tokens[self.path].tolist() + [self.next_token]

    @property
    def kinds(self) -> list[str]:
        """accepted per path node, then y: a correction (the last node had children), a bonus (a leaf) or target."""
        last = self.path[-1] if self.path else -1
        has_kids = bool(self.draft.tree.kids[last])
        return ["accepted"] * len(self.path) + ["correction" if has_kids else "bonus" if self.path else "target"]


def greedy_walk(logits: torch.Tensor, draft: TreeDraft) -> tuple[list[int], list[int], int]:
    """Keep the child equal to argmax at each depth; y = argmax after the deepest kept node. (path, tried, y)."""
    best, tok, kids = logits.argmax(-1).tolist(), draft.tokens.tolist(), draft.tree.kids
    node, path, tried = -1, [], []
    while True:
        tried += kids[node]
        hit = next((c for c in kids[node] if tok[c] == best[node + 1]), None)
        if hit is None:
            return path, tried, best[node + 1]
        path.append(hit)
        node = hit


def recursive_walk(p: torch.Tensor, draft: TreeDraft, generator: torch.Generator | None
                   ) -> tuple[list[int], list[int], int, list[float]]:
    """SpecInfer's recursive rejection: at each node, :func:`gpu_demo.sampler.try_in_turn` over its children
    (the chain's step, with the chain's fallback), from r = p at that node. (path, tried, y, u)."""
    n, dev = draft.tree.n_nodes, p.device
    u = torch.rand(n, generator=generator, device=dev)  # one uniform per node: each is tried at most once
    p_h, q_h, u_h, tok = p.cpu(), draft.q.cpu(), u.tolist(), draft.tokens.tolist()
    kids, node, path, tried = draft.tree.kids, -1, [], []
    while True:
        c = kids[node]
        i, r = try_in_turn(p_h[node + 1], [tok[j] for j in c], q_h[list(c)], [u_h[j] for j in c])
        tried += c if i < 0 else c[: i + 1]
        if i < 0:
            return path, tried, int(sample(r.to(dev), generator)), u_h
        path.append(c[i])
        node = c[i]


def tree_round(target: DecoderLM, drafter: TreeProposer, pending: torch.Tensor, tree: Tree | DynamicTree,
               sampling: SamplingConfig, draft_sampling: SamplingConfig, generator: torch.Generator) -> TreeRound:
    """Fill the tree from q, score [pending, nodes] in one tree-masked target pass, walk it, keep the path.

    The drafter may fill chain(0) instead of tree (nothing to draft from yet): the round is then a target step.
    """
    watch = Stopwatch(target.device)
    draft = drafter.propose(tree, draft_sampling, generator)  # 1. the draft's choices
    tree = draft.tree
    draft_s = watch.lap()
    base, dev = target.cache_len, target.device
    idx = torch.cat([pending, draft.tokens]).view(1, -1)  # (1, n + 1)
    logits = target.forward(idx, *verify_args(tree, base, dev))[0]  # 2. one pass: (n + 1, V)
    if sampling.greedy:  # 3. walk the tree
        path, tried, y = greedy_walk(logits, draft)
        p, u = torch.softmax(logits.float(), -1), []
    else:
        p = logits_to_probs(logits, sampling)  # (n + 1, V)
        path, tried, y, u = recursive_walk(p, draft, generator)
    target.keep(base + 1, [base + 1 + j for j in path])  # 4. pending + the path, compacted; y is pending
    verify_s = watch.lap()
    drafter.commit(path, y)  # 5. the drafter keeps its path too
    return TreeRound(draft, p, path, tried, y, u, draft_s, verify_s)


# ------------------------------------------------------------------------------------------------ the events


@dataclass
class TreeRoundEvent(RoundEvent):
    """A tree round as a RoundEvent: ``drafted``, ``q_x``, ``p_x``, ``accept_mask`` run over the nodes in tree order
    (p_x = p(x_j | the path to its parent)); ``n_accepted`` is the accepted path's length and ``p_top`` follows the
    path (root, then each accepted node). ``parent``/``rank`` give the shape, ``path``/``tried`` the walk."""

    parent: list[int] = field(default_factory=list)
    rank: list[int] = field(default_factory=list)
    path: list[int] = field(default_factory=list)
    tried: list[int] = field(default_factory=list)

    def verdicts(self) -> list[str]:
        """Per node: 'accepted' (on the path), 'rejected' (tried, not kept) or 'unreached'."""
        on, seen = set(self.path), set(self.tried)
        return ["accepted" if j in on else "rejected" if j in seen else "unreached" for j in range(self.k)]


def tree_drafter_for(drafter: object) -> TreeProposer:
    """The tree form of a pair's drafter: a TreeProposer itself, EAGLE's over its chain drafter, or a model draft's."""
    if isinstance(drafter, TreeProposer):
        return drafter
    if isinstance(drafter, EagleDrafter):
        return EagleTreeDrafter(drafter)
    return TreeDrafter.from_drafter(drafter)


def tree_speculative(
    target: DecoderLM,
    drafter: object,
    prompt_ids: Sequence[int] | torch.Tensor,
    max_new_tokens: int,
    tree: Tree | DynamicTree,
    sampling: SamplingConfig = SamplingConfig(),
    draft_sampling: SamplingConfig | None = None,
    seed: int | None = 0,
    stop_tokens: Sequence[int] = (),
    topk: int = 5,
) -> Iterator[TreeRoundEvent]:
    """Tree speculative decoding: per round, fill `tree` with the draft's choices and verify it in one target pass.

    ``drafter`` is a TreeProposer or a pair's drafter (a ModelDrafter or an EagleDrafter: :func:`tree_drafter_for`).
    Greedy (temperature 0) walks by argmax and equals greedy decoding; otherwise the recursive rejection emits
    exactly the target's law. Near the end the tree is cut to the depths still wanted. A DynamicTree is grown
    each round from the draft's own probabilities (EAGLE-2), its size chosen from the device's v(T).
    Arguments are validated when called (ValueError).
    """
    if not isinstance(tree, (Tree, DynamicTree)):
        raise ValueError(f"tree must be a specdec_core.trees.Tree or a DynamicTree; got {type(tree).__name__}")
    td = tree_drafter_for(drafter)
    check_tree_model(target, "target")
    dsamp = check_pair_sampling(target, td, sampling, draft_sampling)
    nodes = tree.budget if isinstance(tree, DynamicTree) else tree.n_nodes
    context = min(target.max_seq_len, td.max_seq_len) - nodes  # room for the tree's pass
    ids = check_prompt_and_length(prompt_ids, max_new_tokens, context).to(target.device)
    return stepwise_inference(_tree_body(target, td, ids, max_new_tokens, tree, sampling, dsamp, seed,
                                          set(stop_tokens), topk))


def _tree_body(target: DecoderLM, drafter: TreeProposer, ids: torch.Tensor, max_new_tokens: int,
               tree: Tree | DynamicTree,
               sampling: SamplingConfig, dsamp: SamplingConfig, seed: int | None, stops: set[int], topk: int,
               ) -> Iterator[TreeRoundEvent]:
    """The tree loop (arguments already validated): rounds until max_new_tokens or a stop token."""
    gen = make_generator(seed, target.device)
    pending, prefill_s = prefill(target, drafter, ids)  # type: ignore[arg-type]
    produced, r = 0, 0
    while produced < max_new_tokens:
        left = max_new_tokens - produced - 1  # never draft past the requested length
        shape = tree.limited(left) if isinstance(tree, DynamicTree) else prune(tree, left)
        rd = tree_round(target, drafter, pending, shape, sampling, dsamp, gen)
        shape = rd.draft.tree  # the shape drafted (chain(0) when the draft had nothing to draft from)
        emitted, kinds, stopped = cut_at_stop(rd.emitted, rd.kinds, stops)
        pending = torch.tensor([rd.next_token], dtype=torch.long, device=target.device)
        produced += len(emitted)
        n = shape.n_nodes
        idx = torch.arange(n, device=rd.p.device)
        parent_row = torch.tensor([par + 1 for par in shape.parent], dtype=torch.long, device=rd.p.device)
        p_x = rd.p[parent_row, rd.draft.tokens].tolist() if n else []
        q_x = rd.draft.q[idx, rd.draft.tokens].tolist() if n else []
        on_path = set(rd.path)
        yield TreeRoundEvent(
            round=r, drafted=rd.draft.tokens.tolist(), q_x=q_x, p_x=p_x, uniforms=rd.uniforms,
            accept_mask=[j in on_path for j in range(n)], n_accepted=len(rd.path), emitted=emitted, kinds=kinds,
            draft_s=rd.draft_s, verify_s=rd.verify_s, prefill_s=prefill_s if r == 0 else 0.0,
            p_top=top_n(rd.p[[0] + [j + 1 for j in rd.path]], topk), q_top=[], gamma=int(shape.depth.max(initial=0)),
            greedy=sampling.greedy, kv_target=target.cache_len, kv_draft=drafter.model.cache_len,
            parent=list(shape.parent), rank=list(shape.rank), path=rd.path, tried=rd.tried,
        )
        r += 1
        if stopped:
            return
