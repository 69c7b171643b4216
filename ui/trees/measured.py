"""The trees page's measured note: what a chain, fixed trees and EAGLE-2's dynamic tree did on a 2-core CPU, and
why, from v(T) there and on one H200. Numbers from specdec_core.tree_run; nothing here computes one."""

from __future__ import annotations

import streamlit as st

from specdec_core import tree_run


def _span(lo: float, hi: float, digits: int) -> str:
    """'lo-hi' at `digits` decimals, or one number where both print the same."""
    a, b = f"{lo:.{digits}f}", f"{hi:.{digits}f}"
    return a if a == b else f"{a}-{b}"


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
        q_lo, q_hi = tree_run.dynamic_tokens_per_pass("draft-q")
        q_ms_lo, q_ms_hi = tree_run.dynamic_draft_ms("draft-q")
        m_lo, m_hi = tree_run.dynamic_tokens_per_pass("measured")
        m_ms_lo, m_ms_hi = tree_run.dynamic_draft_ms("measured")
        x_lo, x_hi = tree_run.dynamic_speedup("measured")
        qx_lo, qx_hi = tree_run.dynamic_speedup("draft-q")
        kept = tree_run.top_child_acceptance(1)
        top = tree_run.best()
        verdict = "here a tree pays" if tree_run.a_tree_pays() else \
            "here no tree pays, and the live page's chain stays the default"
        st.markdown(
            f"On this CPU verifying costs more as a pass grows: v(2) = {v[1]:.2f}, v(9) = {v[8]:.2f}, "
            f"v({v.size}) = {v[-1]:.2f}. EAGLE-2's dynamic tree, sized from that v and grown only as deep as its cost "
            "model says could repay the draft passes, trusts the draft: it scores a path by the draft's own "
            f"probabilities. So scored (draft-q), it emits {q_lo:.2f}-{q_hi:.2f} tokens per pass and drafts "
            f"{_span(q_ms_lo, q_ms_hi, 1)} ms a round, {_span(qx_lo, qx_hi, 2)}x. Scored instead by how often the "
            f"target really keeps a child (measured: see below), it grows less: {_span(m_lo, m_hi, 2)} tokens per "
            f"pass for {_span(m_ms_lo, m_ms_hi, 1)} ms, {_span(x_lo, x_hi, 2)}x, against {top.draft_ms:.1f} ms for "
            f"{top.config}; the best configuration is {top.config} at {top.speedup:.2f}x: {verdict}.")
        st.markdown(
            "Why a tree gains so little at T = 1: its children are the draft's top choices, and the target keeps "
            f"a chosen token x with probability p(x), {kept['top1_t1']:.2f} for the head's top child and "
            f"{kept['top1_top2_t1']:.2f} for its top two, where a draft sampled from q is kept with "
            f"1 - TV(p, q) = {kept['chain_sampled_t1']:.2f}. The head is overconfident at T = 1: a child it gives "
            f"q = 0.5 is kept {tree_run.kept_at(0.5):.2f} of the time, one it gives 0.9, "
            f"{tree_run.kept_at(0.9):.2f} (held-out replies; under the greedy rule the top child is kept "
            f"{kept['top1_greedy']:.2f} of the time). On one H200 at batch 1 the same target's v stays between "
            f"{v_lo:.2f} and {v_hi:.2f} from T = {t_lo} to {t_hi} tokens, so a tree of dozens of nodes costs what a "
            "chain does: the case EAGLE-2 is built for.")
        st.caption("Every repeat decodes the same prompts with the same seeds, so min-max is timing spread only; "
                   "tokens per pass is one draw per prompt.")
        st.caption(tree_run.provenance_line())
        st.caption(tree_run.accept_provenance_line())
