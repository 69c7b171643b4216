"""The trees page's token-tree section: per-rank acceptance and the tree's shape, E[N] against the chain, what the
tree costs under the step-time model against batch, and the goodput of a batched server."""

from __future__ import annotations

import numpy as np
import streamlit as st

from specdec_core import roofline, steptime, trees
from specdec_core.tree_cost import HEAD_PASS, TreeVsChain
from ui.chart_wire import charts_last
from ui.controls import bound_radio, bound_select, bound_text, slider_input
from ui.presenter import show
from ui.trees import assumptions
from ui.trees import data as data
from ui.trees.data import BATCH
from ui.trees.multidraft import refuse


def tree_controls(p: np.ndarray, q: np.ndarray) -> tuple[trees.Tree, np.ndarray, str]:
    """Per-rank acceptance and the tree's shape -> (tree, rates, description)."""
    left, right = st.columns(2, gap="large")
    try:
        with left:
            src = bound_radio("Per-rank acceptance a_r", ["pair", "typed"], key="src", default="pair",
                              format_func={"pair": "from the pair above", "typed": "typed"}.get)
            if src == "pair":
                rates = data.rank_rates(p, q)
                st.caption("a_r = P(the rank-r candidate is the one kept), the exact rule without replacement on "
                           "the pair above: " + ", ".join(f"{a:.3f}" for a in rates))
            else:
                rates = trees.parse_rates(bound_text("a_1, a_2, ... (sum at most 1)", "rates", "0.6, 0.15, 0.06, 0.03"))
        with right:
            shape = bound_radio("Tree shape", ["budget", "optimal", "branching"], key="shape", default="budget",
                                format_func=assumptions.shape_label)
            if shape in ("budget", "optimal"):
                budget = slider_input("node budget N", "budget", 1, trees.MAX_NODES, 25, 1,
                                      help="Greedy: each node goes to the open slot with the highest P(path kept), "
                                           "one static tree for every context (EAGLE-2 re-ranks per context). "
                                           "Optimal: a dynamic programme over depth, nodes and rank.")
                if shape == "optimal":
                    return (
                        assumptions.optimal_for(tuple(map(float, rates)), int(budget)),
                        rates,
                        f"best {budget}-node tree",
                    )
                if note := assumptions.greedy_note(rates, int(budget)):
                    st.caption(note)
                return trees.greedy_tree(rates, int(budget)), rates, f"{budget} nodes placed greedily"
            text = bound_text("children per node at depth 1, 2, ...", "branching", "3, 2, 1")
            b = trees.parse_ints(text, "branching")
            return trees.branching_tree(b), rates, "branching " + ", ".join(map(str, b))
    except ValueError as exc:
        refuse(
            exc,
            f"Rates: 1 to {trees.MAX_RANK} numbers in [0, 1] summing to at most 1. Branching: 1 to "
            f"{trees.MAX_DEPTH} whole numbers from 1 to {trees.MAX_RANK}, at most {trees.MAX_NODES} nodes in all.",
        )


@st.fragment
@charts_last()
def tree_section(p: np.ndarray, q: np.ndarray) -> None:
    """E[N] of the learner's tree against the chain, its cost and speedup against batch, and the goodput."""
    tree, rates, label = tree_controls(p, q)
    e_n = trees.expected_accepted_length(tree, rates)
    gamma = min(tree.n_nodes, trees.MAX_DEPTH)
    e_chain = trees.expected_accepted_length(trees.chain(gamma), rates)
    cols = st.columns(4)
    cols[0].metric("draft nodes", f"{tree.n_nodes}", help=f"depth {int(tree.depth.max()) if tree.n_nodes else 0}")
    cols[1].metric("E[N], tree", f"{e_n:.3f}")
    cols[2].metric(
        f"E[N], chain of {gamma}",
        f"{e_chain:.3f}",
        help=f"the same budget, capped at {trees.MAX_DEPTH} (the deepest tree allowed)",
    )
    cols[3].metric("tokens in the verify pass", f"{trees.verify_tokens(tree)}")
    st.latex(r"E[N]=1+\sum_{j\in\text{tree}}\ \prod_{i\in\text{path}(j)} a_{\mathrm{rank}(i)}")
    assumptions.assumptions_panel(tree, rates)
    show(data.tree_figure(tree, trees.path_probabilities(tree, rates), f"The tree: {label}"), key="fig_tree")
    st.subheader("What the tree costs, and what it buys")
    c1, c2, c3 = st.columns(3)
    with c1:
        target = bound_select("Target", list(steptime.SHAPES), key="target", default="Llama-3.1-8B")
        draft = bound_select("Draft", list(steptime.SHAPES), key="draft", default="Llama-3.2-1B (draft)")
    with c2:
        hw = bound_select("Hardware", list(roofline.HARDWARE), key="hw", default="H100 SXM")
        mode = bound_select(
            "Precision", list(roofline.MODES), key="mode", default="bf16", format_func=roofline.MODE_LABELS.get
        )
    with c3:
        context = int(bound_select("Context L (tokens)", data.CONTEXTS, key="ctx", default=data.CONTEXT_DEFAULT))
        batch = slider_input("batch B", "batch", 1, 1024, 1, 1)
    draft_pass, drafter = assumptions.draft_pass_control()
    try:
        r = data.cost_data(tree, rates, target, draft, hw, mode, context, draft_pass, drafter)
        roof = r if draft_pass is None else data.cost_data(tree, rates, target, draft, hw, mode, context, None)
        heads = [(c, data.cost_data(tree, rates, target, draft, hw, mode, context, c)) for c in HEAD_PASS]
    except ValueError as exc:
        refuse(exc, "Pick a precision this hardware supports and a context the models allow.")
    i = int(np.argmin(np.abs(BATCH - batch)))
    cols = st.columns(5)
    cols[0].metric("draft cost c_tree", f"{r.tree.c_tree[i]:.3f}", help="all draft passes, in target decode steps")
    cols[1].metric("verify cost v", f"{r.tree.v[i]:.3f}", help=f"{trees.verify_tokens(tree)} tokens vs 1")
    cols[2].metric("speedup, tree", f"{r.tree.speedup[i]:.2f}x")
    cols[3].metric(f"speedup, chain of {gamma}", f"{r.chain.speedup[i]:.2f}x")
    cols[4].metric(f"best chain: gamma {int(r.best_gamma[i])}", f"{r.best_speedup[i]:.2f}x")
    st.caption(
        f"At B = {int(BATCH[i])}, {target} verified by a {draft} draft on {hw}, context {context:,}. "
        "The step-time model of the roofline page prices every pass: speedup = E[N] / (c_tree + v). "
        + assumptions.draft_pass_caption(draft_pass, int(tree.depth.max()) if tree.n_nodes else 0, drafter)
    )
    st.caption(
        assumptions.head_words(
            (float(roof.tree.speedup[i]), float(roof.best_speedup[i])),
            [(c, float(h.tree.speedup[i]), float(h.best_speedup[i])) for c, h in heads],
            int(BATCH[i]),
        )
    )
    if warn := assumptions.hbm_warning(target, draft, hw, mode, context, int(BATCH[i])):
        st.warning(warn)
    curves = {"tree": r.tree.speedup, f"chain of {gamma}": r.chain.speedup, "best chain (gamma per B)": r.best_speedup}
    show(data.against_batch_figure(BATCH, curves, "Speedup against batch", "speedup (x)", BATCH[i]), key="fig_speedup")
    where = (
        "the tree stays ahead of the best chain at every batch up to 1,024"
        if r.tree_loses_from is None
        else f"the best chain catches up with the tree from about B = {r.tree_loses_from:.0f}"
    )
    st.markdown(
        f"A tree spends idle compute: at small batch the verify pass is memory-bound, so checking "
        f"{trees.verify_tokens(tree)} tokens costs about as much as checking one, and the extra branches are almost "
        f"free acceptance. As the batch grows the pass becomes compute-bound, v grows with the node count, and "
        f"{where}. Low acceptance favours trees (a second guess is often right); a draft that is almost always "
        "right needs only a chain."
    )
    st.subheader("Throughput, not just latency")
    goodput_section(r, i)


def goodput_section(r: TreeVsChain, i: int) -> None:
    """Goodput against throughput for a batched server, and why engines shorten gamma or switch off."""
    t = r.tree
    cols = st.columns(4)
    cols[0].metric("plain decoding, tokens/s", f"{t.plain_tps[i]:,.0f}")
    cols[1].metric("tree: output tokens/s (goodput)", f"{t.goodput_tps[i]:,.0f}")
    cols[2].metric("tree: positions verified per s", f"{t.verified_tps[i]:,.0f}")
    cols[3].metric(
        "verify positions on rejected tokens", f"{100 * t.wasted_fraction:.0f}%", help="1 - E[N] / (nodes + 1)"
    )
    left, right = st.columns(2)
    curves = {
        "plain decoding": t.plain_tps,
        "tree (goodput)": t.goodput_tps,
        "best chain (goodput)": r.best_goodput_tps,
    }
    show(
        data.against_batch_figure(
            BATCH, curves, "Output tokens per second, whole server", "tokens/s", BATCH[i], one_line=False, log_y=True
        ),
        key="fig_goodput",
        where=left,
    )
    show(data.best_gamma_figure(BATCH, r.best_gamma, BATCH[i]), key="fig_best_gamma", where=right)
    st.markdown(
        "A server is judged by output tokens per second across all its sequences. Speculation makes the target "
        "compute positions that are then thrown away: here the verify pass computes "
        f"{t.n_nodes + 1} positions per sequence per round and keeps {t.e_n:.2f} of them. While the GPU waits on "
        "memory that work is free; once the batch alone keeps the tensor cores busy, every rejected position "
        "displaces another sequence's useful token. That is why engines shorten gamma as the batch grows and "
        f"switch speculation off when no gamma beats 1. {switch_off_text(r)}"
    )


def switch_off_text(r: TreeVsChain) -> str:
    """What the best-gamma chart shows at these settings, in words."""
    first, last = int(r.best_gamma[0]), int(r.best_gamma[-1])
    if r.off_from is not None:
        return (
            f"Here the best chain shortens from gamma {first} at B = 1 and speculation is switched off "
            f"(gamma = 0) from about B = {r.off_from:.0f}."
        )
    return (
        f"Here the best chain shortens from gamma {first} at B = 1 to gamma {last} at B = 1,024 without reaching "
        "0: with this context each sequence's KV-cache reads keep attention memory-bound, so extra verified "
        "tokens stay cheap. A shorter context or a lower acceptance can switch it off."
    )
