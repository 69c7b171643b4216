"""What a draft tree costs under the step-time model, and what speculation costs a batched server.

One round with a tree of n nodes: the draft runs one pass per depth d over the w_d nodes at depth d - 1
that get children (a chain: gamma passes of one token each), and the target verifies the n + 1 tokens
(the root and every node) in one pass. In target decode steps, with t(B, T) the time of a pass of B
sequences x T new tokens (``steptime.step_time``):
    c_tree = sum_d t_draft(B, w_d) / t_target(B, 1),   v = t_target(B, n + 1) / t_target(B, 1),
    speedup = E[N] / (c_tree + v).
A chain of gamma gives c_tree = gamma c and v = v(gamma), as ``steptime.spec_curve`` does. That is how an
autoregressive drafter runs (a separate draft model, or an EAGLE head fed its own features: one pass per depth).
Medusa's heads read the target's last hidden state and propose every depth at once: one draft pass per tree
(or chain), whatever its depth.

Serving: each round the target computes n + 1 positions per sequence and E[N] of them become output.
Goodput is B E[N] / t_round tokens per second, against B / t_target(B, 1) without speculation; the other
(n + 1) - E[N] positions are compute spent on rejected tokens.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specdec_core import steptime
from specdec_core.roofline import Hardware
from specdec_core.steptime import DecoderShape, check_batch
from specdec_core.trees import (
    MAX_DEPTH,
    Tree,
    chain,
    check_rates,
    draft_widths,
    expected_accepted_length,
    verify_tokens,
)

PER_DEPTH, PER_TREE = "per_depth", "per_tree"
HEAD_PASS = (0.03, 0.05)   # one pass of an EAGLE-class head, in target decode steps (one decoder layer + LM head)
DRAFTERS = {PER_DEPTH: "one draft pass per depth (EAGLE head, or a separate draft model)",
            PER_TREE: "one draft pass per tree (Medusa heads: every depth at once)"}


def draft_passes(tree: Tree, drafter: str = PER_DEPTH) -> int:
    """Draft passes per round: the tree's depth for an autoregressive drafter, 1 for Medusa heads (0 for no nodes)."""
    if drafter not in DRAFTERS:
        raise ValueError(f"unknown drafter {drafter!r}; known: {', '.join(DRAFTERS)}")
    depth = len(draft_widths(tree))
    return depth if drafter == PER_DEPTH else min(depth, 1)


def pass_time(shape: DecoderShape, hw: Hardware, mode: str, batch: ArrayLike, tokens: int,
              context: int) -> NDArray[np.float64]:
    """Seconds for one pass of B sequences x T new tokens at context L, from the step-time model."""
    return np.asarray(steptime.step_time(shape, hw, mode, batch, tokens, context).total_s, dtype=np.float64)


@dataclass(frozen=True)
class TreeCost:
    """One tree under the step-time model, against batch (arrays over the batch grid)."""

    batch: NDArray[np.float64]
    e_n: float                        # expected tokens per round, 1 + sum of path probabilities
    n_nodes: int
    decode_s: NDArray[np.float64]     # target, plain decode step
    draft_s: NDArray[np.float64]      # all draft passes of the round
    verify_s: NDArray[np.float64]     # target, n + 1 tokens per sequence
    c_tree: NDArray[np.float64]       # draft_s / decode_s
    v: NDArray[np.float64]            # verify_s / decode_s
    speedup: NDArray[np.float64]      # E[N] / (c_tree + v)
    plain_tps: NDArray[np.float64]    # B / decode_s: tokens per second without speculation
    goodput_tps: NDArray[np.float64]  # B E[N] / (draft_s + verify_s): output tokens per second
    verified_tps: NDArray[np.float64]  # B (n + 1) / (draft_s + verify_s): positions the target computes per second

    @property
    def wasted_fraction(self) -> float:
        """Share of the verify pass's positions that produce no output: 1 - E[N] / (n + 1)."""
        return 1.0 - self.e_n / (self.n_nodes + 1)


def tree_cost(tree: Tree, rates: ArrayLike, target: DecoderShape, draft: DecoderShape, hw: Hardware, mode: str,
              context: int, batch: ArrayLike, draft_pass: float | None = None, drafter: str = PER_DEPTH) -> TreeCost:
    """c_tree, v, speedup and the serving rates of one tree, for every batch in `batch`.

    draft_pass (target decode steps) prices every draft pass the same, whatever its width and the batch: a
    launch-bound draft (a separate small model at batch 1) or a head rather than the roofline's; None keeps the
    model's. drafter: PER_DEPTH (c_tree = depth x draft_pass) or PER_TREE (Medusa: c_tree = draft_pass), which
    needs a draft_pass, as Medusa's heads are not the draft model's shape.
    """
    b = check_batch(batch)
    n_passes = draft_passes(tree, drafter)
    if drafter == PER_TREE and draft_pass is None:
        raise ValueError("Medusa heads are priced per pass: give the draft pass's cost in target steps")
    e_n = expected_accepted_length(tree, rates)
    decode = pass_time(target, hw, mode, b, 1, context)
    verify = pass_time(target, hw, mode, b, verify_tokens(tree), context)
    if draft_pass is None:
        drafts = sum((pass_time(draft, hw, mode, b, int(w), context) for w in draft_widths(tree)),
                     np.zeros_like(decode))
    else:                                          # n_passes passes, each draft_pass target steps
        drafts = n_passes * steptime.check_draft_pass(draft_pass) * decode
    round_s = drafts + verify
    return TreeCost(
        batch=b, e_n=e_n, n_nodes=tree.n_nodes, decode_s=decode, draft_s=drafts, verify_s=verify,
        c_tree=drafts / decode, v=verify / decode, speedup=e_n * decode / round_s,
        plain_tps=b / decode, goodput_tps=b * e_n / round_s, verified_tps=b * verify_tokens(tree) / round_s,
    )


def best_chain_against_batch(a1: float, target: DecoderShape, draft: DecoderShape, hw: Hardware, mode: str,
                             context: int, batch: ArrayLike, max_gamma: int = 16,
                             draft_pass: float | None = None,
                             drafter: str = PER_DEPTH) -> tuple[NDArray, NDArray]:
    """(best gamma, its speedup) at each batch for a chain with acceptance a_1, v(gamma, B) re-priced per gamma;
    gamma = 0 means switching speculation off (speedup exactly 1); draft_pass and drafter as in tree_cost."""
    return steptime.best_gamma_against_batch(target, draft, hw, mode, a1, context, check_batch(batch), max_gamma,
                                             c=draft_pass, one_pass=drafter == PER_TREE)


def first_batch_not_above(first: ArrayLike, second: ArrayLike, batch: ArrayLike) -> float | None:
    """min{B on the grid : first(B) <= second(B)}; None if first stays above. (Not roofline.crossover_batch, the
    batch where verification's intensity meets the ridge.)"""
    below = np.flatnonzero(np.atleast_1d(first) <= np.atleast_1d(second))
    return None if below.size == 0 else float(np.atleast_1d(batch)[below[0]])


@dataclass(frozen=True)
class TreeVsChain:
    """A tree, the chain of the same budget (capped at MAX_DEPTH) and the best chain, against batch."""

    tree: TreeCost
    chain: TreeCost
    best_gamma: NDArray[np.int64]         # best chain length at each batch (0 = speculation off)
    best_speedup: NDArray[np.float64]
    best_goodput_tps: NDArray[np.float64]  # plain tokens/s x the best chain's speedup
    tree_loses_from: float | None         # smallest batch on the grid where the tree is not above the best chain
    off_from: float | None                # smallest batch on the grid where the best gamma is 0 (speculation off)


def tree_vs_chain(tree: Tree, rates: ArrayLike, target: DecoderShape, draft: DecoderShape, hw: Hardware, mode: str,
                  context: int, batch: ArrayLike, draft_pass: float | None = None,
                  drafter: str = PER_DEPTH) -> TreeVsChain:
    """The tree against a chain of its budget and against the best chain (acceptance a_1, gamma re-chosen per B);
    draft_pass and drafter price every draft pass of all three the same way (tree_cost)."""
    a = check_rates(rates)
    t = tree_cost(tree, a, target, draft, hw, mode, context, batch, draft_pass, drafter)
    c = tree_cost(chain(min(tree.n_nodes, MAX_DEPTH)), a, target, draft, hw, mode, context, batch, draft_pass,
                  drafter)
    gammas, best = best_chain_against_batch(float(a[0]), target, draft, hw, mode, context, t.batch,
                                            draft_pass=draft_pass, drafter=drafter)
    return TreeVsChain(t, c, gammas, best, t.plain_tps * best, first_batch_not_above(t.speedup, best, t.batch),
                       first_batch_not_above(gammas, 0, t.batch))
