"""Roofline page (placeholder until its issue lands)."""

import streamlit as st

st.title("Roofline: why batch-1 decoding leaves compute idle")
st.info(
    "Coming next: hardware presets, precision modes, arithmetic intensity against the ridge, the batch "
    "at which verification fills the GPU, and a step-time model that links the roofline to the speedup."
)
