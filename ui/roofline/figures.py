"""Plotly figure builders for the roofline page. Numbers come from specdec_core; no streamlit here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from specdec_core import roofline
from specdec_core.steptime import SpecCurve, StepTime, linear_stack_time
from ui.plainfig import PlainFigure
from ui.theme import BOTTOM_LEGEND, OKABE_ITO, ROLE_COLOUR, fixed_margins

MODEL_LABEL = "roofline model, not a measurement"


def _titled(title: str, subtitle: str = MODEL_LABEL, **layout) -> PlainFigure:
    """A figure whose subtitle says what kind of number it shows (plain dicts, ui.plainfig: a gamma step
    rebuilds five of these)."""
    layout.setdefault("margin", fixed_margins(l=80, t=80, b=120))
    layout.setdefault("legend", BOTTOM_LEGEND)
    layout.setdefault("height", 460)
    return PlainFigure(title=dict(text=title, subtitle=dict(text=subtitle)), **layout)


def _vline(fig: PlainFigure, x: float, text: str, colour: str, dash: str, log_x: bool, y: float = 1.0,
           anchor: str = "left") -> None:
    """A vertical line with a label; on a log axis an annotation's x is log10(x) (plotly's convention)."""
    fig.add_vline(x=x, line=dict(color=colour, dash=dash, width=2))
    fig.add_annotation(x=float(np.log10(x)) if log_x else x, y=y, yref="paper", text=text, showarrow=False,
                       xanchor=anchor, yanchor="top", xshift=4 if anchor == "left" else -4,
                       font=dict(color=colour, size=12), bgcolor="rgba(255,255,255,0.8)")


def _hline(fig: PlainFigure, y: float, text: str, colour: str, dash: str, log_y: bool) -> None:
    """A horizontal line with a label at the left; on a log axis the annotation's y is log10(y)."""
    fig.add_hline(y=y, line=dict(color=colour, dash=dash, width=2))
    fig.add_annotation(x=0.01, xref="paper", y=float(np.log10(y)) if log_y else y, text=text, showarrow=False,
                       xanchor="left", yanchor="bottom", font=dict(color=colour, size=12),
                       bgcolor="rgba(255,255,255,0.8)")


def roofline_figure(hw: roofline.Hardware, mode: str, batch: int, gamma: int) -> go.Figure:
    """Log-log attainable TFLOP/s against intensity, the ridge, and a decode and a verify point at batch B."""
    ridge = roofline.ridge(hw, mode)
    x = np.geomspace(0.1, max(1e4, 10 * ridge), 300)
    y = np.asarray(roofline.attainable_flops(hw, x, mode)) / roofline.TERA
    fig = _titled(f"The roofline: {hw.name}, {mode}",
                  xaxis=dict(type="log", title="arithmetic intensity (FLOP per byte)"),
                  yaxis=dict(type="log", title="attainable TFLOP/s"), hovermode="closest")
    fig.add_scatter(x=x, y=y, mode="lines", name="min(peak, intensity x bandwidth)",
                    line=dict(color=ROLE_COLOUR["predicted"], width=3))
    _vline(fig, ridge, f"ridge {ridge:.0f}", ROLE_COLOUR["threshold"], "dash", log_x=True, y=0.08)
    points = [(f"plain decode, B = {batch}", float(roofline.decode_intensity(batch, mode)), "circle", OKABE_ITO[1]),
              (f"verify, B = {batch}, gamma = {gamma}", float(roofline.verify_intensity(batch, gamma, mode)),
               "diamond", OKABE_ITO[2])]
    for name, i, symbol, colour in points:
        fig.add_scatter(
            x=[i],
            y=[float(roofline.attainable_flops(hw, i, mode)) / roofline.TERA],
            mode="markers",
            name=name,
            marker=dict(size=14, symbol=symbol, color=colour, line=dict(width=1, color="#222")),
            hovertemplate=f"{name}<br>intensity %{{x:.0f}} FLOP/byte<br>%{{y:.0f}} TFLOP/s<extra></extra>",
        )
    return fig.figure()


def intensity_figure(hw: roofline.Hardware, mode: str, gammas: Sequence[int], max_batch: int = 1024) -> go.Figure:
    """Verify intensity against batch for several gamma, the ridge, and each gamma's crossover batch."""
    b = np.geomspace(1, max_batch, 200)
    ridge = roofline.ridge(hw, mode)
    fig = _titled(
        f"Verify intensity against batch, {mode}",
        xaxis=dict(type="log", title="batch B"),
        yaxis=dict(type="log", title="FLOP per byte"),
    )
    for k, g in enumerate(gammas):
        colour = OKABE_ITO[k % len(OKABE_ITO)]
        fig.add_scatter(
            x=b,
            y=roofline.verify_intensity(b, g, mode),
            mode="lines",
            name=f"gamma = {g}",
            line=dict(color=colour, width=2.5),
        )
        bx = roofline.crossover_batch(hw, g, mode)
        if 1 <= bx <= max_batch:
            fig.add_scatter(
                x=[bx],
                y=[ridge],
                mode="markers",
                showlegend=False,
                marker=dict(size=11, color=colour),
                hovertemplate=f"gamma = {g}: crossover B = {bx:.0f}<extra></extra>",
            )
    _hline(fig, ridge, f"ridge {ridge:.0f} FLOP/byte", ROLE_COLOUR["threshold"], "dash", log_y=True)
    return fig.figure()


KERNEL_COLOURS = (OKABE_ITO[0], OKABE_ITO[1], OKABE_ITO[4])  # linear layers, attention, activations


def kernel_split_figure(
    batches: Sequence[int], decode: StepTime, verify: StepTime, v: np.ndarray, gamma: int, title: str
) -> go.Figure:
    """Per batch, a plain decode step and a verify pass as stacked bars of their kernel classes' times (linear
    axis); a compute-bound kernel's segment is hatched. v(B) is the ratio of the two bars' heights."""
    b = [f"B = {x}" for x in batches]
    fig = _titled(
        title,
        xaxis=dict(
            type="multicategory",
            title=f"batch B: plain decode (T = 1) and verify (T = gamma + 1 = {gamma + 1}) side by side",
        ),
        yaxis=dict(title="time per pass (ms)"),
        barmode="stack",
        hovermode="closest",
        margin=fixed_margins(l=80, t=80, b=160),
    )  # two rows of category labels
    for kind, st in (("decode", decode), ("verify", verify)):
        x = [b, [kind] * len(b)]
        for k, colour in zip(st.kernels, KERNEL_COLOURS):
            bound = np.asarray(k.compute_bound)
            fig.add_bar(
                x=x,
                y=np.asarray(k.total_s) * 1e3,
                name=k.name,
                legendgroup=k.name,
                showlegend=kind == "decode",
                marker_color=colour,
                marker_pattern_shape=["/" if c else "" for c in bound],
                marker_line=dict(width=0.5, color="#222"),
                customdata=np.where(bound, "compute-bound", "memory-bound"),
                hovertemplate=f"{k.name}, %{{x}}: %{{y:.3f}} ms, %{{customdata}}<extra></extra>",
            )
    fig.add_scatter(
        x=[b, ["verify"] * len(b)],
        y=np.asarray(verify.total_s) * 1e3,
        mode="text",
        text=[f"v = {r:.2f}" for r in v],
        textposition="top center",
        showlegend=False,
        hoverinfo="skip",
    )
    fig.add_bar(
        x=[[b[0]], ["decode"]],
        y=[0],
        name="hatched: compute-bound",
        marker_color="#ffffff",
        marker_pattern_shape="/",
        marker_line=dict(width=1, color="#222"),
        hoverinfo="skip",
    )
    return fig.figure()


def best_gamma_figure(batch: np.ndarray, best: np.ndarray, speedups: np.ndarray, chosen: int) -> go.Figure:
    """The v(gamma)-aware best gamma against batch (steps), and the speedup it reaches (right axis)."""
    fig = _titled(
        "Best draft length against batch, with v(gamma, B) re-priced for every gamma",
        xaxis=dict(type="log", title="batch B"),
        yaxis=dict(title="best gamma (0 = do not speculate)", rangemode="tozero", dtick=1),
        yaxis2=dict(
            title="speedup at the best gamma (x)",
            overlaying="y",
            side="right",
            rangemode="tozero",
            showgrid=False,
            tickmode="auto",
            tickformat=".1f",
        ),
        hovermode="x unified",
        margin=fixed_margins(l=80, r=80, t=80, b=120),
    )  # the right axis
    fig.add_scatter(
        x=batch,
        y=best,
        mode="lines",
        line=dict(shape="hv", color=OKABE_ITO[0], width=3),
        name="best gamma",
        hovertemplate="B = %{x:.0f}: best gamma %{y}<extra></extra>",
    )
    fig.add_scatter(
        x=batch,
        y=speedups,
        mode="lines",
        yaxis="y2",
        line=dict(color=OKABE_ITO[1], width=2, dash="dot"),
        name="speedup at that gamma",
        hovertemplate="%{y:.2f}x<extra></extra>",
    )
    _vline(fig, chosen, f"B = {chosen}", ROLE_COLOUR["threshold"], "dash", log_x=True)
    return fig.figure()


def speedup_figure(
    curves: Mapping[int, SpecCurve],
    crossings: Mapping[int, float | None],
    weight_only_b: float,
    memory_limits: Mapping[int, float | None],
    chosen: int,
) -> go.Figure:
    """Speedup against batch for several contexts; where each crosses 1, the weight-only crossover, HBM limits."""
    fig = _titled(
        "Speedup against batch, by context length",
        xaxis=dict(type="log", title="batch B"),
        yaxis=dict(title="speedup over plain decoding (x)"),
        hovermode="closest",
    )
    for k, (ctx, cur) in enumerate(sorted(curves.items())):
        colour = OKABE_ITO[k % len(OKABE_ITO)]
        width = 4 if ctx == chosen else 2
        fig.add_scatter(
            x=cur.batch, y=cur.speedup, mode="lines", name=f"context {ctx:,}", line=dict(color=colour, width=width)
        )
        bx = crossings.get(ctx)
        if bx is not None and bx > 1:
            fig.add_scatter(
                x=[bx],
                y=[1.0],
                mode="markers",
                showlegend=False,
                marker=dict(size=12, symbol="x", color=colour, line=dict(width=2, color=colour)),
                hovertemplate=f"context {ctx:,}: speedup = 1 at B = {bx:.0f}<extra></extra>",
            )
        lim = memory_limits.get(ctx)
        if lim is not None and 1 <= lim <= cur.batch[-1]:
            y = float(np.interp(np.log(lim), np.log(cur.batch), cur.speedup))
            fig.add_scatter(
                x=[lim],
                y=[y],
                mode="markers",
                showlegend=False,
                marker=dict(size=12, symbol="line-ns-open", color=colour, line=dict(width=3)),
                hovertemplate=f"context {ctx:,}: HBM full at B = {lim:.0f}<extra></extra>",
            )
    for name, symbol in [("speedup falls to 1", "x"), ("HBM full (weights + KV)", "line-ns-open")]:
        fig.add_scatter(
            x=[None],
            y=[None],
            mode="markers",
            name=name,
            marker=dict(size=12, symbol=symbol, color="#555555", line=dict(width=2, color="#555555")),
        )
    _hline(fig, 1.0, "no gain (speedup 1)", "#555555", "dash", log_y=False)
    _vline(
        fig,
        weight_only_b,
        f"weight-only crossover B = {weight_only_b:.0f}",
        ROLE_COLOUR["threshold"],
        "dot",
        log_x=True,
    )
    return fig.figure()


def probe_figure(res) -> go.Figure:
    """Measured time per pass against tokens per pass, with the model from the measured ceilings and both knees."""
    fig = PlainFigure(
        title=dict(
            text=f"Measured on {res.device} vs the roofline model",
            subtitle=dict(
                text=f"{res.shape.name}, {res.dtype}: measured points are measurements; the line is the roofline model"
            ),
        ),
        xaxis=dict(type="log", title="tokens per pass T"),
        yaxis=dict(type="log", title="ms per pass"),
        margin=fixed_margins(l=80, t=80, b=120),
        legend=BOTTOM_LEGEND,
        height=460,
        hovermode="closest",
    )
    lo = [m - s[0] for m, s in zip(res.measured_s, res.spread_s)]
    hi = [s[1] - m for m, s in zip(res.measured_s, res.spread_s)]
    grid = np.geomspace(min(res.tokens), max(res.tokens), 200)
    model = linear_stack_time(
        res.n_weights,
        grid,
        res.weight_bytes,
        res.peak_flops,
        res.bandwidth,
        res.shape.act_elems_per_token * res.weight_bytes,
    )
    fig.add_scatter(
        x=grid,
        y=model * 1e3,
        mode="lines",
        name="roofline model (measured ceilings)",
        line=dict(color=ROLE_COLOUR["predicted"], width=3),
    )
    fig.add_scatter(
        x=res.tokens,
        y=np.array(res.measured_s) * 1e3,
        mode="markers+lines",
        name="measured (median, IQR bars)",
        marker=dict(size=10, color=ROLE_COLOUR["measured"], symbol="circle"),
        line=dict(color=ROLE_COLOUR["measured"], width=1),
        error_y=dict(type="data", symmetric=False, array=np.array(hi) * 1e3, arrayminus=np.array(lo) * 1e3),
    )
    _vline(
        fig,
        res.knee_model,
        f"model knee {res.knee_model:.0f}",
        ROLE_COLOUR["predicted"],
        "dash",
        log_x=True,
        anchor="right",
    )
    if res.knee_reached:
        _vline(
            fig,
            res.knee_measured,
            f"measured knee {res.knee_measured:.0f}",
            ROLE_COLOUR["measured"],
            "dot",
            log_x=True,
            y=0.9,
        )
    return fig.figure()


def h200_small_model_figure(
    per_pass: Sequence[int],
    tokens: Sequence[int],
    measured_v: Sequence[float],
    pure_v: Sequence[float],
    costed_v: Sequence[float],
    knee_v: float,
    ridge: float,
    subtitle: str,
) -> go.Figure:
    """v against tokens per pass (T x B, log): the H200's measured points beside the two models at the same points."""
    fig = _titled(
        "A 135M model on an H200: v stays flat far past the ridge",
        subtitle,
        xaxis=dict(type="log", title="tokens computed in one pass (T new tokens x B sequences)"),
        yaxis=dict(type="log", title="v = verify pass / plain decode step (log)"),
        hovermode="closest",
    )
    hover = [f"T = {t}, B = {n // t}" for n, t in zip(per_pass, tokens)]
    series = (
        ("measured (H200, eager)", measured_v, "circle", ROLE_COLOUR["measured"], 11),
        ("model: roofline + the measured fixed step + logits", costed_v, "diamond-open", OKABE_ITO[0], 10),
        ("model: pure roofline", pure_v, "x-thin-open", ROLE_COLOUR["predicted"], 9),
    )
    for name, y, symbol, colour, size in series:
        fig.add_scatter(
            x=list(per_pass),
            y=list(y),
            mode="markers",
            name=name,
            text=hover,
            hovertemplate="%{text}: %{x} tokens, v = %{y:.2f}<extra></extra>",
            marker=dict(symbol=symbol, color=colour, size=size, line=dict(width=1.5, color=colour)),
        )
    _hline(fig, knee_v, f"v = {knee_v:g}: the knee's threshold", ROLE_COLOUR["threshold"], "dot", log_y=True)
    _vline(fig, ridge, f"ridge: {ridge:.0f} tokens a pass", ROLE_COLOUR["threshold"], "dash", log_x=True, y=0.95)
    return fig.figure()
