"""Interview page (placeholder until its issue lands)."""

import streamlit as st

st.title("Interview prep")
st.info(
    "Coming next: the five points interviewers listen for, graded numeric drills, concept questions, "
    "a timed 30-second answer and a classroom mode."
)
