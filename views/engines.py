"""Engines: llama.cpp's own server, embedded, with speculation off and on; its counters read with the app's algebra."""

from __future__ import annotations

import streamlit as st

from ui import engines_text as text
from ui.engines_panel import controls, own_server_section, result_section, run_button


def render() -> None:
    """The page: controls, the run, the result, then what it means."""
    st.title("Speculative decoding in a real engine")
    st.markdown(text.INTRO)
    mode, work = controls()
    run_button(mode, work)
    result_section(mode)
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
