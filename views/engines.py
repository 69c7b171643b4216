"""Engines: llama.cpp's own server, embedded, with speculation off and on; its counters read with the app's algebra.
In presenter mode the run and its result come first and the settings fold away."""

from __future__ import annotations

import streamlit as st

from ui import presenter
from ui.engines import text as text
from ui.engines.panel import controls, own_server_section, result_section, run_button


def render() -> None:
    """The page: controls, the run, the result, then what it means."""
    st.title("Speculative decoding in a real engine")
    if not presenter.on():
        st.markdown(text.INTRO)
    with presenter.secondary("Settings: speculative mode, draft length, workload"):
        mode, work = controls()
    run_button(mode, work)
    result_section(mode)
    if presenter.on():
        st.markdown(text.INTRO)
    st.subheader("What the counters say")
    st.markdown(text.COUNTERS)
    st.latex(text.EN_LATEX)
    st.markdown(text.COST)
    st.subheader("Two lessons")
    st.markdown(text.SELF_DRAFT)
    st.markdown(text.RULES)
    st.subheader("Your own server")
    own_server_section()


render()
