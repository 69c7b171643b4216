"""Streamlit-side helpers shared by the pages: theme, bound controls, layout. No maths here."""
