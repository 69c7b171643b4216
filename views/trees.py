"""Trees and multi-draft: exact multi-candidate verification, Medusa's typical acceptance, token trees, goodput."""

from __future__ import annotations

import numpy as np
import streamlit as st

from specdec_core import proof_cases as pc
from specdec_core import roofline as rl
from specdec_core import steptime as stp
from specdec_core import trees as tr
from specdec_core import typical as ty
from specdec_core.mistakes import RuleCheck
from specdec_core.multidraft import (
    IID,
    NO_UPDATE,
    RULES,
    WOR,
    WOR_RATIO_Q,
    acceptance_by_k,
    check_multidraft,
    exhaustive_multidraft_check,
    multidraft_distribution,
)
from specdec_core.rejection import MAX_DRAWS
from specdec_core.tree_cost import TreeVsChain, tree_vs_chain
from ui import trees_assumptions as ta
from ui import trees_figures as figs
from ui.controls import bound_radio, bound_select, bound_text, slider_input
from ui.safe_text import md

V_PAGE, K_PAGE = 16, 5            # page limits: the without-replacement law enumerates V^k cells
DRAW_BUDGET = 60_000              # candidate draws (k per position) one sampled check may make: ~0.4 s at V 16, k 5
PRESETS = [name for name in pc.PRESETS if name != "identical"] + ["identical"]
WRONG = [NO_UPDATE, WOR_RATIO_Q]
BATCH = np.unique(np.round(np.geomspace(1, 1024, 121)))
CONTEXTS = ["256", "2048", "16384"]
CONTEXT_DEFAULT = "256"           # short prompts: the batch reaches the compute roof and speculation switches off


def pvalue_text(c: RuleCheck) -> str:
    """A p-value for the page; one that underflows is a bound, never an exact 0."""
    return f"{c.p_value:.3g}" if c.p_value > 0 else "< 1e-300"


def capped_draws(n: int, k: int) -> int:
    """The draws a sampled check makes: n, cut to DRAW_BUDGET / k (whole thousands, at least 1,000)."""
    return min(n, max(1_000, DRAW_BUDGET // k // 1_000 * 1_000))


def check_rows(checks: list[RuleCheck]) -> list[dict]:
    """One table row per rule: exact distance from p and the sampled verdict."""
    return [{"rule": c.label, "max |law - p|": f"{c.max_error:.2e}", "TV(law, p)": f"{c.tv_to_p:.4f}",
             "kept": f"{c.kept:.3f}", "chi-square": f"{c.stat:.1f}" if np.isfinite(c.stat) else "infinite",
             "dof": c.dof, "p-value": pvalue_text(c),
             "verdict at 0.001": "rejects p" if c.p_value < 1e-3 else "consistent with p"} for c in checks]


@st.cache_data(max_entries=32)
def multidraft_data(p: np.ndarray, q: np.ndarray, k: int, wrong: str) -> dict:
    """Acceptance against k for both exact rules, the laws at k, and the wrong variant's law."""
    return {"iid": acceptance_by_k(p, q, K_PAGE, IID), "wor": acceptance_by_k(p, q, K_PAGE, WOR),
            "law_iid": multidraft_distribution(p, q, k, IID)[0], "law_wor": multidraft_distribution(p, q, k, WOR)[0],
            "law_wrong": multidraft_distribution(p, q, k, wrong)[0]}


@st.cache_data(max_entries=32)
def sampled(p: np.ndarray, q: np.ndarray, k: int, n: int, seed: int) -> list[RuleCheck]:
    """Every multi-draft rule sampled n times and tested against p."""
    return [check_multidraft(p, q, k, rule, n, seed) for rule in RULES]


@st.cache_data
def exhaustive() -> dict[str, dict[str, float]]:
    """10,000 random pairs through each exact rule: i.i.d. with k = 4 (V up to 49), without replacement k = 3 (V up
    to 10, the enumeration's size)."""
    p, q, _ = pc.random_pairs(10_000, seed=0)
    p10, q10, _ = pc.random_pairs(10_000, seed=1, v_hi=10)
    return {"iid": exhaustive_multidraft_check(p, q, 4, IID), "wor": exhaustive_multidraft_check(p10, q10, 3, WOR)}


@st.cache_data(max_entries=32)
def typical_data(p: np.ndarray, q: np.ndarray, k: int, eps: float, delta: float, cand: str, vary: str,
                 n: int, seed: int) -> dict:
    """Typical acceptance's exact law, its TV curve, and its sampled check beside the exact rule's."""
    grid = np.linspace(0.0, 1.0, 101)
    tv, acc = ty.tv_curve(p, q, k, grid, vary, eps, delta, cand)
    return {"law": ty.typical_distribution(p, q, k, eps, delta, cand), "grid": grid, "tv": tv, "acc": acc,
            "exact_acc": float(acceptance_by_k(p, q, k, IID)[-1]),
            "checks": [check_multidraft(p, q, k, IID, n, seed), ty.check_typical(p, q, k, n, eps, delta, cand, seed)]}


@st.cache_data(max_entries=32)
def cost_data(tree: tr.Tree, rates: np.ndarray, target: str, draft: str, hw: str, mode: str,
              context: int, draft_pass: float | None) -> TreeVsChain:
    """The tree against the chains, under the step-time model (draft passes at a fixed cost if given)."""
    return tree_vs_chain(tree, rates, stp.SHAPES[target], stp.SHAPES[draft], rl.HARDWARE[hw], mode, context, BATCH,
                         draft_pass)


def refuse(exc: ValueError, what: str) -> None:
    """A refused input, in words, and the page stops there."""
    st.warning(f"**Input refused:** {md(str(exc), 300)}. {what}")
    st.stop()


def pair_controls() -> tuple[np.ndarray, np.ndarray, int]:
    """The (p, q) pair at one position and the number of candidates k."""
    left, right = st.columns(2, gap="large")
    with left:
        case = bound_select("Case", PRESETS, key="case", default="q_sharper",
                            format_func=lambda s: pc.PRESETS[s])
        v = slider_input("vocabulary size V", "vocab", 2, V_PAGE, 10, 1)
    with right:
        k = slider_input("candidates k at this position", "k", 1, K_PAGE, 3, 1,
                         help="SpecInfer-style: k candidate tokens verified one after another.")
        seed = slider_input("seed", "seed", 0, 9999, 0, 1) if case == "dirichlet" else 0
    p, q = pc.preset_pair(case, int(v), int(seed))
    return p, q, int(k)


def multidraft_section(p: np.ndarray, q: np.ndarray, k: int) -> tuple[int, int]:
    """Acceptance against k, the laws, the sampled check and the 10,000-pair check; returns (draws used, seed)."""
    wrong = bound_radio("Wrong variant to show", WRONG, key="wrong", default=NO_UPDATE, format_func=RULES.get)
    d = multidraft_data(p, q, k, wrong)
    cols = st.columns(4)
    cols[0].metric("alpha, one candidate", f"{d['iid'][0]:.4f}")
    cols[1].metric(f"acceptance, k = {k} i.i.d.", f"{d['iid'][k - 1]:.4f}")
    cols[2].metric(f"acceptance, k = {k} without replacement", f"{d['wor'][k - 1]:.4f}")
    err = max(np.abs(d["law_iid"] - p).max(), np.abs(d["law_wor"] - p).max())
    cols[3].metric("max |emitted - p|, exact rules", f"{err:.1e}")
    st.caption(ta.ot_caption(p, q, k, float(d["iid"][k - 1])))
    left, right = st.columns(2)
    ks = np.arange(1, K_PAGE + 1)
    left.plotly_chart(figs.acceptance_k_figure(ks, {"i.i.d. from q": d["iid"], "without replacement": d["wor"]}, k),
                      key="fig_acc_k")
    right.plotly_chart(figs.laws_figure(p, q, {"exact rule's law (= p)": d["law_wor"], RULES[wrong]: d["law_wrong"]},
                                        f"Emitted laws with k = {k}"), key="fig_laws")
    st.latex(r"x_i\sim q_i,\quad \text{keep w.p. }\min\!\Big(1,\frac{r_{i-1}(x_i)}{q_i(x_i)}\Big),\quad "
             r"r_0=p,\quad r_i=\frac{(r_{i-1}-q_i)_+}{\lVert(r_{i-1}-q_i)_+\rVert_1},\quad "
             r"\text{all rejected: }y\sim r_k")
    st.markdown(
        "Each step is the single-draft rule with target r and proposal q_i, so it emits r exactly; the whole "
        "chain of steps emits p. Without replacement, q_i is q with the earlier candidates removed and "
        "renormalised, and a rejected token (r = 0 there) is never proposed again, so acceptance grows faster. "
        "SpecTr (Sun et al., 2023) asks which multi-draft rule accepts most; this one is simple and exact.")
    c1, c2 = st.columns(2, gap="large")
    with c1:
        n = slider_input("draws n", "n", 1_000, MAX_DRAWS, 20_000, 1_000)
    with c2:
        seed = slider_input("sampling seed", "sseed", 0, 9999, 0, 1)
    used = capped_draws(int(n), k)
    if used < n:
        st.caption(f"n = {int(n):,} asked; {used:,} drawn. With k = {k} a check makes at most "
                   f"{DRAW_BUDGET:,} candidate draws, which keeps one rerun on a shared server under a second.")
    st.dataframe(check_rows(sampled(p, q, k, used, int(seed))), hide_index=True, key="md_checks")
    r = exhaustive()
    cols = st.columns(3)
    cols[0].metric("random pairs", f"{int(r['iid']['pairs']):,}")
    cols[1].metric("max |emitted - p|, i.i.d., k = 4", f"{r['iid']['max_law_error']:.1e}")
    cols[2].metric("max |emitted - p|, without replacement, k = 3", f"{r['wor']['max_law_error']:.1e}")
    st.caption("p ~ Dirichlet(1), q ~ Dirichlet(0.3), zero-padded, one batched call per rule (V from 2 to 49 for "
               "i.i.d.; 2 to 10 without replacement, whose exact law enumerates V^k rejection paths). The errors "
               "are floating-point rounding.")
    return used, int(seed)


def typical_section(p: np.ndarray, q: np.ndarray, k: int, n: int, seed: int) -> None:
    """Medusa's typical acceptance: its law, its TV from p as a threshold moves, and the chi-square that rejects it."""
    c1, c2, c3 = st.columns(3, gap="large")
    with c1:
        eps = slider_input("epsilon (hard threshold)", "eps", 0.0, 1.0, ty.MEDUSA_EPSILON, 0.01, "%.2f")
    with c2:
        delta = slider_input("delta (entropy-scaled threshold)", "delta", 0.0, 1.0, ty.MEDUSA_DELTA, 0.01, "%.2f")
    with c3:
        cand = bound_radio("Candidates", list(ty.CANDIDATES), key="cand", default=ty.SAMPLED,
                           format_func=ty.CANDIDATES.get)
        vary = bound_radio("Curve against", ["delta", "epsilon"], key="vary", default="delta")
    d = typical_data(p, q, k, float(eps), float(delta), cand, vary, n, seed)
    law = d["law"]
    cols = st.columns(4)
    cols[0].metric("threshold tau", f"{law.tau:.4f}", help="min(epsilon, delta exp(-H(p))), H in nats")
    cols[1].metric("typical: P(kept)", f"{law.acceptance:.4f}")
    cols[2].metric("exact rule (i.i.d.): P(kept)", f"{d['exact_acc']:.4f}")
    cols[3].metric("TV(typical law, p)", f"{law.tv_to_p:.4f}")
    st.latex(r"\text{keep } x \text{ if } p(x) > \tau=\min\!\big(\epsilon,\ \delta\, e^{-H(p)}\big),"
             r"\qquad\text{else } y\sim p\,\mathbb{1}[p\ge\tau]\,/\,Z")
    left, right = st.columns(2)
    left.plotly_chart(figs.laws_figure(p, q, {"typical acceptance's law": law.law}, "What typical acceptance emits",
                                       tau=law.tau), key="fig_typical")
    current = float(delta) if vary == "delta" else float(eps)
    right.plotly_chart(figs.tv_curve_figure(d["grid"], d["tv"], d["acc"], d["exact_acc"], vary, current), key="fig_tv")
    st.dataframe(check_rows(d["checks"]), hide_index=True, key="typ_checks")
    st.markdown(
        "- **A kept candidate carries the draft's law, not p.** Nothing divides by q, so where the draft is "
        "confident the output follows q.\n"
        "- **The tail is cut.** A token with p(x) <= tau is never kept and, in the fallback, never drawn (at "
        "p < tau). Even a perfect draft, q = p, is biased: pick the case 'identical (q = p)'.\n"
        "- **Greedy is the exception.** At temperature 0, p is one-hot, H(p) = 0 and only the argmax clears "
        "tau: argmax matching in a tree (Medusa-1, EAGLE greedy) is exact for greedy decoding, token for token "
        f"in exact arithmetic. {ta.LOSSLESS}")


def tree_controls(p: np.ndarray, q: np.ndarray) -> tuple[tr.Tree, np.ndarray, str]:
    """Per-rank acceptance and the tree's shape -> (tree, rates, description)."""
    left, right = st.columns(2, gap="large")
    try:
        with left:
            src = bound_radio("Per-rank acceptance a_r", ["pair", "typed"], key="src", default="pair",
                              format_func={"pair": "from the pair above", "typed": "typed"}.get)
            if src == "pair":
                rates = tr.rank_rates(p, q, 4, WOR)
                st.caption("a_r = P(the rank-r candidate is the one kept), the exact rule without replacement on "
                           "the pair above: " + ", ".join(f"{a:.3f}" for a in rates))
            else:
                rates = tr.parse_rates(bound_text("a_1, a_2, ... (sum at most 1)", "rates", "0.6, 0.15, 0.06, 0.03"))
        with right:
            shape = bound_radio("Tree shape", ["budget", "optimal", "branching"], key="shape", default="budget",
                                format_func=ta.shape_label)
            if shape in ("budget", "optimal"):
                budget = slider_input("node budget N", "budget", 1, tr.MAX_NODES, 25, 1,
                                      help="Greedy: each node goes to the open slot with the highest P(path kept), "
                                           "one static tree for every context (EAGLE-2 re-ranks per context). "
                                           "Optimal: a dynamic programme over depth, nodes and rank.")
                if shape == "optimal":
                    return ta.optimal_for(tuple(map(float, rates)), int(budget)), rates, f"best {budget}-node tree"
                if note := ta.greedy_note(rates, int(budget)):
                    st.caption(note)
                return tr.greedy_tree(rates, int(budget)), rates, f"{budget} nodes placed greedily"
            text = bound_text("children per node at depth 1, 2, ...", "branching", "3, 2, 1")
            b = tr.parse_ints(text, "branching")
            return tr.branching_tree(b), rates, "branching " + ", ".join(map(str, b))
    except ValueError as exc:
        refuse(exc, f"Rates: 1 to {tr.MAX_RANK} numbers in [0, 1] summing to at most 1. Branching: 1 to "
                    f"{tr.MAX_DEPTH} whole numbers from 1 to {tr.MAX_RANK}, at most {tr.MAX_NODES} nodes in all.")


def tree_section(p: np.ndarray, q: np.ndarray) -> None:
    """E[N] of the learner's tree against the chain, its cost and speedup against batch, and the goodput."""
    tree, rates, label = tree_controls(p, q)
    e_n = tr.expected_accepted_length(tree, rates)
    gamma = min(tree.n_nodes, tr.MAX_DEPTH)
    e_chain = tr.expected_accepted_length(tr.chain(gamma), rates)
    cols = st.columns(4)
    cols[0].metric("draft nodes", f"{tree.n_nodes}", help=f"depth {int(tree.depth.max()) if tree.n_nodes else 0}")
    cols[1].metric("E[N], tree", f"{e_n:.3f}")
    cols[2].metric(f"E[N], chain of {gamma}", f"{e_chain:.3f}",
                   help=f"the same budget, capped at {tr.MAX_DEPTH} (the deepest tree allowed)")
    cols[3].metric("tokens in the verify pass", f"{tr.verify_tokens(tree)}")
    st.latex(r"E[N]=1+\sum_{j\in\text{tree}}\ \prod_{i\in\text{path}(j)} a_{\mathrm{rank}(i)}")
    ta.assumptions_panel(tree, rates)
    st.plotly_chart(figs.tree_figure(tree, tr.path_probabilities(tree, rates), f"The tree: {label}"), key="fig_tree")
    st.subheader("What the tree costs, and what it buys")
    c1, c2, c3 = st.columns(3)
    with c1:
        target = bound_select("Target", list(stp.SHAPES), key="target", default="Llama-3.1-8B")
        draft = bound_select("Draft", list(stp.SHAPES), key="draft", default="Llama-3.2-1B (draft)")
    with c2:
        hw = bound_select("Hardware", list(rl.HARDWARE), key="hw", default="H100 SXM")
        mode = bound_select("Precision", list(rl.MODES), key="mode", default="bf16", format_func=rl.MODE_LABELS.get)
    with c3:
        context = int(bound_select("Context L (tokens)", CONTEXTS, key="ctx", default=CONTEXT_DEFAULT))
        batch = slider_input("batch B", "batch", 1, 1024, 1, 1)
    draft_pass = ta.draft_pass_control()
    try:
        r = cost_data(tree, rates, target, draft, hw, mode, context, draft_pass)
    except ValueError as exc:
        refuse(exc, "Pick a precision this hardware supports and a context the models allow.")
    i = int(np.argmin(np.abs(BATCH - batch)))
    cols = st.columns(5)
    cols[0].metric("draft cost c_tree", f"{r.tree.c_tree[i]:.3f}", help="all draft passes, in target decode steps")
    cols[1].metric("verify cost v", f"{r.tree.v[i]:.3f}", help=f"{tr.verify_tokens(tree)} tokens vs 1")
    cols[2].metric("speedup, tree", f"{r.tree.speedup[i]:.2f}x")
    cols[3].metric(f"speedup, chain of {gamma}", f"{r.chain.speedup[i]:.2f}x")
    cols[4].metric(f"best chain: gamma {int(r.best_gamma[i])}", f"{r.best_speedup[i]:.2f}x")
    st.caption(f"At B = {int(BATCH[i])}, {target} verified by a {draft} draft on {hw}, context {context:,}. "
               "The step-time model of the roofline page prices every pass: speedup = E[N] / (c_tree + v). "
               + ta.draft_pass_caption(draft_pass, int(tree.depth.max()) if tree.n_nodes else 0))
    if warn := ta.hbm_warning(target, draft, hw, mode, context, int(BATCH[i])):
        st.warning(warn)
    curves = {"tree": r.tree.speedup, f"chain of {gamma}": r.chain.speedup, "best chain (gamma per B)": r.best_speedup}
    st.plotly_chart(figs.against_batch_figure(BATCH, curves, "Speedup against batch", "speedup (x)", BATCH[i]),
                    key="fig_speedup")
    where = ("the tree stays ahead of the best chain at every batch up to 1,024" if r.tree_loses_from is None else
             f"the best chain catches up with the tree from about B = {r.tree_loses_from:.0f}")
    st.markdown(
        f"A tree spends idle compute: at small batch the verify pass is memory-bound, so checking "
        f"{tr.verify_tokens(tree)} tokens costs about as much as checking one, and the extra branches are almost "
        f"free acceptance. As the batch grows the pass becomes compute-bound, v grows with the node count, and "
        f"{where}. Low acceptance favours trees (a second guess is often right); a draft that is almost always "
        "right needs only a chain.")
    st.subheader("Throughput, not just latency")
    goodput_section(r, i)


def goodput_section(r: TreeVsChain, i: int) -> None:
    """Goodput against throughput for a batched server, and why engines shorten gamma or switch off."""
    t = r.tree
    cols = st.columns(4)
    cols[0].metric("plain decoding, tokens/s", f"{t.plain_tps[i]:,.0f}")
    cols[1].metric("tree: output tokens/s (goodput)", f"{t.goodput_tps[i]:,.0f}")
    cols[2].metric("tree: positions verified per s", f"{t.verified_tps[i]:,.0f}")
    cols[3].metric("verify positions on rejected tokens", f"{100 * t.wasted_fraction:.0f}%",
                   help="1 - E[N] / (nodes + 1)")
    left, right = st.columns(2)
    curves = {"plain decoding": t.plain_tps, "tree (goodput)": t.goodput_tps,
              "best chain (goodput)": r.best_goodput_tps}
    left.plotly_chart(figs.against_batch_figure(BATCH, curves, "Output tokens per second, whole server",
                                                "tokens/s", BATCH[i], one_line=False, log_y=True), key="fig_goodput")
    right.plotly_chart(figs.best_gamma_figure(BATCH, r.best_gamma, BATCH[i]), key="fig_best_gamma")
    st.markdown(
        "A server is judged by output tokens per second across all its sequences. Speculation makes the target "
        "compute positions that are then thrown away: here the verify pass computes "
        f"{t.n_nodes + 1} positions per sequence per round and keeps {t.e_n:.2f} of them. While the GPU waits on "
        "memory that work is free; once the batch alone keeps the tensor cores busy, every rejected position "
        "displaces another sequence's useful token. That is why engines shorten gamma as the batch grows and "
        f"switch speculation off when no gamma beats 1. {switch_off_text(r)}")


def switch_off_text(r: TreeVsChain) -> str:
    """What the best-gamma chart shows at these settings, in words."""
    first, last = int(r.best_gamma[0]), int(r.best_gamma[-1])
    if r.off_from is not None:
        return (f"Here the best chain shortens from gamma {first} at B = 1 and speculation is switched off "
                f"(gamma = 0) from about B = {r.off_from:.0f}.")
    return (f"Here the best chain shortens from gamma {first} at B = 1 to gamma {last} at B = 1,024 without reaching "
            "0: with this context each sequence's KV-cache reads keep attention memory-bound, so extra verified "
            "tokens stay cheap. A shorter context or a lower acceptance can switch it off.")


def render() -> None:
    st.title("Trees and multi-draft")
    st.markdown(
        "One draft chain is where speculative decoding starts. SpecInfer verifies several candidates per "
        "position, Medusa and EAGLE verify whole token trees in one target pass. Which of their rules keep the "
        "target's law, and when does a tree pay?")
    st.subheader("1. Several candidates at one position, verified exactly")
    try:
        p, q, k = pair_controls()
    except ValueError as exc:
        refuse(exc, f"V from 2 to {V_PAGE}, k from 1 to {K_PAGE}.")
    n, seed = multidraft_section(p, q, k)
    st.subheader("2. Medusa's typical acceptance: faster, and not exact")
    typical_section(p, q, k, n, seed)
    st.subheader("3. Token trees: expected accepted length")
    tree_section(p, q)


render()
