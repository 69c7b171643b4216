"""The proof page's case picker: a preset, a Dirichlet pair, laws from logits (temperature, top-k, top-p) or typed
vectors, each setting bound to the URL."""

from __future__ import annotations

import streamlit as st

from specdec_core import proof_cases
from specdec_core.rejection import check_pair
from ui.controls import bound_select, bound_text, slider_input
from ui.proof.data import SOURCE_HELP, SOURCES
from ui.safe_text import md


def sampling_settings(who: str, prefix: str, default_t: float) -> tuple[float, int | None, float]:
    """Temperature, top-k and top-p controls for the target or the draft."""
    st.markdown(f"**{who}**")
    t = slider_input("temperature", f"{prefix}T", 0.0, 3.0, default_t, 0.05, "%.2f", help="0 = greedy (argmax).")
    k = slider_input("top-k", f"{prefix}k", 1, 50, 50, 1, help="Keep the k most probable tokens; k >= V keeps all.")
    top_p = slider_input(
        "top-p", f"{prefix}p", 0.01, 1.0, 1.0, 0.01, "%.2f", help="Keep the smallest set reaching this mass."
    )
    return float(t), int(k), float(top_p)


def controls() -> tuple[str, proof_cases.ProofCase]:
    """Case picker and its parameters -> (source, case). Refused input shows a message and stops the page."""
    left, right = st.columns(2, gap="large")
    with left:
        src = bound_select("Case", list(SOURCES), key="preset", default="q_sharper", help=SOURCE_HELP,
                           format_func=SOURCES.get)
        v = (
            slider_input("vocabulary size V", "vocab", proof_cases.V_MIN, proof_cases.V_MAX, proof_cases.LOGITS_V, 1)
            if src != "custom"
            else None
        )
    try:
        with right:
            if src == "dirichlet":
                seed = slider_input("seed", "seed", 0, 9999, 0, 1)
                cp = slider_input("concentration of p", "cp", 0.05, 10.0, 1.0, 0.05, "%.2f")
                cq = slider_input("concentration of q", "cq", 0.05, 10.0, 0.3, 0.05, "%.2f")
                return src, proof_cases.case_from_pair(*proof_cases.preset_pair(src, v, seed, cp, cq))
            if src == "custom":
                p = bound_text("p (target), comma-separated", "p", "0.5, 0.3, 0.2", max_len=4000)
                q = bound_text("q (draft), comma-separated", "q", "0.2, 0.3, 0.5", max_len=4000)
                return src, proof_cases.case_from_pair(
                    *check_pair(proof_cases.parse_vector(p, "p"), proof_cases.parse_vector(q, "q"))
                )
            if src == "logits":
                seed = slider_input("seed", "seed", 0, 9999, proof_cases.LOGITS_SEED, 1)
                noise = slider_input(
                    "draft noise (logit std)",
                    "noise",
                    0.0,
                    5.0,
                    proof_cases.LOGITS_NOISE,
                    0.1,
                    "%.1f",
                    help="Draft logits = target logits + noise x N(0, 1).",
                )
        if src == "logits":
            z_p, z_q = proof_cases.logits_pair(v, seed, noise)
            tcol, dcol = st.columns(2, gap="large")
            with tcol:
                target = sampling_settings("Target (the requested law p)", "t", proof_cases.TARGET_T)
            with dcol:
                draft = sampling_settings("Draft (the law q it samples from)", "d", proof_cases.DRAFT_T)
            return src, proof_cases.case_from_logits(z_p, z_q, target, draft)
        return src, proof_cases.case_from_pair(*proof_cases.preset_pair(src, v))
    except ValueError as exc:
        st.warning(
            f"**Input refused:** {md(exc, 200)}. "
            f"Each vector needs {proof_cases.V_MIN} to {proof_cases.V_MAX} non-negative numbers "
            "that sum to 1, and p and q need the same length."
        )
        st.stop()
