"""The trees page's stated assumptions: positional acceptance and its depth decay, the optimal tree against the
static greedy one, the draft's cost per pass, HBM capacity, and the optimal coupling's bound for k drafts.

Numbers come from specdec_core (trees, tree_optimal, coupling, steptime); this module lays them out.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from specdec_core import h200_run, roofline, steptime, tree_cost, trees
from specdec_core.coupling import optimal_acceptance
from specdec_core.tree_optimal import MAX_DEPTH_FACTOR, expected_length_with_depth_decay, optimal_tree
from ui.controls import bound_radio, slider_input

MODELLED, FIXED, MEDUSA = "modelled", "fixed", "medusa"
LOSSLESS = ("Exact means the emitted law is the target's, in exact arithmetic. In floating point a verify pass "
            "sums in another order than a one-token step, so near-ties can flip: the guarantee is the "
            "distribution: in vLLM's docs' words, \"theoretically lossless up to the precision limits of hardware "
            "numerics\".")


@st.cache_data(max_entries=64, show_spinner=False)
def optimal_for(rates: tuple[float, ...], budget: int) -> trees.Tree:
    """The best tree of at most `budget` nodes for these rates (cached: the programme takes up to ~0.2 s)."""
    return optimal_tree(np.asarray(rates), budget)


def ot_caption(p: np.ndarray, q: np.ndarray, k: int, iid_k: float) -> str:
    """Words beside the multi-draft metrics: the best any exact verifier of k i.i.d. drafts accepts."""
    best = optimal_acceptance(p, q, k)
    return (f"Exact is not optimal: the best any exact verifier of {k} i.i.d. drafts from q can accept is "
            f"{best:.4f} (the optimal coupling's subset bound, Hu et al., ICLR 2025: a minimum over token sets that "
            "is reached on a prefix of the tokens sorted by p/q, so it costs O(V log V) and runs at a real "
            f"vocabulary such as SmolLM2's 49,152), against {iid_k:.4f} for recursive rejection. "
            "Drawing the candidates without replacement (Sequoia, Chen et al. 2024) changes what is drafted, "
            "so it can beat that bound for i.i.d. drafts.")


DRIFT_RUN = ("smollm2-eagle", "T=1", 3)     # the H200 run's EAGLE head at T = 1, gamma 3: acceptance by position


def drift_caption() -> str:
    """Positional acceptance stated, and that drift with depth is not general (the H200 run's rates by position)."""
    by_pos = " / ".join(f"{a:.2f}" for a in h200_run.alpha_by_position(*DRIFT_RUN))
    return ("Assumed: every rank-r child is kept with the same a_r at every depth and on every path (Sequoia's "
            "positional acceptance). Drafts often drift from the target as they go deeper, but not always: the "
            f"H200 run's SmolLM2 EAGLE head (T = 1, gamma = 3) accepted {by_pos} by position. A factor below 1 "
            "models drift, above 1 a draft that agrees more once a phrase is under way.")


def assumptions_panel(tree: trees.Tree, rates: np.ndarray) -> None:
    """Positional acceptance stated, and E[N] when deeper levels accept less or more."""
    st.caption(drift_caption())
    decay = slider_input("acceptance factor per level (below 1: deeper levels accept less)", "decay", 0.5,
                         min(1.5, MAX_DEPTH_FACTOR), 1.0, 0.05, "%.2f",
                         help="a_r at depth d becomes a_r x factor^(d - 1), clipped to [0, 1]; 1 is the "
                              "positional model")
    if float(decay) != 1.0:
        full = trees.expected_accepted_length(tree, rates)
        decayed = expected_length_with_depth_decay(tree, rates, float(decay))
        st.metric(f"E[N] with acceptance x {float(decay):.2f} per level", f"{decayed:.3f}",
                  f"{decayed - full:+.3f} against the positional model", delta_color="off")


def draft_pass_control() -> tuple[float | None, str]:
    """(None: the step-time model prices each draft pass, else every pass's cost in target decode steps; drafter)."""
    how = bound_radio("Draft pass cost", [MODELLED, FIXED, MEDUSA], key="dcost", default=MODELLED,
                      format_func={MODELLED: "modelled (the draft's shape on this hardware, one pass per depth)",
                                   FIXED: "fixed per pass, one pass per depth (EAGLE head, or a separate model)",
                                   MEDUSA: "fixed per pass, one pass per tree (Medusa heads)"}.get)
    if how == MODELLED:
        return None, tree_cost.PER_DEPTH
    cost = float(slider_input("one draft pass, in target decode steps", "dpass", 0.0, 1.0, 0.3, 0.01, "%.2f"))
    return cost, (tree_cost.PER_TREE if how == MEDUSA else tree_cost.PER_DEPTH)


def draft_pass_caption(draft_pass: float | None, depth: int, drafter: str = tree_cost.PER_DEPTH) -> str:
    """Why a tree's win rests on a cheap draft pass, and how many passes this drafter pays."""
    if draft_pass is None:
        return ("A tree of depth d costs d draft passes per round. Trees pay with heads whose passes are nearly "
                "free: an EAGLE head runs one cheap pass per depth, and Medusa's heads propose every depth in one "
                "pass; with a separate draft model, try a fixed cost per pass.")
    if drafter == tree_cost.PER_TREE:
        return (f"Medusa's heads read the target's last hidden state and propose all {depth} depths at once: one "
                f"draft pass of {draft_pass:.2f} target steps per round, for the tree and for every chain.")
    return (f"Each of the tree's {depth} draft passes costs {draft_pass:.2f} target steps: "
            f"{depth * draft_pass:.2f} per round before verification (EAGLE or a separate model: one pass per depth).")


def head_words(by_roofline: tuple[float, float], heads: list[tuple[float, float, float]], batch: int) -> str:
    """The same tree priced two ways: the roofline's 1B draft, and an EAGLE-class head at HEAD_PASS steps a pass."""
    span = " and ".join(f"{tree:.2f}x against {chain:.2f}x at {c:.2f} steps per pass" for c, tree, chain in heads)
    return (f"At B = {batch}, priced by the roofline (a separate draft model), this tree gives {by_roofline[0]:.2f}x "
            f"against the best chain's {by_roofline[1]:.2f}x. With an EAGLE-class head (one pass per depth) it gives "
            f"{span}.")


def hbm_warning(target: str, draft: str, hw: str, mode: str, context: int, batch: int) -> str | None:
    """A warning where target + draft weights and KV outgrow one device's memory on the batch axis, else None."""
    lim = steptime.max_batch_in_memory(
        roofline.HARDWARE[hw], steptime.SHAPES[target], steptime.SHAPES[draft], mode, context
    )
    if lim is None or lim >= 1024:
        return None
    if lim < 1:
        return (
            f"The weights alone exceed {hw}'s {roofline.HARDWARE[hw].memory_gb:g} GB: these curves are one device's "
            "roofline for a pair that needs several."
        )
    here = f" B = {batch} does not fit." if batch > lim else ""
    return (
        f"One {hw} holds target, draft and their KV at context {context:,} only up to about B = {lim:.0f}; "
        f"past it the curves are hypothetical.{here}"
    )


def shape_label(shape: str) -> str:
    """The tree-shape radio's words."""
    return {
        "budget": "node budget, static greedy",
        "optimal": "node budget, optimal (any rates)",
        "branching": "branching per depth",
    }[shape]


def greedy_note(rates: np.ndarray, budget: int) -> str | None:
    """When the static greedy tree is not the best of its size, how far it falls short; None where it is optimal."""
    g = trees.expected_accepted_length(trees.greedy_tree(rates, budget), rates)
    o = trees.expected_accepted_length(optimal_for(tuple(float(a) for a in rates), budget), rates)
    if o - g <= 1e-9:
        return None
    return (
        f"The greedy tree gives E[N] = {g:.3f}; the best tree of {budget} nodes gives {o:.3f}. Greedy is "
        "optimal only when acceptance does not rise with rank, because a rank-r child needs ranks 1..r-1 "
        "beside it."
    )
