"""Figures through st.cache_data: a builder's figure is kept as the spec the browser is sent (ui.chart_wire), keyed
by the builder and its inputs.

Plotly validates every property when a figure is built and again when one is unpickled, so caching the go.Figure
itself saves little. The dict pickles cheaply; it is handed back as a WireFigure, which presenter.show sends without
building a go.Figure from it again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec

import plotly.graph_objects as go
import streamlit as st

from ui.chart_wire import WireFigure, wire_spec

P = ParamSpec("P")


@st.cache_data(max_entries=256, show_spinner=False)
def _figure_dict(builder: str, _build: Callable[..., go.Figure], *args, **kwargs) -> dict:
    """The builder's figure as its wire spec (ui.chart_wire); `builder` (module.qualname) keys the cache, `_build`
    is not hashed."""
    return wire_spec(_build(*args, **kwargs))


def cached_figure(build: Callable[P, go.Figure]) -> Callable[P, go.Figure]:
    """`build` with its figures cached by input as the spec the browser is sent: the first call builds, later
    ones only wrap (a WireFigure, which st.plotly_chart sends without another copy or conversion)."""
    name = f"{build.__module__}.{build.__qualname__}"

    @functools.wraps(build)
    def figure(*args: P.args, **kwargs: P.kwargs) -> go.Figure:
        return WireFigure(_figure_dict(name, build, *args, **kwargs))

    return figure
