"""Streamlit-side helpers, no maths. Top-level modules are shared by several pages (theme, controls, presenter,
the chart wire); each page's own helpers live in its package, ``ui/<page>/``, beside its script ``views/<page>.py``.
A page's package imports only the shared modules, never another page's package (tests/test_page_packages.py)."""
