"""The feature-level draft filling a token tree (EAGLE-2's idea on a fixed shape): one head pass per depth.

The same head and the same feature reuse as :class:`gpu_demo.models.eagle.EagleDrafter` (this module imports that
one, never the reverse), and the same first round: with no true feature yet (a 1-token prompt) it drafts nothing
(a ``chain(0)`` draft) and the target's step gives the first feature. A round starts by
feeding the slots that true target features completed (the root's law q comes from the last of them); a node at
depth d is the slot (g of its parent, its token) at position root + d, and sees the prefix, the root and its own
ancestors only (a tree mask), so siblings never see each other. All tree slots are rolled back after proposing.
After the verify pass, the target's rows for [root, accepted path] are true features: commit keeps them, paired
with the path's tokens and y, for the next round's first pass.

    slots fed per round:  [true pairs since last round] + one pass per depth over the nodes that get children
    q of a node's children: softmax(E_S g_node), zero outside S; children are the top b (greedy) or b draws without
    replacement (tree_draft.choose_children, over S's n_out ids, as the chain's draw), which the recursive rejection
    in tree_decode needs.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from gpu_demo.models.eagle import EagleDrafter
from gpu_demo.sampler import SamplingConfig
from gpu_demo.tree_draft import TreeDraft, TreeProposer, choose_children, draft_plan, grow_dynamic
from specdec_core.dynamic_tree import DynamicTree
from specdec_core.trees import Tree
from specdec_core.trees import chain as chain_tree


class EagleTreeDrafter(TreeProposer):
    """Fills a token tree with an EAGLE-style head; shares the chain drafter's head and feature bookkeeping."""

    def __init__(self, chain: EagleDrafter, name: str | None = None) -> None:
        super().__init__(chain.head, name or chain.name, chain.vocab_size, chain.max_seq_len)  # model: the head
        self.chain, self.head, self.target = chain, chain.head, chain.target

    def begin(self, prompt: torch.Tensor) -> None:
        """As the chain drafter (after the target's prefill of prompt[:-1])."""
        self.chain.begin(prompt)

    def propose(self, tree: Tree | DynamicTree, sampling: SamplingConfig, generator: torch.Generator | None
                ) -> TreeDraft:
        """Fill `tree` depth by depth: children of the nodes fed last are chosen from the laws after them.
        A DynamicTree is grown from the head's own probabilities instead (EAGLE-2: tree_draft.grow_dynamic)."""
        if not self.chain.has_pairs():  # no true feature yet (1-token prompt): draft nothing, as the chain does
            tree = chain_tree(0)
        if isinstance(tree, DynamicTree):
            return self._grow(tree)
        n, dev, V = tree.n_nodes, self.head.device, self.vocab_size
        tokens, q = torch.zeros(n, dtype=torch.long, device=dev), torch.zeros(n, V, device=dev)
        if n == 0:  # nothing to draft: the true pairs wait for the next round
            self._draft = TreeDraft(tree, tokens, q)
            return self._draft
        feats, toks = self.chain.take_pairs()  # (1, m, C) true features f_{j-1}, (1, m) x_j
        stable = self.head.cache_len + toks.shape[1]  # slots built from true features only; the root's is last
        g = self.head(feats, toks)[0, -1:]  # (1, C): the root's g
        for d, st in enumerate(draft_plan(tree), start=1):  # g: the nodes fed last, in feed order
            x, qs = choose_children(self.head.sub_logits(g), st.b, sampling, generator, V, self.head.out_ids)
            tokens[st.nodes], q[st.nodes] = x[st.rows, st.cols], qs[st.rows, st.cols]
            if not st.fed:
                break
            row = dict(zip(st.nodes, st.rows))  # node -> its parent's row in g
            parents = g[[row[j] for j in st.fed]].unsqueeze(0)  # (1, w, C)
            pos = torch.full((len(st.fed),), stable - 1 + d, dtype=torch.long, device=dev)
            g = self.head(parents, tokens[list(st.fed)].view(1, -1), pos, st.mask.to(dev))[0]  # (w, C)
        self.head.rollback(stable)
        self._draft = TreeDraft(tree, tokens, q)
        return self._draft

    def _grow(self, spec: DynamicTree) -> TreeDraft:
        """EAGLE-2's dynamic tree: the root's g, then one head pass per depth over the beam, parents' g as input."""
        dev, V = self.head.device, self.vocab_size
        if spec.depth == 0 or spec.budget == 0:
            self._draft = TreeDraft(chain_tree(0), torch.zeros(0, dtype=torch.long, device=dev),
                                    torch.zeros(0, V, device=dev))
            return self._draft
        feats, toks = self.chain.take_pairs()  # (1, m, C) true features f_{j-1}, (1, m) x_j
        stable = self.head.cache_len + toks.shape[1]
        g = [self.head(feats, toks)[0, -1:]]  # g[0]: (1, C) the root's; then the beam's, one (w, C) per depth

        def expand(tokens: torch.Tensor, rows: list[int], mask: torch.Tensor, d: int) -> torch.Tensor:
            pos = torch.full((tokens.numel(),), stable - 1 + d, dtype=torch.long, device=dev)
            g.append(self.head(g[-1][rows].unsqueeze(0), tokens.view(1, -1), pos, mask)[0])  # (w, C)
            return self.head.sub_logits(g[-1])  # (w, n_out): column k is token out_ids[k]

        grown = grow_dynamic(self.head.sub_logits(g[0]), spec, expand, V, self.head.out_ids)
        self.head.rollback(stable)
        self._draft = grown.draft
        return self._draft

    def commit(self, path: Sequence[int], next_token: int) -> None:
        """Keep the target's features of the root and the path (its tree-ordered verify rows) with path, y."""
        if self._draft is None:
            raise RuntimeError("commit before propose")
        nxt = torch.tensor([next_token], dtype=torch.long, device=self.head.device)
        rows = [0] + [j + 1 for j in path]  # the verify pass's rows: root, then the nodes in tree order
        h = self.target.last_hidden
        if h is None or h.shape[1] <= max(rows):
            raise RuntimeError("the target's last forward did not keep the hidden states this draft reads")
        if self._draft.tree.n_nodes == 0:  # the root was verified alone: its feature pairs with y
            rows = [0]
        feats = self.target.norm(h[0, rows]).to(self.head.dtype)  # (n + 1, C)
        self.chain.add_pairs(feats, torch.cat([self._draft.tokens[list(path)], nxt]))
