"""Figures built as plain dicts (ui.plainfig) are what Plotly's validating go.Figure builds from the same calls.

Every chart of /proof, /trees and /roofline at their defaults (every section shown) is built twice: as plain dicts,
as the pages send them, and replayed call by call on a validating go.Figure (ui.plainfig.validating). The two specs
must be equal, and each must pass Plotly's validation. Negative controls: a misspelt property fails, and a wrong
translation of a call (a label placed below its line instead of above) makes the specs differ.
"""

from __future__ import annotations

import json

import plotly.graph_objects as go
import pytest
import streamlit as st

from ui import plainfig
from ui.plainfig import PlainFigure, validating

PAGES = {  # page -> (query, charts it draws at least)
    "views/proof.py": ({"section": "all"}, 6),
    "views/trees.py": ({"section": "all"}, 8),
    "views/roofline.py": ({}, 5),
}


def _specs(app_test, page: str) -> list[dict]:
    """The plotly specs the page sends, in order, computed afresh (no cached figure from an earlier run)."""
    st.cache_data.clear()
    query, _ = PAGES[page]
    at = app_test(page, timeout=180, **query)
    assert not at.exception, [e.value for e in at.exception]
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


@pytest.mark.parametrize("page", list(PAGES))
def test_every_chart_is_what_a_validating_figure_builds(app_test, page: str) -> None:
    plain = _specs(app_test, page)
    with validating():
        checked = _specs(app_test, page)
    assert len(plain) >= PAGES[page][1]
    assert plain == checked
    for spec in plain:
        go.Figure(spec)   # raises on any property Plotly does not know


def _hline_figure() -> go.Figure:
    fig = PlainFigure(title="t", xaxis_title="x", yaxis=dict(title="y", type="log"))
    fig.add_scatter(x=[1, 2], y=[3, 4], mode="lines", line=dict(width=2), line_color="#000000", error_y_array=[1, 1])
    fig.add_hline(y=2.0, line_dash="dot", annotation_text="label", annotation_position="bottom right")
    fig.add_vline(x=1.5, line=dict(color="#111111", dash="dash"))
    return fig.figure()


def test_calls_translate_as_plotly_translates_them() -> None:
    plain = _hline_figure().to_dict()
    with validating():
        checked = _hline_figure().to_dict()
    assert json.dumps(plain, sort_keys=True, default=str) == json.dumps(checked, sort_keys=True, default=str)
    assert plain["layout"]["xaxis"]["title"] == {"text": "x"} and plain["data"][0]["error_y"] == {"array": [1, 1]}


def test_a_wrong_translation_makes_the_specs_differ(monkeypatch) -> None:
    monkeypatch.setitem(plainfig._HLINE_LABELS, "bottom right", (1, "right", "bottom"))  # above the line, wrongly
    plain = _hline_figure().to_dict()
    with validating():
        checked = _hline_figure().to_dict()
    assert plain["layout"]["annotations"] != checked["layout"]["annotations"]


def test_a_misspelt_property_fails_validation() -> None:
    fig = PlainFigure(title="t").add_scatter(x=[0, 1], y=[1, 2], lnie=dict(color="red"))
    with pytest.raises(ValueError, match="lnie"):
        go.Figure(fig.figure().to_dict())
    with validating(), pytest.raises(ValueError, match="lnie"):
        fig.figure()


def test_an_unknown_label_position_is_refused() -> None:
    with pytest.raises(ValueError, match="annotation_position"):
        PlainFigure().add_hline(y=1.0, annotation_text="x", annotation_position="middle")
