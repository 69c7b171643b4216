"""Proof page (placeholder until its issue lands)."""

import streamlit as st

st.title("Proof: the emitted law is exactly p")
st.info(
    "Coming next: accept with min(1, p/q), resample from (p - q)+, and watch the two pieces fill p "
    "exactly; alpha = 1 - TV(p, q); the tempting shortcuts and the bias each one leaves."
)
