"""Proof: accept with min(1, p/q), resample from (p - q)+, and the emitted law is exactly p."""

from __future__ import annotations

import streamlit as st

from ui import presenter
from ui.chart_wire import charts_last
from ui.controls import bound_radio
from ui.proof.controls import controls
from ui.proof.sampling import sampling_section
from ui.proof.sections import exact_section, exhaustive_section, explanation, multiposition_section

SECTIONS = {  # the section chooser: ?section= opens the same view; only the chosen sections are computed
    "sampling": "3. Sampling check and the mistakes",
    "why": "2. Why it is exact",
    "exhaustive": "4. The exhaustive check",
    "positions": "5. Two positions",
    "all": "all sections",
}


def render() -> None:
    st.title("Proof: the emitted law is exactly p")
    presenter.intro(
        "The draft proposes x ~ q. The target keeps x with probability min(1, p(x)/q(x)); otherwise it "
        "draws a replacement from (p - q)+, normalised. Pick a case and watch the two pieces fill p."
    )
    st.caption(
        "The rule is speculative sampling, introduced by Leviathan, Kalman & Matias, \"Fast Inference from "
        "Transformers via Speculative Decoding\" (ICML 2023), and independently by Chen et al., \"Accelerating "
        "Large Language Model Decoding with Speculative Sampling\" (2023)."
    )
    body()


@st.fragment
@charts_last()
def body() -> None:
    """Everything the controls drive: a fragment, so a control step reruns this, not the app's navigation and
    the page's title (the sections below it that are fragments of their own rerun alone on their controls)."""
    src, case = controls()
    st.subheader("1. p, q, and the two pieces of the emitted law")
    exact_section(case)
    shown = bound_radio("Section shown below", list(SECTIONS), key="section", default="sampling",
                        format_func=SECTIONS.get,
                        help="Each section is computed only when it is shown; the address keeps the choice.")
    every = shown == "all"
    if every or shown == "why":
        st.subheader("2. Why it is exact")
        explanation()
    if every or shown == "sampling":
        st.subheader("3. Sampling check, and the mistakes interviewers listen for")
        sampling_section(case, src)
    if every or shown == "exhaustive":
        st.subheader("4. The exhaustive check from the seed")
        exhaustive_section()
    if every or shown == "positions":
        st.subheader("5. Two positions: the same argument, prefix by prefix")
        st.markdown(
            "Each position's p is conditioned on the accepted prefix. Below, a 3-token Markov target and "
            "draft run one speculative round with gamma = 2. Every path is enumerated: both drafts kept, the "
            "second corrected, or the first corrected and the next round supplying the second token."
        )
        multiposition_section()


render()
