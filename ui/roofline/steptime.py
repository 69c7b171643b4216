"""The roofline page's step-time section: c(B), v(B), speedup(B), the best gamma, where it crosses 1, the figures.

One job per function: the assumptions, the workload controls, the point readouts, the words about
the verify pass, the crossing and memory sentence, the figures. ``steptime_section`` is an ``st.fragment``:
its own controls (shapes, context, alpha) rerun it alone, with the hardware, precision, gamma and
batch its caller last passed in. Numbers come from specdec_core.steptime, cached by their inputs.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from specdec_core import roofline, steptime
from specdec_core.formatting import whole
from ui.chart_wire import charts_last
from ui.controls import slider_input
from ui.figure_cache import cached_figure
from ui.hardware_picker import algebra_link, hw_from_key, pick_context, pick_shapes
from ui.presenter import show
from ui.roofline import figures as roofline_figures
from ui.roofline.measured import measured_section

CONTEXTS = (256, 2048, 16384, 131072)
BATCH = np.unique(np.round(np.geomspace(1, 1024, 161)))
SPLIT_BATCHES = (1, 16, 64, 128, 256, 512)
MAX_GAMMA = 16

measured = st.fragment(measured_section)   # its radio reruns it alone (off by default)


# --------------------------------------------------------------------------------------- cached data ----
@st.cache_data(max_entries=64, show_spinner=False)
def speedup_data(hw_key: tuple, mode: str, kv: str, target: str, draft: str, gamma: int, alpha: float,
                 contexts: tuple[int, ...]) -> tuple[dict, dict, dict]:
    """Speedup curves, speedup-1 crossings and HBM limits for each context, from specdec_core.steptime."""
    hw, t, d = hw_from_key(hw_key), steptime.SHAPES[target], steptime.SHAPES[draft]
    curves = {c: steptime.spec_curve(t, d, hw, mode, gamma, alpha, c, BATCH, kv) for c in contexts}
    cross = {c: steptime.speedup_crossing(t, d, hw, mode, gamma, alpha, c, BATCH[-1], kv) for c in contexts}
    limits = {c: steptime.max_batch_in_memory(hw, t, d, mode, c, kv) for c in contexts}
    return curves, cross, limits


@st.cache_data(max_entries=64, show_spinner=False)
def best_gamma_data(hw_key: tuple, mode: str, kv: str, target: str, draft: str, alpha: float,
                    context: int) -> tuple[np.ndarray, np.ndarray]:
    """The v(gamma)-aware best gamma and its speedup at every batch of BATCH."""
    return steptime.best_gamma_against_batch(
        steptime.SHAPES[target], steptime.SHAPES[draft], hw_from_key(hw_key), mode, alpha, context, BATCH, MAX_GAMMA, kv
    )


@st.cache_data(max_entries=64, show_spinner=False)
def split_data(
    hw_key: tuple, mode: str, kv: str, target: str, draft: str, gamma: int, alpha: float, context: int
) -> tuple[steptime.StepTime, steptime.StepTime, np.ndarray]:
    """Decode-step and verify-pass times by kernel class, and v, at SPLIT_BATCHES."""
    hw, t, d, b = hw_from_key(hw_key), steptime.SHAPES[target], steptime.SHAPES[draft], np.array(SPLIT_BATCHES)
    decode, verify = (steptime.step_time(t, hw, mode, b, n, context, kv) for n in (1, gamma + 1))
    return decode, verify, steptime.spec_curve(t, d, hw, mode, gamma, alpha, context, b, kv).v


# ------------------------------------------------------------------------------------------- figures ----
# Cached by their inputs as plain dicts (ui.figure_cache): building and validating these three was most of the
# server's time in a roofline gamma step (py-spy), and a student dragging back and forth revisits values.
@cached_figure
def speedup_fig(
    hw_key: tuple, mode: str, kv: str, target: str, draft: str, gamma: int, alpha: float, context: int
) -> go.Figure:
    """Speedup against batch for each context (the chosen one included), with crossings and HBM limits."""
    contexts = tuple(sorted(set(CONTEXTS) | {context}))
    curves, cross, limits = speedup_data(hw_key, mode, kv, target, draft, gamma, alpha, contexts)
    return roofline_figures.speedup_figure(
        curves, cross, roofline.crossover_batch(hw_from_key(hw_key), gamma, mode), limits, context
    )


@cached_figure
def split_fig(
    hw_key: tuple, mode: str, kv: str, target: str, draft: str, gamma: int, alpha: float, context: int
) -> go.Figure:
    """Where a decode step's and a verify pass's time goes, kernel class by kernel class, at SPLIT_BATCHES."""
    decode, verify, v = split_data(hw_key, mode, kv, target, draft, gamma, alpha, context)
    return roofline_figures.kernel_split_figure(
        SPLIT_BATCHES,
        decode,
        verify,
        v,
        gamma,
        f"Where the time goes: {steptime.SHAPES[target].name}, context {context:,}",
    )


@cached_figure
def best_gamma_fig(
    hw_key: tuple, mode: str, kv: str, target: str, draft: str, alpha: float, context: int, batch: int
) -> go.Figure:
    """The best gamma and its speedup against batch, the chosen batch marked."""
    g_b, s_g = best_gamma_data(hw_key, mode, kv, target, draft, alpha, context)
    return roofline_figures.best_gamma_figure(BATCH, g_b, s_g, batch)


# ---------------------------------------------------------------------------------------------- jobs ----
def assumptions() -> None:
    """The section's header and what the model assumes."""
    st.header("A step-time model: from the roofline to the speedup")
    st.markdown(
        "Assumptions: a pass runs its kernel classes one after another, and each takes max(FLOPs / peak, "
        "bytes / bandwidth), with **perfect overlap inside a kernel** and **no launch overhead**. Linear layers "
        "read their weights once per pass (the input embedding table is a gather, not a matmul) and do 2 FLOPs "
        "per weight per token; attention reads **each sequence's whole KV cache** and does QK^T and PV at the KV "
        "cache's precision; activations are read and written. The draft runs on the same device in the same "
        "precision. Then c(B) = draft step / target step and v(gamma, B) = verify pass / target step. The "
        "measured mode at the end of this section sets these numbers beside a real engine's."
    )


def workload() -> tuple[str, str, int, float]:
    """(target, draft, context, alpha): the section's own controls, and the shapes' sources."""
    c1, c2 = st.columns(2)
    with c1:
        target, draft = pick_shapes()
    with c2:
        ctx = pick_context(target, draft)
        alpha = slider_input("Acceptance alpha", "alpha", 0.0, 1.0, 0.8, 0.01, fmt="%.2f")
    st.caption(f"Target: {steptime.SHAPES[target].source}. Draft: {steptime.SHAPES[draft].source}.")
    return target, draft, int(ctx), float(alpha)


def point_readouts(cur: steptime.SpecCurve, best: tuple[int, float], gamma: int, batch: int) -> None:
    """Decode and verify times, c(B), v(B), the speedup and the best gamma at the chosen batch."""
    c_b, v_b, s_b = float(cur.c), float(cur.v), float(cur.speedup)
    cols = st.columns(6)
    cols[0].metric("Decode step (ms)", f"{float(cur.decode_s) * 1e3:.4g}", help=f"target, B = {batch}")
    cols[1].metric("Verify pass (ms)", f"{float(cur.verify_s) * 1e3:.4g}", help=f"gamma + 1 = {gamma + 1} tokens")
    cols[2].metric("c(B)", f"{c_b:.3f}", help=f"one draft step / one target decode step at B = {batch}")
    cols[3].metric("v(B)", f"{v_b:.2f}", help=f"verify pass / target decode step at B = {batch}, gamma = {gamma}")
    cols[4].metric(f"Speedup at B = {batch}", f"{s_b:.2f}x", help=f"gamma = {gamma}; roofline model, not a measurement")
    cols[5].metric(
        f"Best gamma at B = {batch}",
        f"{best[0]}",
        f"{best[1]:.2f}x",
        delta_color="off",
        help=f"searched over gamma = 0..{MAX_GAMMA} with v(gamma, B) re-priced for each (0: do not speculate)",
    )


def kernel_words(hw: roofline.Hardware, t: steptime.DecoderShape, mode: str, kv: str, gamma: int) -> str:
    """Which kernel class turns compute-bound, and at what batch, from the core's crossover and intensities."""
    dec, ver = roofline.crossover_batch(hw, 0, mode), roofline.crossover_batch(hw, gamma, mode)
    ai, ridge_kv = steptime.attention_intensity(t, gamma + 1, kv), roofline.ridge(hw, kv)
    fate = "stays memory-bound at every batch and context" if ai < ridge_kv else "is compute-bound"
    return (
        f"**Which kernel is compute-bound, and where.** The linear layers of a plain decode step turn "
        f"compute-bound at B = {whole(dec)}; those of the verify pass, with gamma + 1 = {gamma + 1} tokens per "
        f"sequence, at B = {whole(ver)}. Attention does {ai:g} FLOP per byte of KV cache whatever the batch and "
        f"context ({t.group:g} query heads share each KV head), against a ridge of {whole(ridge_kv)}: it {fate}, "
        "and it runs after the linear layers, not hidden under them. Hatched segments below are compute-bound."
    )


def pass_words(
    hw: roofline.Hardware, t: steptime.DecoderShape, mode: str, kv: str, gamma: int, ctx: int, batch: int, v_b: float
) -> None:
    """Why the verify pass is priced kernel by kernel (against one max(...) for the pass), and which kernel binds."""
    v_one = steptime.one_roofline_v(t, hw, mode, gamma, ctx, batch, kv)
    one = (
        f"Charged as one kernel, max(all FLOPs / peak, all bytes / bandwidth), this verify pass would cost "
        f"v = {v_one:.3f} instead of {v_b:.3f}: the linear layers' arithmetic would hide under the attention's "
        "KV-cache reads, which a real pass cannot do, since attention waits for the QKV projection and the MLP "
        "waits for attention."
        if abs(v_one - v_b) >= 5e-3
        else f"Charging the pass as one kernel, max(all FLOPs / peak, all bytes / bandwidth), gives the same v here "
        f"({v_one:.3f}): nothing is compute-bound at B = {batch}. Past the knee the two part, because the linear "
        "layers' arithmetic cannot hide under the attention's KV-cache reads: attention waits for the QKV "
        "projection, and the MLP waits for attention."
    )
    st.markdown(one + "\n\n" + kernel_words(hw, t, mode, kv, gamma))


def crossing_words(
    hw: roofline.Hardware,
    hw_key: tuple,
    mode: str,
    kv: str,
    target: str,
    draft: str,
    gamma: int,
    alpha: float,
    ctx: int,
    batch: int,
) -> None:
    """Where the modelled speedup falls to 1 at this context, and where one device's HBM is full."""
    t, d = steptime.SHAPES[target], steptime.SHAPES[draft]
    contexts = tuple(sorted(set(CONTEXTS) | {ctx}))
    _, cross, limits = speedup_data(hw_key, mode, kv, target, draft, gamma, alpha, contexts)
    here, lim = cross[ctx], limits[ctx]
    where = (
        "does not fall to 1 at any batch up to 1,024"
        if here is None
        else "is at most 1 already at batch 1"
        if here <= 1
        else f"falls to 1 at B = {here:.0f}"
    )
    hbm = (
        f" (one device's HBM is full at B = {lim:.0f}; past it the curve is hypothetical)"
        if lim is not None and 1 <= lim < BATCH[-1]
        else ""
    )
    st.markdown(
        f"At context {ctx:,}, gamma = {gamma} and alpha = {alpha:g}, the modelled speedup **{where}**{hbm}; "
        f"the linear layers' crossover for this gamma is B = {whole(roofline.crossover_batch(hw, gamma, mode))}. "
        "Attention reads each sequence's KV cache once whatever the number of new tokens, so a long context "
        "adds the same time to a decode step and to a verify pass: v moves toward 1 and the crossing moves "
        "out."
    )
    if lim == 0.0:
        st.warning(
            f"The weights alone ({steptime.memory_needed_gb(t, d, mode, 1, 0, kv):,.0f} GB) exceed {hw.name}'s "
            f"{hw.memory_gb:g} GB: this pair needs several devices; the curves show one device's roofline."
        )
    elif lim is not None and batch > lim:
        st.warning(
            f"At B = {batch} and context {ctx:,}, target + draft weights and KV need "
            f"{steptime.memory_needed_gb(t, d, mode, batch, ctx, kv):,.0f} GB, more than {hw.name}'s "
            f"{hw.memory_gb:g} GB: this point would not fit on one device (HBM is full at B = {lim:.0f})."
        )


def figures(
    hw_key: tuple, mode: str, kv: str, target: str, draft: str, gamma: int, alpha: float, ctx: int, batch: int
) -> None:
    """The speedup, kernel-split and best-gamma figures (cached by their inputs)."""
    show(speedup_fig(hw_key, mode, kv, target, draft, gamma, alpha, ctx), key="fig_speedup")
    show(split_fig(hw_key, mode, kv, target, draft, gamma, alpha, ctx), key="fig_split")
    show(best_gamma_fig(hw_key, mode, kv, target, draft, alpha, ctx, batch), key="fig_best_gamma")
    st.caption(
        "The best gamma falls as the batch grows: once the linear layers are compute-bound, every drafted "
        "token is another token through the target, so v(gamma) climbs by about one decode step's worth of "
        "linear-layer compute per token. Gamma = 0 means plain decoding (1x)."
    )


@st.fragment
@charts_last()
def steptime_section(hw_key: tuple, mode: str, kv: str, gamma: int, batch: int) -> None:
    """Step-time model: c(B), v(B), speedup(B), the best gamma, where it crosses 1, and the model figures."""
    hw = hw_from_key(hw_key)
    assumptions()
    target, draft, ctx, alpha = workload()
    t, d = steptime.SHAPES[target], steptime.SHAPES[draft]
    try:
        cur = steptime.spec_curve(t, d, hw, mode, gamma, alpha, ctx, batch, kv)
        best = steptime.best_gamma_for_shape(t, d, hw, mode, alpha, ctx, batch, MAX_GAMMA, kv)
    except ValueError as exc:
        st.error(str(exc))
        return
    point_readouts(cur, best, gamma, batch)
    pass_words(hw, t, mode, kv, gamma, ctx, batch, float(cur.v))
    link = algebra_link(hw_key, mode, kv, target, draft, batch, ctx, alpha, gamma)
    st.markdown(
        f"This workload in the algebra: [open it with c and v(gamma) priced for every gamma at B = {batch}, "
        f"context {ctx:,}]({link}). The algebra's free-v mode would hold one v fixed while gamma changes."
    )
    crossing_words(hw, hw_key, mode, kv, target, draft, gamma, alpha, ctx, batch)
    figures(hw_key, mode, kv, target, draft, gamma, alpha, ctx, batch)
    measured(gamma, alpha, ctx)  # off by default: a radio opens it
