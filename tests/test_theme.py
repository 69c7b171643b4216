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


def test_a_foot_legend_in_fixed_margins_gets_room_for_its_rows_and_the_axis_title() -> None:
    from ui.algebra.figures import alpha_figure
    from ui.theme import BOTTOM_LEGEND, fit_foot, foot_margin

    layout = dict(height=400, legend=BOTTOM_LEGEND, margin=dict(l=70, r=20, t=50, b=110, autoexpand=False))
    fitted = fit_foot(layout, 5)
    assert fitted["margin"]["b"] == foot_margin(5) and fitted["height"] == 400 + foot_margin(5) - 110
    assert fit_foot(layout, 1) is layout                                     # already room: unchanged
    assert fit_foot({**layout, "margin": dict(b=20)}, 5)["margin"] == dict(b=20)   # margins that grow themselves
    import numpy as np

    fig = alpha_figure(np.linspace(0, 1, 5), {g: np.ones(5) for g in (1, 2, 4, 8)}, (0.5, 1.0))
    assert fig.layout.margin.b >= foot_margin(5)                             # 4 curves and the marker
