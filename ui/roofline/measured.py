"""The roofline page's measured mode: the step-time model set beside a real engine's fitted step times.

Numbers come from specdec_core.steptime (the model) and specdec_core.measured_steps (the fit); this module lays
them out, caches them and builds the figure.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from specdec_core import roofline, steptime
from specdec_core.algebra import speedup
from specdec_core.measured_steps import FITS, PUBLISHED, gamma_in_fit, measured_curve
from ui.controls import bound_radio
from ui.presenter import show
from ui.theme import OKABE_ITO, ROLE_COLOUR, new_figure

FIT_NAME = "vLLM, H100, Llama-3.1-8B + EAGLE"
BATCHES = np.unique(np.round(np.geomspace(1, 256, 41)))
TABLE_BATCHES = (1, 64, 128, 256)


@st.cache_data(max_entries=64, show_spinner=False)
def comparison(gamma: int, alpha: float, context: int) -> dict[str, np.ndarray]:
    """Model (H100 SXM, bf16, Llama-3.1-8B + 1B draft) against the fit, on BATCHES and TABLE_BATCHES."""
    fit = FITS[FIT_NAME]
    t, d, hw = steptime.SHAPES["Llama-3.1-8B"], steptime.SHAPES["Llama-3.2-1B (draft)"], roofline.HARDWARE["H100 SXM"]
    out: dict[str, np.ndarray] = {}
    for tag, b in (("", BATCHES), ("table_", np.array(TABLE_BATCHES, dtype=float))):
        model = steptime.spec_curve(t, d, hw, "bf16", gamma, alpha, context, b)
        meas = measured_curve(fit, gamma, alpha, context, b)
        out |= {f"{tag}batch": b, f"{tag}model_v": model.v, f"{tag}fit_v": meas.v, f"{tag}model_c": model.c,
                f"{tag}fit_c": meas.c, f"{tag}in_fit": meas.in_fit,
                f"{tag}model_s": model.speedup, f"{tag}mixed_s": np.asarray(speedup(alpha, gamma, model.c, meas.v)),
                f"{tag}fit_s": meas.speedup, f"{tag}model_ms": model.decode_s * 1e3,
                f"{tag}fit_ms": meas.decode_s * 1e3}
    return out


def measured_figure(data: dict[str, np.ndarray], gamma: int, alpha: float, context: int) -> go.Figure:
    """Speedup against batch: the roofline, the roofline's c with the fit's v, and the fit's own round; the part of
    the fit's curves beyond what it was fitted on is drawn faint and shaded."""
    fit = FITS[FIT_NAME]
    fig = new_figure(title=dict(text=f"Model against a measured engine: gamma = {gamma}, alpha = {alpha:g}, "
                                     f"context {context:,}",
                                subtitle=dict(text="vLLM on one H100, Llama-3.1-8B (SpecDecode-Bench's fit); "
                                                   "shaded: beyond the fitted batches")),
                     xaxis=dict(type="log", title="batch B"), yaxis=dict(title="speedup (x)"),
                     legend=dict(orientation="h", yanchor="top", y=-0.2, xanchor="left", x=0.0),
                     margin=dict(t=80, b=40), height=440)
    b, inside = data["batch"], data["in_fit"]
    b_max = float(max(fit.batches))
    fig.add_vrect(x0=b_max, x1=float(b[-1]), fillcolor=ROLE_COLOUR["threshold"], opacity=0.08, line_width=0,
                  annotation_text="fit extrapolated", annotation_position="top left")
    fig.add_scatter(x=b, y=data["model_s"], name="roofline model (c and v modelled)",
                    line=dict(color=ROLE_COLOUR["predicted"], width=3))
    label = f"measured fit: EAGLE-3 draft, {fit.overhead_s * 1e3:.1f} ms host overhead per step"
    if not gamma_in_fit(fit, gamma):
        label += f" (gamma > {max(fit.draft_gammas)}: extrapolated)"
    for key, name, colour, width, dash in (("mixed_s", "model's c, measured-fit v", OKABE_ITO[0], 2, "dash"),
                                           ("fit_s", label, ROLE_COLOUR["measured"], 3, "dot")):
        fig.add_scatter(x=b[inside], y=data[key][inside], name=name, legendgroup=key,
                        line=dict(color=colour, width=width, dash=dash))
        past = b >= b_max
        fig.add_scatter(x=b[past], y=data[key][past], name=f"{name}, extrapolated", legendgroup=key,
                        showlegend=False, opacity=0.45, line=dict(color=colour, width=width, dash=dash))
    fig.add_hline(y=1.0, line=dict(color=ROLE_COLOUR["threshold"], dash="dash", width=1))
    return fig


def fit_range_label(fit_ok: bool, batch: int, gamma: int) -> str:
    """'fitted', or which of batch and gamma lies beyond the fit's data."""
    fit = FITS[FIT_NAME]
    if fit_ok:
        return "fitted"
    past = [f"B > {max(fit.batches)}"] if batch > max(fit.batches) else []
    past += [] if gamma_in_fit(fit, gamma) else [f"gamma > {max(fit.draft_gammas)}"]
    return "extrapolated (" + ", ".join(past) + ")"


def crossing_words(gamma: int, alpha: float, context: int) -> str:
    """Where the model's speedup falls to 1 on the batch axis up to B = 1,024, in words."""
    if gamma == 0:
        return "With gamma = 0 nothing is drafted: the speedup is exactly 1 at every batch"
    cross = model_crossing(gamma, alpha, context)
    if cross is None:
        return f"The model's speedup never falls to 1 up to B = 1,024 at context {context:,}"
    if cross <= 1.0:
        return (f"At alpha = {alpha:g} and gamma = {gamma} the model's speedup is below 1 from B = 1 at context "
                f"{context:,}: speculation is a slowdown at every batch")
    return (f"At alpha = {alpha:g} and gamma = {gamma} the model's speedup falls to 1 at B = {cross:,.0f} at "
            f"context {context:,}")


def measured_section(gamma: int, alpha: float, context: int) -> None:
    """The measured mode: figure, a four-batch table and where the model and the engine part."""
    fit = FITS[FIT_NAME]
    st.subheader("Measured mode: the roofline against a real engine")
    shown = bound_radio("Step times", ["model", "measured"], key="steps", default="model",
                        format_func={"model": "roofline model only",
                                     "measured": "beside a measured engine (vLLM, H100)"}.get)
    if shown == "model":
        st.caption("The model above has no fixed cost per step and perfect overlap. Choose the measured engine to "
                   "see how far a real one is from it (SpecDecode-Bench's fit of vLLM on an H100).")
        return
    try:
        data = comparison(int(gamma), float(alpha), int(context))
    except ValueError as exc:
        st.warning(f"The measured comparison needs a context the fit's model allows: {exc}")
        return
    b1 = 0                                                   # TABLE_BATCHES starts at B = 1
    fit_c, model_c = float(data["table_fit_c"][b1]), float(data["table_model_c"][b1])
    fit_s, model_s = float(data["table_fit_s"][b1]), float(data["table_model_s"][b1])
    beats = "beats" if fit_s > model_s else "does not beat"
    g_max = max(fit.draft_gammas)
    st.caption(f"Source: {fit.source}. Fit: t = K x {fit.s_kv:.3g} s + N x {fit.s_token:.3g} s + "
               f"{fit.s_fixed * 1e3:.2f} ms per pass (K tokens of KV read, N tokens computed), plus "
               f"{fit.overhead_s * 1e3:.2f} ms of host overhead per step. It describes one engine, model and GPU "
               "(H100, Llama-3.1-8B with an EAGLE-3 head); the model side uses this page's Llama-3.1-8B and "
               "Llama-3.2-1B shapes on an H100 SXM in bf16, whatever is chosen above. "
               f"At B = 1 the fit's round {beats} the model ({fit_s:.2f}x against {model_s:.2f}x): its EAGLE-3 head "
               f"drafts for {fit_c:.2f} of a target step per token where the 1B draft costs {model_c:.2f}, and its "
               "fixed host overhead is paid once per round, not once per token. Both take alpha as given.")
    st.caption(f"The fit holds on what it was fitted on: B = {', '.join(str(x) for x in fit.batches)} and draft "
               f"lengths {', '.join(str(x) for x in fit.draft_gammas)}, with additive compute at one context. "
               f"The chart and table run to B = {int(BATCHES[-1])}: past B = {max(fit.batches)} the fit is "
               "extrapolated (shaded in the chart, marked in the table). An EAGLE head drafts in gamma sequential "
               f"passes, so past gamma = {g_max} the draft round is priced as gamma / {g_max} of the fitted "
               f"{g_max}-token round, an extrapolation too"
               + (f" (gamma = {gamma} here)." if not gamma_in_fit(fit, gamma) else "."))
    show(measured_figure(data, int(gamma), float(alpha), int(context)), key="fig_measured")
    rows = {"batch": [int(x) for x in data["table_batch"]],
            "fit range": [fit_range_label(bool(ok), int(b), int(gamma))
                          for ok, b in zip(data["table_in_fit"], data["table_batch"], strict=True)],
            "plain step, model (ms)": np.round(data["table_model_ms"], 2),
            "plain step, fit (ms)": np.round(data["table_fit_ms"], 2),
            "v, model": np.round(data["table_model_v"], 3), "v, fit": np.round(data["table_fit_v"], 3),
            "speedup, model": np.round(data["table_model_s"], 2),
            "speedup, model c + fit v": np.round(data["table_mixed_s"], 2),
            "speedup, fit": np.round(data["table_fit_s"], 2)}
    rows |= memory_columns(int(context))
    st.dataframe(rows, hide_index=True, width="stretch")
    kv_model = kv_read_s_per_token()
    st.markdown(
        "The roofline prices each kernel at max(FLOPs / peak, bytes / bandwidth), overlapped perfectly, with no "
        f"fixed cost per step. Its KV-read term is close to the fit's ({kv_model:.3g} against {fit.s_kv:.3g} s per "
        "token of context), but in the fit a verify pass gets dearer long before the linear layers reach the "
        "compute roof: kernels reach neither peak, and the fit charges each extra token computed about "
        f"{fit.s_token * 1e6:.0f} us. At B = 1 and context {int(context):,} the fit gives a plain step of "
        f"{float(data['table_fit_ms'][b1]):.2f} ms where the model gives {float(data['table_model_ms'][b1]):.2f} ms; "
        "both are values of models (the fit is additive in KV and compute, fitted on batches up to "
        f"{max(fit.batches)} at one context), not measurements at this point. " + published_words(data))
    b_2k, b_16k, c_1, c_256 = bounds(int(gamma), float(alpha))
    big = placement(256, 16384)
    st.markdown(
        f"{crossing_words(int(gamma), float(alpha), int(context))}. Why long context moves the crossing out: every "
        "sequence reads its whole KV cache in both a decode step and a verify pass, so that shared term pulls v "
        "toward 1 (MagicDec reports the same trend). What bounds it: memory (one 80 GB H100 holds target, draft "
        f"and their bf16 KV only up to about B = {b_2k:.0f} at context 2,048 and B = {b_16k:.0f} at 16,384; "
        f"B = 256 at 16,384 needs {big.kv_gb:.0f} GB of KV, {big.total_gb:.0f} GB with the weights: at least "
        f"{big.capacity_gpus} such GPUs, and since tensor parallelism splits KV at most {_target().kv_heads} ways "
        f"({_target().kv_heads} KV heads), the "
        f"fewest that hold it are {big.gpus}, {big.replicas} replicas of TP {big.tp}; the table's last columns give "
        "each batch at this context), and the draft's own KV reads, which grow with batch and context too (the "
        f"model's c rises from {c_1:.3f} at B = 1 to {c_256:.3f} at B = 256 at context 2,048, toward its KV ratio "
        f"{steptime.kv_ratio(*_draft_target()):.2f}). That bottleneck (MagicDec's) is a separate draft model's: the "
        f"fit's EAGLE-3 head keeps one layer of the target's KV, a ratio of {steptime.head_kv_ratio(_target()):.3f}.")


def published_words(data: dict[str, np.ndarray]) -> str:
    """Published serving speedups set against the two curves at the same batch (where the table has that batch)."""
    parts = []
    for pub in PUBLISHED:
        hit = np.nonzero(data["table_batch"] == pub.batch)[0]
        if hit.size == 0:
            continue
        i = int(hit[0])
        m, f = float(data["table_model_s"][i]), float(data["table_fit_s"][i])
        where = ("above both curves" if pub.speedup > max(m, f) else "below both curves" if pub.speedup < min(m, f)
                 else "between the two curves")
        parts.append(f"{pub.speedup:.2f}x at batch {pub.batch}, {where} here (model {m:.2f}x, fit {f:.2f}x)")
    src = PUBLISHED[0]
    return (f"Published serving results, for {src.proposer} in {src.engine} on one H100 with Llama-3.1-8B "
            f"(Li et al., 2025), measured " + "; ".join(parts) + ". Their alpha and gamma are their own, not "
            "the ones chosen above.")


@st.cache_data(max_entries=64, show_spinner=False)
def model_crossing(gamma: int, alpha: float, context: int) -> float | None:
    """The model's smallest batch up to 1,024 with speedup <= 1 (specdec_core.steptime.speedup_crossing)."""
    t, d, hw = steptime.SHAPES["Llama-3.1-8B"], steptime.SHAPES["Llama-3.2-1B (draft)"], roofline.HARDWARE["H100 SXM"]
    return steptime.speedup_crossing(t, d, hw, "bf16", gamma, alpha, context, max_batch=1024.0)


def kv_read_s_per_token() -> float:
    """The model's KV read per token of context on the H100 SXM: KV bytes per token / HBM bandwidth."""
    t, hw = steptime.SHAPES["Llama-3.1-8B"], roofline.HARDWARE["H100 SXM"]
    return t.kv_bytes("bf16") / (hw.bandwidth_tbs * 1e12)


def _target() -> steptime.DecoderShape:
    """The model side's target, Llama-3.1-8B."""
    return steptime.SHAPES["Llama-3.1-8B"]


def _draft_target() -> tuple[steptime.DecoderShape, steptime.DecoderShape]:
    """(the model side's 1B draft, its 8B target), in kv_ratio's order."""
    return steptime.SHAPES["Llama-3.2-1B (draft)"], _target()


@st.cache_data(max_entries=64, show_spinner=False)
def placement(batch: int, context: int) -> steptime.GpuPlacement:
    """Weights + bf16 KV of the 8B target and 1B draft on 80 GB GPUs (specdec_core.steptime.gpu_placement)."""
    draft, target = _draft_target()
    return steptime.gpu_placement(target, draft, "bf16", batch, context, gpu_gb=80.0)


def memory_columns(context: int) -> dict[str, list[str]]:
    """The table's HBM columns for TABLE_BATCHES at this context: KV and weights in GB, the fewest 80 GB GPUs."""
    points = [placement(b, context) for b in TABLE_BATCHES]
    return {"KV + weights, GB (8B + 1B, bf16)": [f"{p.kv_gb:,.1f} + {p.weights_gb:.1f}" for p in points],
            "fewest 80 GB GPUs": [f"{p.gpus}" + ("" if p.gpus == 1 else f" (TP {p.tp} x {p.replicas})")
                                  for p in points]}


@st.cache_data(max_entries=64, show_spinner=False)
def bounds(gamma: int, alpha: float) -> tuple[float, float, float, float]:
    """(HBM-full batch at context 2,048 and 16,384 on an 80 GB H100, c at B = 1 and 256 at context 2,048)."""
    t, d, hw = steptime.SHAPES["Llama-3.1-8B"], steptime.SHAPES["Llama-3.2-1B (draft)"], roofline.HARDWARE["H100 SXM"]
    c = steptime.spec_curve(t, d, hw, "bf16", gamma, alpha, 2048, [1, 256]).c
    return (float(steptime.max_batch_in_memory(hw, t, d, "bf16", 2048)),
            float(steptime.max_batch_in_memory(hw, t, d, "bf16", 16384)), float(c[0]), float(c[1]))
