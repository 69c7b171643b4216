"""The trees page's measured note: what a chain, fixed trees and EAGLE-2's dynamic tree did on a 2-core CPU, and
why, from v(T) there and on one H200. Numbers from specdec_core.tree_run; nothing here computes one."""

from __future__ import annotations

import streamlit as st

from specdec_core import tree_run


def measured_section() -> None:
    """A table of the CPU run and the one-line reason, in an expander under the token trees."""
    with st.expander("Measured: when a tree pays (a 2-core CPU against one H200)"):
        rows = tree_run.rows()
        st.dataframe({"configuration": [r.config for r in rows],
                      "tokens per pass": [round(r.tokens_per_pass, 2) for r in rows],
                      "speedup (median)": [round(r.speedup, 2) for r in rows],
                      "min-max": [f"{r.speedup_lo:.2f}-{r.speedup_hi:.2f}" for r in rows]}, hide_index=True)
        v = tree_run.cpu_v()
        t_lo, t_hi, v_lo, v_hi = tree_run.h200_span()
        lo, hi = tree_run.dynamic_tokens_per_pass()
        ms_lo, ms_hi = tree_run.dynamic_draft_ms()
        top = tree_run.best()
        verdict = "here a tree pays" if tree_run.a_tree_pays() else \
            "here no tree pays, and the live page's chain stays the default"
        st.markdown(
            f"On this CPU verifying costs more as a pass grows: v(2) = {v[1]:.2f}, v(9) = {v[8]:.2f}, "
            f"v({v.size}) = {v[-1]:.2f}. EAGLE-2's dynamic tree, sized from that v and grown only as deep as its cost "
            f"model says could repay the draft passes, emits "
            f"{lo:.2f}-{hi:.2f} tokens per pass, and growing it (a draft step per depth it grows, over several "
            f"nodes) costs {ms_lo:.1f}-{ms_hi:.1f} ms a round against {top.draft_ms:.1f} ms for {top.config}; "
            f"the best configuration is {top.config} at {top.speedup:.2f}x: {verdict}. On one H200 at batch 1 "
            "the same target's v stays between "
            f"{v_lo:.2f} and {v_hi:.2f} from T = {t_lo} to {t_hi} tokens, so a tree of "
            "dozens of nodes costs what a chain does: the case EAGLE-2 is built for.")
        st.caption(tree_run.provenance_line())
