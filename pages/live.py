"""Live decoding page (placeholder until its issue lands)."""

import streamlit as st

st.title("Live decoding: a real draft and a real target")
st.info(
    "Coming next: a draft model proposes tokens and a target model verifies them, live, on this "
    "machine's GPU or CPU, with alpha, c, v and the speedup measured beside what the algebra predicts."
)
