"""ui.theme.new_figure: the app template through Plotly's default gives the figure naming it would give."""

from __future__ import annotations

import json

import plotly.graph_objects as go
import plotly.io as pio

from ui.theme import TEMPLATE_NAME, new_figure, register_template


def _json(fig: go.Figure) -> str:
    return json.dumps(fig.to_plotly_json(), sort_keys=True, default=str)


def test_new_figure_equals_the_figure_that_names_the_template() -> None:
    register_template()
    named = go.Figure()
    named.update_layout(template=TEMPLATE_NAME, title="t", height=300, xaxis_title="gamma")
    assert _json(new_figure("t", height=300, xaxis_title="gamma")) == _json(named)


def test_new_figure_carries_the_app_template_even_after_the_default_moved() -> None:
    pio.templates.default = "plotly_dark"   # another library (or a test) moved Plotly's default
    try:
        fig = new_figure("t")
        assert _json(fig) == _json(go.Figure(layout={"template": pio.templates[TEMPLATE_NAME], "title": "t"}))
        assert fig.layout.template.layout.paper_bgcolor != pio.templates["plotly_dark"].layout.paper_bgcolor
    finally:
        register_template()
