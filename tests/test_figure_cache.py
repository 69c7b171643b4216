"""ui.figure_cache: a cached figure is the builder's own as it is sent (ui.chart_wire), is built once per input, and
two builders with the same inputs never share an entry."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ui.chart_wire import wire_spec
from ui.figure_cache import cached_figure

CALLS: list[str] = []


def bars(y: np.ndarray, title: str) -> go.Figure:
    CALLS.append("bars")
    return go.Figure(go.Bar(y=y), layout_title_text=title)


def lines(y: np.ndarray, title: str) -> go.Figure:
    CALLS.append("lines")
    return go.Figure(go.Scatter(y=y), layout_title_text=title)


def test_a_cached_figure_equals_the_built_one_and_is_built_once_per_input():
    fig = cached_figure(bars)
    y = np.array([0.2, 0.5, 0.3])
    first, again = fig(y, "t"), fig(y.copy(), "t")
    assert first.to_plotly_json() == again.to_plotly_json() == wire_spec(bars(y, "t"))
    assert first.data[0].y == (0.2, 0.5, 0.3) and first.layout.title.text == "t"   # reads as a figure
    assert CALLS.count("bars") == 2                       # one build for both cached calls, one direct
    fig(y, "other title")
    assert CALLS.count("bars") == 3                       # a new input is a new entry


def test_two_builders_with_the_same_inputs_keep_their_own_figures():
    y = np.array([1.0, 2.0])
    a, b = cached_figure(bars)(y, "same"), cached_figure(lines)(y, "same")
    assert a.data[0].type == "bar" and b.data[0].type == "scatter"
