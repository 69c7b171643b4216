"""The trees page's typical-acceptance section (Medusa): its law, its TV from p as a threshold moves, and the
chi-square that rejects it beside the exact rule's."""

from __future__ import annotations

import numpy as np
import streamlit as st

from specdec_core import typical
from ui.controls import bound_radio, slider_input
from ui.presenter import show
from ui.trees import assumptions
from ui.trees import data as data


def typical_section(p: np.ndarray, q: np.ndarray, k: int, n: int, seed: int) -> None:
    """Medusa's typical acceptance: its law, its TV from p as a threshold moves, and the chi-square that rejects it."""
    c1, c2, c3 = st.columns(3, gap="large")
    with c1:
        eps = slider_input("epsilon (hard threshold)", "eps", 0.0, 1.0, typical.MEDUSA_EPSILON, 0.01, "%.2f")
    with c2:
        delta = slider_input("delta (entropy-scaled threshold)", "delta", 0.0, 1.0, typical.MEDUSA_DELTA, 0.01, "%.2f")
    with c3:
        cand = bound_radio("Candidates", list(typical.CANDIDATES), key="cand", default=typical.SAMPLED,
                           format_func=typical.CANDIDATES.get)
        vary = bound_radio("Curve against", ["delta", "epsilon"], key="vary", default="delta")
    d = data.typical_exact(p, q, k, float(eps), float(delta), cand, vary)
    law = d["law"]
    cols = st.columns(4)
    cols[0].metric("threshold tau", f"{law.tau:.4f}", help="min(epsilon, delta exp(-H(p))), H in nats")
    cols[1].metric("typical: P(kept)", f"{law.acceptance:.4f}")
    cols[2].metric("exact rule (i.i.d.): P(kept)", f"{d['exact_acc']:.4f}")
    cols[3].metric("TV(typical law, p)", f"{law.tv_to_p:.4f}")
    st.latex(r"\text{keep } x \text{ if } p(x) > \tau=\min\!\big(\epsilon,\ \delta\, e^{-H(p)}\big),"
             r"\qquad\text{else } y\sim p\,\mathbb{1}[p\ge\tau]\,/\,Z")
    left, right = st.columns(2)
    show(data.laws_figure(p, q, {"typical acceptance's law": law.law}, "What typical acceptance emits",
                          tau=law.tau), key="fig_typical", where=left)
    current = float(delta) if vary == "delta" else float(eps)
    show(data.tv_curve_figure(d["grid"], d["tv"], d["acc"], d["exact_acc"], vary, current),
         key="fig_tv", where=right)
    checks = data.typical_checks(p, q, k, float(eps), float(delta), cand, n, seed)
    st.dataframe(data.check_rows(checks), hide_index=True, key="typ_checks")
    st.caption(f"2 rules x {n:,} positions each (seed {seed}).")
    st.markdown(
        "- **A kept candidate carries the draft's law, not p.** Nothing divides by q, so where the draft is "
        "confident the output follows q.\n"
        "- **The tail is cut.** A token with p(x) <= tau is never kept and, in the fallback, never drawn (at "
        "p < tau). Even a perfect draft, q = p, is biased: pick the case 'identical (q = p)'.\n"
        "- **Greedy is the exception.** At temperature 0, p is one-hot, H(p) = 0 and only the argmax clears "
        "tau: argmax matching in a tree (Medusa-1, EAGLE greedy) is exact for greedy decoding, token for token "
        f"in exact arithmetic. {assumptions.LOSSLESS}")
