"""Algebra page (placeholder until its issue lands)."""

import streamlit as st

st.title("Algebra: what speculation buys")
st.info(
    "Coming next: sliders for alpha, gamma, c and v with E[N], the speedup, the best integer gamma, "
    "per-position acceptance and a Monte Carlo of tokens per step, all computed by `specdec_core`."
)
