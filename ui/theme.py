"""The one Plotly template of the app, and the fixed, colour-blind-safe meaning of colours.

Colours are from the Okabe-Ito palette. Token kinds also carry a non-colour cue, so the meaning
survives greyscale printing and colour blindness.
"""

from __future__ import annotations

import copy
import re

import plotly.graph_objects as go
import plotly.io as pio

from gpu_demo.kinds import KINDS

TEMPLATE_NAME = "specdec"

# Okabe-Ito: safe under the common colour-vision deficiencies.
OKABE_ITO = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]

# Token kinds, app-wide: colour + a cue that does not rely on colour, from their one definition.
KIND_STYLE: dict[str, dict[str, str]] = {
    name: {"colour": k.colour, "cue": k.cue, "marker": k.marker, "label": k.label}
    for name, k in KINDS.items()
    if name != "target"
}

# Roles used across figures so that the same thing has the same colour on every page.
ROLE_COLOUR: dict[str, str] = {
    "target": "#0072B2",     # p
    "draft": "#E69F00",      # q
    "accepted": "#009E73",   # min(p, q), accepted mass
    "residual": "#CC79A7",   # (p - q)+, resampled mass
    "predicted": "#000000",
    "measured": "#D55E00",
    "threshold": "#56B4E9",
}


# What Streamlit 1.67's chart theme (st.plotly_chart's theme="streamlit") wrote over this template in the browser,
# resolved for the app's light theme (.streamlit/config.toml), read off the rendered charts' full layouts. Charts are
# now sent without that theme (ui/chart_wire.py: it made Plotly draw each new chart twice), so the template carries
# it and they look as they did. Two changes: bold titles come from the title font, not from <b> tags, and the
# axes' minor grid colour is left out (written into a figure it would switch minor grid lines on).
_GREY, _GRID, _FONT = "#808495", "#e6eaf1", '"Source Sans", sans-serif'
STREAMLIT_LOOK: dict = {
    "font": dict(color=_GREY, family=_FONT, size=12, weight=400),
    "title": dict(font=dict(family=_FONT, size=16, color="#222222", weight="bold"), pad=dict(l=4), x=0.0,
                  xanchor="left", subtitle=dict(font=dict(color=_GREY))),
    "legend": dict(title=dict(font=dict(size=12, color=_GREY), side="top"), valign="top",
                   bordercolor="rgba(0, 0, 0, 0)", borderwidth=0, font=dict(size=12, color="#262730")),
    "paper_bgcolor": "#FFFFFF",
    "plot_bgcolor": "#FFFFFF",
    "xaxis": dict(zerolinecolor=_GRID, gridcolor=_GRID, showgrid=False, tickfont=dict(color=_GREY, size=12),
                  tickcolor=_GRID, title=dict(font=dict(color=_GREY, size=14), standoff=20), zeroline=False,
                  automargin=True,
                  rangeselector=dict(bgcolor="#FFFFFF", bordercolor=_GRID, borderwidth=1, x=0)),
    "yaxis": dict(ticklabelposition="outside", zerolinecolor=_GRID, title=dict(font=dict(color=_GREY, size=14),
                  standoff=24), tickcolor=_GRID, tickfont=dict(color=_GREY, size=12), gridcolor=_GRID,
                  automargin=True),
    "margin": dict(pad=8, r=0, l=0),
    "hoverlabel": dict(bgcolor="#FFFFFF", bordercolor="rgba(34, 34, 34, 0.2)",
                       font=dict(color=_GREY, family=_FONT, size=12)),
    "coloraxis": dict(colorbar=dict(thickness=16, xpad=24, ticklabelposition="outside", outlinecolor="rgba(0, 0, 0, 0)",
                                    outlinewidth=8, len=0.75, y=0.5745, title=dict(font=dict(color=_GREY, size=14)),
                                    tickfont=dict(color=_GREY, size=12))),
}


def _build_template() -> go.layout.Template:
    """A light, large-font template: readable on a laptop and on a classroom projector, in Streamlit's chart look."""
    t = go.layout.Template(pio.templates["plotly_white"])
    t.layout.colorway = OKABE_ITO
    t.layout.font = dict(family="Inter, Helvetica, Arial, sans-serif", size=14, color="#222222")
    t.layout.title = dict(font=dict(size=17), x=0.0, xanchor="left")
    t.layout.margin = dict(l=60, r=20, t=60, b=50)
    t.layout.legend = dict(orientation="h", yanchor="bottom", y=1.02, xanchor="right", x=1.0)
    t.layout.hovermode = "x unified"
    t.layout.xaxis = dict(showgrid=True, gridcolor="#E5E5E5", zeroline=False, ticks="outside")
    t.layout.yaxis = dict(showgrid=True, gridcolor="#E5E5E5", zeroline=False, ticks="outside")
    t.layout.update(STREAMLIT_LOOK)
    return t


# A legend at the figure's foot (container coordinates) inside a fixed margin, for figures redrawn on a slider step:
# a legend or axis that pushes the margins makes Plotly measure and lay the chart out a second time (doAutoMargin
# was 30% of Plotly's time in Chromium's profile of an algebra step). Presenter mode's larger type lets the margins
# grow again (presenter_spec).
BOTTOM_LEGEND = dict(orientation="h", yref="container", y=0.0, yanchor="bottom", x=0.0, xanchor="left")


def fixed_margins(l: int = 70, r: int = 20, t: int = 50, b: int = 110) -> dict:  # noqa: E741 (Plotly's name)
    """Margins in px that tick labels, titles and legend must fit: Plotly does not grow them (autoexpand off)."""
    return dict(l=l, r=r, t=t, b=b, autoexpand=False)


def foot_margin(entries: int, axis_px: int = 70, row_px: int = 22) -> int:
    """Bottom margin (px) for a BOTTOM_LEGEND chart in a narrow column, where the legend can wrap to one entry a
    row: the x axis's ticks and title, then one row per entry."""
    return axis_px + row_px * max(entries, 1)


def fit_foot(layout: dict, entries: int) -> dict:
    """A BOTTOM_LEGEND layout in fixed margins, its bottom margin raised to foot_margin(entries) and its height by
    the same amount (the plot keeps its size). Plotly keeps an axis title inside the margin the legend leaves, so
    in a narrow column, where the legend wraps, a short margin drew the x title over its tick labels."""
    m = layout.get("margin")
    if layout.get("legend") != BOTTOM_LEGEND or not isinstance(m, dict) or m.get("autoexpand") is not False:
        return layout
    extra = foot_margin(entries) - m.get("b", 0)
    if extra <= 0:
        return layout
    out = {**layout, "margin": {**m, "b": m.get("b", 0) + extra}}
    if isinstance(layout.get("height"), (int, float)):
        out["height"] = layout["height"] + extra
    return out


def register_template() -> str:
    """Register the app template and make it Plotly's default; returns its name. Idempotent."""
    if TEMPLATE_NAME not in pio.templates:
        pio.templates[TEMPLATE_NAME] = _build_template()
    if pio.templates.default != TEMPLATE_NAME:  # the setter validates the whole template again (~5 ms a call)
        pio.templates.default = TEMPLATE_NAME
    return TEMPLATE_NAME


def new_figure(title: str | None = None, **layout) -> go.Figure:
    """An empty figure on the app template, with an optional title and layout overrides.

    The template comes as Plotly's default (register_template sets it): naming it in update_layout validates
    the whole template again, 35 ms a figure here against 1.7 ms, for the same figure (tests/test_theme.py).
    """
    register_template()
    return go.Figure(layout=dict(title=title, **layout))




# Projector sizes (px), used by presenter mode (ui/presenter.py) and the interview's classroom mode. Set on the
# figure's own layout, not the template: a figure's explicit sizes win over any template (ui/chart_wire.py writes
# the template in beneath them).
PRESENTER_PX: dict[str, int] = {"font": 18, "tick": 18, "axis_title": 20, "title": 24, "legend": 17, "hover": 16}
AXIS_KEY = re.compile(r"^[xy]axis\d*$")  # a layout key naming a cartesian axis
_COLOURBAR_TRACES = {"heatmap", "contour", "histogram2d", "histogram2dcontour"}
_TEXT_TRACES = {"scatter", "bar", "heatmap", "histogram", "funnel", "waterfall", "pie"}


def _size(d: dict, path: str, px: int) -> None:
    """d[a][b]...["size"] = px for path "a.b...", creating the dicts on the way."""
    for part in path.split("."):
        d = d.setdefault(part, {})
    d["size"] = px


def presenter_spec(figure_or_data) -> dict:
    """A copy of a figure (a go.Figure or its dict) at projector sizes, as a dict: text, tick labels, axis and chart
    titles, legend, hover, colour bars and in-plot labels; the axes grow their margins to fit. Idempotent
    (absolute sizes, not factors). Plain dict work: a go.Figure copy would re-validate the template (~40 ms)."""
    px = PRESENTER_PX
    spec = copy.deepcopy(figure_or_data) if isinstance(figure_or_data, dict) else figure_or_data.to_dict()
    layout = spec.setdefault("layout", {})
    for path, size in (("font", "font"), ("title.font", "title"), ("legend.font", "legend"),
                       ("hoverlabel.font", "hover")):
        _size(layout, path, px[size])
    if isinstance(layout.get("title"), dict) and "subtitle" in layout["title"]:
        _size(layout, "title.subtitle.font", px["legend"])
    for name in {"xaxis", "yaxis"} | {k for k in layout if AXIS_KEY.match(k)}:
        axis = layout.setdefault(name, {})
        _size(axis, "tickfont", px["tick"])
        _size(axis, "title.font", px["axis_title"])
        axis["automargin"] = True
    margin = layout.get("margin")
    if isinstance(margin, dict) and margin.get("autoexpand") is False:
        margin["autoexpand"] = True  # fixed margins fit the normal type only (BOTTOM_LEGEND)
    for note in layout.get("annotations", ()):
        _size(note, "font", px["legend"])
    for trace in spec.get("data", ()):
        kind = trace.get("type", "scatter")
        if kind in _COLOURBAR_TRACES:
            _size(trace, "colorbar.tickfont", px["tick"])
        if kind in _TEXT_TRACES and ("text" in trace or "texttemplate" in trace):
            _size(trace, "textfont", px["legend"])
    return spec
