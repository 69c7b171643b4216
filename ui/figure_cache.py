"""Figures through st.cache_data: a builder's figure is kept as its plain dict, keyed by the builder and its inputs.

Plotly validates every property when a figure is built (a few hundred ms for a small bar chart on a busy 2-core
machine) and again when one is unpickled, so caching the go.Figure itself saves little. The dict pickles in
microseconds; it is handed back wrapped without a second validation (it came from a validated figure).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec

import plotly.graph_objects as go
import streamlit as st

P = ParamSpec("P")


@st.cache_data(max_entries=256, show_spinner=False)
def _figure_dict(builder: str, _build: Callable[..., go.Figure], *args, **kwargs) -> dict:
    """The builder's figure as a dict; `builder` (module.qualname) keys the cache, `_build` is not hashed."""
    return _build(*args, **kwargs).to_dict()


def cached_figure(build: Callable[P, go.Figure]) -> Callable[P, go.Figure]:
    """`build` with its figures cached by input: the first call builds and validates, later ones only wrap."""
    name = f"{build.__module__}.{build.__qualname__}"

    @functools.wraps(build)
    def figure(*args: P.args, **kwargs: P.kwargs) -> go.Figure:
        return go.Figure(_figure_dict(name, build, *args, **kwargs), _validate=False)

    return figure
