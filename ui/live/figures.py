"""Plotly figures of the live page's measured panel, sweep and batch view (no maths: inputs are computed)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import plotly.graph_objects as go

from specdec_core.repeats import Spread
from ui.theme import ROLE_COLOUR, new_figure

BELOW = dict(orientation="h", yanchor="top", y=-0.3, xanchor="left", x=0.0)  # legend under the plot


def alpha_figure(alphas: Sequence[float], reached: Sequence[int], alpha_const: float) -> go.Figure:
    """Measured alpha_j as bars (hover: rounds that reached j), the constant-alpha fit as a dashed line."""
    a = np.asarray(alphas, dtype=float)
    j = np.arange(1, a.size + 1)
    fig = new_figure("Acceptance by draft position", height=340)
    fig.add_bar(
        x=j,
        y=np.nan_to_num(a, nan=0.0),
        name="alpha_j measured",
        marker_color=ROLE_COLOUR["measured"],
        customdata=np.asarray(reached),
        hovertemplate="j=%{x}: alpha=%{y:.3f} (%{customdata} rounds)<extra></extra>",
    )
    if np.isfinite(alpha_const):
        fig.add_scatter(
            x=j,
            y=np.full(j.size, alpha_const),
            mode="lines",
            name=f"constant fit {alpha_const:.3f}",
            line=dict(color=ROLE_COLOUR["predicted"], dash="dash"),
        )
    fig.update_layout(
        xaxis_title="draft position j",
        yaxis_title="alpha_j",
        yaxis_range=[0, 1.05],
        xaxis=dict(dtick=1),
        hovermode="closest",
        legend=BELOW,
        margin=dict(b=110),
    )
    return fig


def length_figure(counts: Sequence[int], pmf_const: Sequence[float], pmf_pos: Sequence[float]) -> go.Figure:
    """Histogram of tokens per round (full rounds) against accepted_length_pmf at the constant fit and per position."""
    c = np.asarray(counts, dtype=float)
    k = np.arange(1, c.size + 1)
    freq = c / c.sum() if c.sum() > 0 else c
    fig = new_figure(f"Tokens per pass ({int(c.sum())} full rounds)", height=340)
    fig.add_bar(x=k, y=freq, name="measured", marker_color=ROLE_COLOUR["measured"])
    fig.add_scatter(
        x=k,
        y=np.asarray(pmf_const),
        mode="markers+lines",
        name="pmf, constant alpha",
        line=dict(color=ROLE_COLOUR["predicted"], dash="dash"),
    )
    fig.add_scatter(
        x=k,
        y=np.asarray(pmf_pos),
        mode="markers",
        name="pmf, measured alpha_j",
        marker=dict(color=ROLE_COLOUR["target"], symbol="diamond", size=10),
    )
    fig.update_layout(
        xaxis_title="tokens emitted in the round (N)",
        yaxis_title="probability",
        xaxis=dict(dtick=1),
        hovermode="closest",
        legend=BELOW,
        margin=dict(b=110),
    )
    return fig


def _bars(spreads: Sequence[Spread]) -> dict:
    """Plotly error bars from each median down to its min and up to its max."""
    return dict(type="data", symmetric=False, array=[max(0.0, s.hi - s.median) for s in spreads],
                arrayminus=[max(0.0, s.median - s.lo) for s in spreads], thickness=1.5, width=6)


def sweep_figure(gammas: Sequence[int], measured: Sequence[Spread], predicted: Sequence[Spread]) -> go.Figure:
    """Measured against predicted speedup over gamma: medians over repeats, bars from min to max, break-even at 1."""
    fig = new_figure("Speedup against draft length gamma (median, bars: min to max over repeats)", height=360)
    fig.add_scatter(
        x=list(gammas),
        y=[s.median for s in predicted],
        error_y=_bars(predicted),
        mode="lines+markers",
        name="predicted (algebra on measured alpha_j, c, v)",
        line=dict(color=ROLE_COLOUR["predicted"], dash="dash"),
        marker=dict(symbol="diamond", size=8),
    )
    fig.add_scatter(
        x=list(gammas),
        y=[s.median for s in measured],
        error_y=_bars(measured),
        mode="lines+markers",
        name="measured (wall clock)",
        line=dict(color=ROLE_COLOUR["measured"]),
        marker=dict(symbol="circle", size=9),
    )
    fig.add_hline(y=1.0, line=dict(color="#999999", dash="dot"))
    fig.update_layout(
        xaxis_title="gamma", yaxis_title="speedup over autoregressive", xaxis=dict(dtick=1), hovermode="x unified"
    )
    return fig


def batch_figure(
    batches: Sequence[int], v_measured: Sequence[float], v_model: Sequence[float] | None, model_name: str
) -> go.Figure:
    """Verify cost v against batch size, measured on this GPU, beside the roofline page's step-time model."""
    fig = new_figure("Verification cost v against batch size", height=340)
    fig.add_scatter(
        x=list(batches),
        y=list(v_measured),
        mode="lines+markers",
        name="measured here",
        line=dict(color=ROLE_COLOUR["measured"]),
    )
    if v_model is not None:
        fig.add_scatter(
            x=list(batches),
            y=list(v_model),
            mode="lines",
            name=f"model: {model_name}",
            line=dict(color=ROLE_COLOUR["predicted"], dash="dash"),
        )
    fig.update_layout(
        xaxis_title="batch size B", yaxis_title="v = verify step / decode step", xaxis_type="log", hovermode="x unified"
    )
    return fig
