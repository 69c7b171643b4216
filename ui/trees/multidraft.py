"""The trees page's first section: the (p, q) pair and k, acceptance against k with the laws (the key figure), and
the sampled checks of every multi-draft rule with the 10,000-pair exhaustive check."""

from __future__ import annotations

import numpy as np
import streamlit as st

from specdec_core import proof_cases
from specdec_core.multidraft import NO_UPDATE, RULES
from specdec_core.rejection import MAX_DRAWS
from ui.chart_wire import charts_last
from ui.controls import bound_radio, bound_select, slider_input
from ui.presenter import show
from ui.safe_text import md
from ui.trees import assumptions
from ui.trees import data as data


def refuse(exc: ValueError, what: str) -> None:
    """A refused input, in words, and the page stops there."""
    st.warning(f"**Input refused:** {md(str(exc), 300)}. {what}")
    st.stop()


def pair_controls() -> tuple[np.ndarray, np.ndarray, int]:
    """The (p, q) pair at one position and the number of candidates k."""
    left, right = st.columns(2, gap="large")
    with left:
        case = bound_select("Case", data.PRESETS, key="case", default="q_sharper",
                            format_func=lambda s: proof_cases.PRESETS[s])
        v = slider_input("vocabulary size V", "vocab", 2, data.V_PAGE, 10, 1)
    with right:
        k = slider_input("candidates k at this position", "k", 1, data.K_PAGE, 3, 1,
                         help="SpecInfer-style: k candidate tokens verified one after another.")
        seed = slider_input("seed", "seed", 0, 9999, 0, 1) if case == "dirichlet" else 0
    p, q = proof_cases.preset_pair(case, int(v), int(seed))
    return p, q, int(k)


@st.fragment
@charts_last()
def multidraft_section(p: np.ndarray, q: np.ndarray, k: int) -> None:
    """Acceptance against k and the emitted laws, exact; the wrong variant shown beside the exact rule."""
    wrong = bound_radio("Wrong variant to show", data.WRONG, key="wrong", default=NO_UPDATE, format_func=RULES.get)
    d = data.multidraft_data(p, q, k, wrong)
    cols = st.columns(4)
    cols[0].metric("alpha, one candidate", f"{d['iid'][0]:.4f}")
    cols[1].metric(f"acceptance, k = {k} i.i.d.", f"{d['iid'][k - 1]:.4f}")
    cols[2].metric(f"acceptance, k = {k} without replacement", f"{d['wor'][k - 1]:.4f}")
    err = max(np.abs(d["law_iid"] - p).max(), np.abs(d["law_wor"] - p).max())
    cols[3].metric("max |emitted - p|, exact rules", f"{err:.1e}")
    st.caption(assumptions.ot_caption(p, q, k, float(d["iid"][k - 1])))
    left, right = st.columns(2)
    ks = np.arange(1, data.K_PAGE + 1)
    show(data.acceptance_k_figure(ks, {"i.i.d. from q": d["iid"], "without replacement": d["wor"]}, k),
         key="fig_acc_k", where=left)
    show(data.laws_figure(p, q, {"exact rule's law (= p)": d["law_wor"], RULES[wrong]: d["law_wrong"]},
                          f"Emitted laws with k = {k}"), key="fig_laws", where=right)
    st.latex(r"x_i\sim q_i,\quad \text{keep w.p. }\min\!\Big(1,\frac{r_{i-1}(x_i)}{q_i(x_i)}\Big),\quad "
             r"r_0=p,\quad r_i=\frac{(r_{i-1}-q_i)_+}{\lVert(r_{i-1}-q_i)_+\rVert_1},\quad "
             r"\text{all rejected: }y\sim r_k")
    st.markdown(
        "Each step is the single-draft rule with target r and proposal q_i, so it emits r exactly; the whole "
        "chain of steps emits p. Without replacement, q_i is q with the earlier candidates removed and "
        "renormalised, and a rejected token (r = 0 there) is never proposed again, so acceptance grows faster. "
        "SpecTr (Sun et al., 2023) asks which multi-draft rule accepts most; this one is simple and exact.")


def draws_controls(k: int) -> tuple[int, int]:
    """The draws n and the sampling seed of the sampled checks -> (draws used after the budget cap, seed)."""
    c1, c2 = st.columns(2, gap="large")
    with c1:
        n = slider_input("draws n", "n", 1_000, MAX_DRAWS, 20_000, 1_000)
    with c2:
        seed = slider_input("sampling seed", "sseed", 0, 9999, 0, 1)
    used = data.capped_draws(int(n), k)
    if used < n:
        st.caption(f"n = {int(n):,} asked; {used:,} drawn. With k = {k} a check makes at most "
                   f"{data.DRAW_BUDGET:,} candidate draws, which keeps one rerun on a shared server under a second.")
    return used, int(seed)


def check_section(p: np.ndarray, q: np.ndarray, k: int, n: int, seed: int) -> None:
    """Every multi-draft rule sampled n times against p, and the 10,000-pair check of the exact rules."""
    st.caption(f"{len(RULES)} rules x {n:,} positions each (k = {k} candidates per position, seed {seed}), drawn "
               "once for these settings and reused by every later view of them.")
    st.dataframe(data.check_rows(data.sampled(p, q, k, n, seed)), hide_index=True, key="md_checks")
    r = data.exhaustive()
    cols = st.columns(3)
    cols[0].metric("random pairs", f"{int(r['iid']['pairs']):,}")
    cols[1].metric("max |emitted - p|, i.i.d., k = 4", f"{r['iid']['max_law_error']:.1e}")
    cols[2].metric("max |emitted - p|, without replacement, k = 3", f"{r['wor']['max_law_error']:.1e}")
    st.caption("p ~ Dirichlet(1), q ~ Dirichlet(0.3), zero-padded, one batched call per rule (V from 2 to 49 for "
               "i.i.d.; 2 to 10 without replacement, whose exact law enumerates V^k rejection paths). The errors "
               "are floating-point rounding.")
