"""Plotly figures for the proof page. Builders only: every number arrives computed by specdec_core. Built as
plain dicts (ui.plainfig: a vocab step rebuilds them all), each checked against Plotly's validation in the tests."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.colors import get_colorscale

from ui.plainfig import PlainFigure
from ui.theme import BOTTOM_LEGEND, ROLE_COLOUR, fixed_margins, foot_margin

HATCH = "/"   # non-colour cue for the resampled (residual) mass


def _legend_below(fig: PlainFigure) -> PlainFigure:
    """The legend at the figure's foot in fixed margins (ui.theme.BOTTOM_LEGEND), so that long titles and legends
    never overlap and the chart is laid out once."""
    fig.update_layout(legend=BOTTOM_LEGEND, margin=fixed_margins(t=50, b=max(110, foot_margin(fig.legend_entries()))))
    return fig


def _tokens(v: int) -> list[str]:
    """Token labels on the x axis."""
    return [str(i) for i in range(v)]


def pq_figure(p: np.ndarray, q: np.ndarray) -> go.Figure:
    """Target p and draft q as bars side by side."""
    x = _tokens(p.size)
    fig = PlainFigure(title="Target p and draft q", barmode="group", xaxis_title="token", yaxis_title="probability")
    fig.add_bar(x=x, y=p, name="target p", marker_color=ROLE_COLOUR["target"])
    fig.add_bar(x=x, y=q, name="draft q", marker_color=ROLE_COLOUR["draft"], marker_pattern_shape=".")
    return _legend_below(fig).figure()


def decomposition_figure(accepted: np.ndarray, resampled: np.ndarray, p: np.ndarray) -> go.Figure:
    """Stacked per token: min(p, q) accepted plus (1 - alpha) r resampled, with p marked on top."""
    x = _tokens(p.size)
    fig = PlainFigure(title="p = accepted + resampled, token by token", barmode="stack",
                     xaxis_title="token", yaxis_title="probability")
    fig.add_bar(x=x, y=accepted, name="accepted: min(p, q)", marker_color=ROLE_COLOUR["accepted"])
    fig.add_bar(x=x, y=resampled, name="resampled: (1 - alpha) r", marker_color=ROLE_COLOUR["residual"],
                marker_pattern_shape=HATCH)
    fig.add_scatter(x=x, y=p, mode="markers", name="target p",
                    marker=dict(symbol="line-ew", size=28, line=dict(width=3, color=ROLE_COLOUR["predicted"])))
    return _legend_below(fig).figure()


def areas_figure(alpha: float, tv: float) -> go.Figure:
    """Each law's unit of mass split into the shared part alpha and its own excess TV."""
    rows = ["q", "p"]
    fig = PlainFigure(title="alpha and TV as areas: each law's unit of mass", barmode="stack",
                     xaxis=dict(range=[0, 1], title="probability mass"), hovermode="closest")
    fig.add_bar(y=rows, x=[alpha, alpha], orientation="h", name=f"shared min(p, q): alpha = {alpha:.4f}",
                marker_color=ROLE_COLOUR["accepted"], text=[f"alpha {alpha:.3f}"] * 2, textposition="inside")
    fig.add_bar(y=["p"], x=[tv], orientation="h", name=f"(p - q)+: TV = {tv:.4f} (resampled)",
                marker_color=ROLE_COLOUR["residual"], marker_pattern_shape=HATCH, text=[f"TV {tv:.3f}"],
                textposition="inside")
    fig.add_bar(y=["q"], x=[tv], orientation="h", name=f"(q - p)+: TV = {tv:.4f} (rejected)",
                marker_color=ROLE_COLOUR["draft"], marker_pattern_shape="x", text=[f"TV {tv:.3f}"],
                textposition="inside")
    _legend_below(fig).update_layout(height=260, margin=dict(t=50, b=100))
    return fig.figure()


def sampled_figure(p: np.ndarray, empirical: np.ndarray, law: np.ndarray | None, n: int, title: str) -> go.Figure:
    """Empirical frequencies of n draws against p, plus the rule's own exact law where it differs from p."""
    x = _tokens(p.size)
    fig = PlainFigure(title=title, xaxis_title="token", yaxis_title="probability", bargap=0.35)
    fig.add_bar(x=x, y=empirical, name=f"sampled frequency (n = {n:,})", marker_color=ROLE_COLOUR["measured"])
    fig.add_scatter(x=x, y=p, mode="markers", name="target p",
                    marker=dict(symbol="line-ew", size=26, line=dict(width=3, color=ROLE_COLOUR["target"])))
    if law is not None:
        fig.add_scatter(x=x, y=law, mode="markers", name="this rule's exact law",
                        marker=dict(symbol="circle-open", size=11, line=dict(width=2), color=ROLE_COLOUR["predicted"]))
    return _legend_below(fig).figure()


def joint_figure(joint: np.ndarray, title: str) -> go.Figure:
    """A V x V joint law as an annotated heatmap: rows the first token, columns the second."""
    labels = _tokens(joint.shape[0])
    fig = PlainFigure(title=title, height=330, xaxis_title="second token", yaxis_title="first token",
                      hovermode="closest")
    fig.add_heatmap(z=joint, x=labels, y=labels, colorscale=get_colorscale("Blues"), zmin=0.0, zmax=float(joint.max()),
                    text=np.vectorize(lambda v: f"{v:.4f}")(joint), texttemplate="%{text}", showscale=False)
    fig.update_yaxes(autorange="reversed", showgrid=False)
    fig.update_xaxes(showgrid=False)
    return fig.figure()
