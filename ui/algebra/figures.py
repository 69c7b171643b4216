"""Plotly figure builders for the algebra page. They lay out numbers computed by specdec_core; no maths here.

Figures are built in one ``go.Figure(data, layout)`` call on the app template (the Plotly default once
``ui.theme.register_template()`` has run). ``ui.theme.new_figure`` would give the same look, but it
re-validates the whole template three times per figure, and this page draws four figures on every slider move.
The three a slider step redraws are built from plain dicts without Plotly's property validation
(ui.plainfig.PlainFigure); tests/test_algebra_figures.py checks they validate.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import plotly.graph_objects as go
from numpy.typing import NDArray

from ui.plainfig import PlainFigure
from ui.theme import BOTTOM_LEGEND, OKABE_ITO, ROLE_COLOUR, register_template

register_template()




def _vline(x: float, text: str, colour: str, dash: str = "dot", y: float = 1.0) -> tuple[dict, dict]:
    """A vertical line across the plot and its label at the top, as a layout shape and annotation."""
    shape = dict(
        type="line", xref="x", yref="paper", x0=x, x1=x, y0=0, y1=1, line=dict(color=colour, dash=dash, width=2)
    )
    note = dict(xref="x", yref="paper", x=x, y=y, text=text, showarrow=False, yanchor="bottom", font=dict(size=12))
    return shape, note


def _hline(y: float, yref: str = "y") -> dict:
    """A dashed horizontal line at y across the plot (used for speedup = 1)."""
    return dict(
        type="line",
        xref="paper",
        yref=yref,
        x0=0,
        x1=1,
        y0=y,
        y1=y,
        line=dict(color=ROLE_COLOUR["threshold"], dash="dash", width=2),
    )


def gamma_figure(
    gammas: NDArray[np.int64],
    tokens: NDArray[np.float64],
    speedups: NDArray[np.float64],
    best: tuple[int, float],
    current: int,
    positional: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None,
) -> go.Figure:
    """E[N] and speedup against gamma on one axis (both are pure numbers), the best integer gamma starred."""
    data = [
        dict(type="scatter", x=gammas, y=tokens, name="E[N], constant alpha", mode="lines+markers",
             line=dict(color=OKABE_ITO[0])),
        dict(type="scatter", x=gammas, y=speedups, name="speedup, constant alpha", mode="lines+markers",
             line=dict(color=OKABE_ITO[1])),
    ]
    if positional is not None:
        k = positional[0].size
        data += [
            dict(type="scatter", x=gammas[:k], y=positional[0], name="E[N], per position", mode="lines",
                 line=dict(color=OKABE_ITO[0], dash="dash")),
            dict(type="scatter", x=gammas[:k], y=positional[1], name="speedup, per position", mode="lines",
                 line=dict(color=OKABE_ITO[1], dash="dash")),
        ]
    data.append(dict(type="scatter", x=[best[0]], y=[best[1]], name=f"best gamma shown = {best[0]}", mode="markers",
                     marker=dict(symbol="star", size=16, color=ROLE_COLOUR["predicted"])))
    shape, note = _vline(current, f"gamma = {current}", "#888888")
    layout = dict(
        title=dict(text="Tokens per step and speedup against draft length"),
        height=420,
        shapes=[shape, _hline(1.0)],
        annotations=[note],
        xaxis=dict(title=dict(text="draft length gamma")),
        yaxis=dict(title=dict(text="E[N] (tokens) and speedup (x)"), rangemode="tozero"),
        legend=BOTTOM_LEGEND,
        margin=dict(l=70, r=20, t=60, b=105, autoexpand=False),
    )
    return PlainFigure.of(data, layout).figure()


def alpha_figure(
    alphas: NDArray[np.float64], curves: Mapping[int, NDArray[np.float64]], current: tuple[float, float]
) -> go.Figure:
    """Speedup against alpha, one line per gamma; the current operating point marked, speedup = 1 dashed."""
    data = [
        dict(type="scatter", x=alphas, y=s, name=f"gamma = {g}", mode="lines",
             line=dict(color=OKABE_ITO[i % len(OKABE_ITO)]))
        for i, (g, s) in enumerate(curves.items())
    ]
    data.append(dict(type="scatter", x=[current[0]], y=[current[1]], name="you are here", mode="markers",
                     marker=dict(symbol="x", size=14, color=ROLE_COLOUR["predicted"])))
    layout = dict(
        title=dict(text="Speedup against constant alpha, by draft length"),
        height=400,
        shapes=[_hline(1.0)],
        xaxis=dict(title=dict(text="acceptance alpha")),
        yaxis=dict(title=dict(text="speedup (x)"), rangemode="tozero"),
        legend=BOTTOM_LEGEND,
        margin=dict(l=70, r=20, t=50, b=110, autoexpand=False),
    )
    return PlainFigure.of(data, layout).figure()


def heatmap_figure(
    alphas: NDArray[np.float64],
    cs: NDArray[np.float64],
    best_speedup: NDArray[np.float64],
    best_gamma: NDArray[np.int64],
    boundary: NDArray[np.float64],
    current: tuple[float, float],
    v: float | str,
    speedup_cap: float = 5.0,
) -> go.Figure:
    """Best speedup (left, colours saturate at speedup_cap) and best gamma (right); the break-even line on both.

    boundary[j] is the smallest alpha that pays at cs[j] (inf where none does; those points are left out).
    """
    s32 = best_speedup.astype(np.float32)  # (A, C), sent as a typed array
    g16 = best_gamma.astype(np.int16)  # (A, C)
    data = [
        go.Heatmap(
            x=cs,
            y=alphas,
            z=s32,
            colorscale="Viridis",
            zmin=0.0,
            zmax=speedup_cap,
            colorbar=dict(title="x", x=0.41, len=0.9, ticksuffix="x"),
            hovertemplate="c = %{x:.3f}<br>alpha = %{y:.3f}<br>best speedup = %{z:.2f}x<extra></extra>",
        ),
        go.Heatmap(
            x=cs,
            y=alphas,
            z=g16,
            colorscale="Cividis",
            colorbar=dict(title="gamma", x=1.0, len=0.9),
            xaxis="x2",
            yaxis="y2",
            hovertemplate="c = %{x:.3f}<br>alpha = %{y:.3f}<br>best gamma = %{z}<extra></extra>",
        ),
    ]
    paying = np.isfinite(boundary)
    for xa, ya in (("x", "y"), ("x2", "y2")):
        data.append(
            go.Scatter(
                x=cs[paying],
                y=boundary[paying],
                mode="lines",
                xaxis=xa,
                yaxis=ya,
                line=dict(color="white", width=3),
                name="speedup = 1",
                hovertemplate="break-even: alpha = %{y:.3f} at c = %{x:.3f}<extra></extra>",
            )
        )
        data.append(
            go.Scatter(
                x=[current[1]],
                y=[current[0]],
                mode="markers",
                xaxis=xa,
                yaxis=ya,
                marker=dict(symbol="x", size=13, color="#D55E00", line=dict(width=1, color="white")),
                hovertemplate="you are here<extra></extra>",
            )
        )
    layout = go.Layout(
        title=f"Best integer gamma (0..32) over constant alpha and draft cost,"
        f" {v if isinstance(v, str) else f'v = {v:g}'}: speedup (left), gamma (right)",
        height=440,
        hovermode="closest",
        showlegend=False,
        xaxis=dict(domain=[0, 0.38], title="draft cost c"),
        yaxis=dict(title="acceptance alpha"),
        xaxis2=dict(domain=[0.55, 0.93], title="draft cost c"),
        yaxis2=dict(anchor="x2", matches="y"),
    )
    return go.Figure(data, layout)


def pmf_figure(
    pmf: NDArray[np.float64], simulated: NDArray[np.float64], n_steps: int, marks: Mapping[str, float]
) -> go.Figure:
    """Exact P(N = k) beside the Monte Carlo frequencies, with vertical lines at the mean, P50 and P99."""
    ks = np.arange(1, pmf.size + 1)
    data = [
        dict(type="bar", x=ks, y=pmf, name="exact P(N = k)", marker=dict(color=ROLE_COLOUR["predicted"])),
        dict(type="bar", x=ks, y=simulated, name=f"Monte Carlo, {n_steps:,} steps",
             marker=dict(color=ROLE_COLOUR["measured"], pattern=dict(shape="/"))),
    ]
    dashes = {"mean": "solid", "P50": "dash", "P99": "dot"}
    lines = [
        _vline(
            x,
            f"{label} = {x:.2f}" if label == "mean" else f"{label} = {x:g}",
            ROLE_COLOUR["threshold"],
            dashes.get(label, "solid"),
            1.0 + 0.07 * i,
        )
        for i, (label, x) in enumerate(marks.items())
    ]
    layout = dict(
        title=dict(text="Tokens per step: the exact law against the simulation"),
        height=400,
        barmode="group",
        shapes=[s for s, _ in lines],
        annotations=[a for _, a in lines],
        xaxis=dict(title=dict(text="tokens emitted in one step, N"), tickmode="linear", dtick=1),
        yaxis=dict(title=dict(text="probability")),
        margin=dict(l=80, r=20, t=80, b=85, autoexpand=False),
        legend=BOTTOM_LEGEND,
    )
    return PlainFigure.of(data, layout).figure()
