"""Roofline: why verifying drafts is nearly free at small batch, and what it costs once the batch fills the GPU."""

from __future__ import annotations

import numpy as np
import streamlit as st

from gpu_demo.device import device_label, resolve_device
from gpu_demo.live.queue import device_queue
from gpu_demo.measure.probe import PROBE_SHAPES, format_table, probe
from specdec_core import roofline as rl
from specdec_core import steptime as stp
from ui import roofline_figures as rf
from ui.controls import bound_select, slider_input
from ui.roofline_measured import measured_section
from ui.steptime_controls import (
    algebra_link,
    hw_from_key,
    pick_batch,
    pick_context,
    pick_hardware,
    pick_precision,
    pick_shapes,
)

GAMMAS = (1, 3, 7)
CONTEXTS = (256, 2048, 16384, 131072)
BATCH = np.unique(np.round(np.geomspace(1, 1024, 161)))
SPLIT_BATCHES = (1, 16, 64, 128, 256, 512)
MAX_GAMMA = 16


def num(x: float) -> str:
    """A ridge, intensity or batch for the page: whole numbers as the seed writes them (295, 74); a value
    below 1, which only a custom device can produce, keeps two significant digits instead of showing 0."""
    return f"{x:.0f}" if x >= 1 else f"{x:.2g}"


@st.cache_data
def speedup_data(hw_key: tuple, mode: str, kv: str, target: str, draft: str, gamma: int, alpha: float,
                 contexts: tuple[int, ...]) -> tuple[dict, dict, dict]:
    """Speedup curves, speedup-1 crossings and HBM limits for each context, from specdec_core.steptime."""
    hw, t, d = hw_from_key(hw_key), stp.SHAPES[target], stp.SHAPES[draft]
    curves = {c: stp.spec_curve(t, d, hw, mode, gamma, alpha, c, BATCH, kv) for c in contexts}
    cross = {c: stp.speedup_crossing(t, d, hw, mode, gamma, alpha, c, BATCH[-1], kv) for c in contexts}
    limits = {c: stp.max_batch_in_memory(hw, t, d, mode, c, kv) for c in contexts}
    return curves, cross, limits


@st.cache_data
def best_gamma_data(hw_key: tuple, mode: str, kv: str, target: str, draft: str, alpha: float,
                    context: int) -> tuple[np.ndarray, np.ndarray]:
    """The v(gamma)-aware best gamma and its speedup at every batch of BATCH."""
    return stp.best_gamma_against_batch(stp.SHAPES[target], stp.SHAPES[draft], hw_from_key(hw_key), mode, alpha,
                                        context, BATCH, MAX_GAMMA, kv)


def readouts(hw: rl.Hardware, mode: str, gamma: int, batch: int) -> None:
    """Ridge, intensities and crossover in the seed's style, plus the FP8 vs weight-only sentence."""
    ridge, bx = rl.ridge(hw, mode), rl.crossover_batch(hw, gamma, mode)
    coef = rl.verify_intensity(1, gamma, mode)
    cols = st.columns(4)
    cols[0].metric("Ridge (FLOP/byte)", num(ridge))
    cols[1].metric("Decode intensity", f"{rl.decode_intensity(batch, mode):.0f}",
                   help=f"FLOP per byte of a plain decode step at B = {batch}")
    cols[2].metric("Verify intensity", f"{rl.verify_intensity(batch, gamma, mode):.0f}",
                   help=f"FLOP per byte of verifying gamma = {gamma} drafts at B = {batch}")
    cols[3].metric("Crossover batch B*", num(bx), help="roofline model, not a measurement")
    peak, bw = hw.peak_flops(mode) / rl.TERA, hw.bandwidth_tbs
    two = "" if rl.flops_per_weight_byte(mode) == 1 else "2"
    st.latex(
        rf"\text{{ridge}} = \frac{{{peak:g}\ \text{{TFLOP/s}}}}{{{bw:g}\ \text{{TB/s}}}} = {num(ridge)},\quad "
        rf"I_\text{{verify}} = {two}B(\gamma+1) = {coef:g}B,\quad B^* = {num(ridge)}/{coef:g} = {num(bx)}"
    )
    bf = rl.crossover_batch(hw, gamma, "bf16")
    w8 = rl.crossover_batch(hw, gamma, "w8a16")
    if hw.supports("fp8"):
        f8 = rl.crossover_batch(hw, gamma, "fp8")
        st.markdown(
            f"**FP8 versus weight-only 8-bit.** Native FP8 halves the weight bytes *and* doubles the peak, so "
            f"intensity and ridge both double ({num(rl.ridge(hw, 'fp8'))} FLOP/byte) and the crossover stays put: "
            f"{num(f8)} against {num(bf)} in BF16. Weight-only 8-bit storage with BF16 compute doubles the "
            f"intensity but not the peak, so the crossover halves to {num(w8)}: the idle compute fills twice as soon."
        )
    else:
        st.markdown(
            f"**FP8 versus weight-only 8-bit.** {hw.name} has no FP8 tensor cores, so native FP8 is not an "
            f"option here. Weight-only 8-bit storage with BF16 compute doubles the intensity but not the peak: "
            f"the crossover halves from {num(bf)} to {num(w8)}."
        )


def kernel_words(hw: rl.Hardware, t: stp.DecoderShape, mode: str, kv: str, gamma: int) -> str:
    """Which kernel class turns compute-bound, and at what batch, from the core's crossover and intensities."""
    dec, ver = rl.crossover_batch(hw, 0, mode), rl.crossover_batch(hw, gamma, mode)
    ai, ridge_kv = stp.attention_intensity(t, gamma + 1, kv), rl.ridge(hw, kv)
    fate = "stays memory-bound at every batch and context" if ai < ridge_kv else "is compute-bound"
    return (f"**Which kernel is compute-bound, and where.** The linear layers of a plain decode step turn "
            f"compute-bound at B = {num(dec)}; those of the verify pass, with gamma + 1 = {gamma + 1} tokens per "
            f"sequence, at B = {num(ver)}. Attention does {ai:g} FLOP per byte of KV cache whatever the batch and "
            f"context ({t.group:g} query heads share each KV head), against a ridge of {num(ridge_kv)}: it {fate}, "
            "and it runs after the linear layers, not hidden under them. Hatched segments below are compute-bound.")


def steptime_section(hw: rl.Hardware, hw_key: tuple, mode: str, kv: str, gamma: int, batch: int) -> None:
    """Step-time model: c(B), v(B), speedup(B), the best gamma, where it crosses 1, and the model figures."""
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
    c1, c2 = st.columns(2)
    with c1:
        target, draft = pick_shapes()
    with c2:
        ctx = pick_context(target, draft)
        alpha = slider_input("Acceptance alpha", "alpha", 0.0, 1.0, 0.8, 0.01, fmt="%.2f")
    t, d = stp.SHAPES[target], stp.SHAPES[draft]
    st.caption(f"Target: {t.source}. Draft: {d.source}.")
    try:
        cur = stp.spec_curve(t, d, hw, mode, gamma, alpha, ctx, batch, kv)
        g_best, s_best = stp.best_gamma_for_shape(t, d, hw, mode, alpha, ctx, batch, MAX_GAMMA, kv)
    except ValueError as exc:
        st.error(str(exc))
        return
    c_b, v_b, s_b = float(cur.c), float(cur.v), float(cur.speedup)
    cols = st.columns(6)
    cols[0].metric("Decode step (ms)", f"{float(cur.decode_s) * 1e3:.4g}", help=f"target, B = {batch}")
    cols[1].metric("Verify pass (ms)", f"{float(cur.verify_s) * 1e3:.4g}", help=f"gamma + 1 = {gamma + 1} tokens")
    cols[2].metric("c(B)", f"{c_b:.3f}", help=f"one draft step / one target decode step at B = {batch}")
    cols[3].metric("v(B)", f"{v_b:.2f}", help=f"verify pass / target decode step at B = {batch}, gamma = {gamma}")
    cols[4].metric(f"Speedup at B = {batch}", f"{s_b:.2f}x", help=f"gamma = {gamma}; roofline model, not a measurement")
    cols[5].metric(f"Best gamma at B = {batch}", f"{g_best}", f"{s_best:.2f}x", delta_color="off",
                   help=f"searched over gamma = 0..{MAX_GAMMA} with v(gamma, B) re-priced for each (0: do not "
                        "speculate)")
    v_one = stp.one_roofline_v(t, hw, mode, gamma, ctx, batch, kv)
    one = (f"Charged as one kernel, max(all FLOPs / peak, all bytes / bandwidth), this verify pass would cost "
           f"v = {v_one:.3f} instead of {v_b:.3f}: the linear layers' arithmetic would hide under the attention's "
           "KV-cache reads, which a real pass cannot do, since attention waits for the QKV projection and the MLP "
           "waits for attention." if abs(v_one - v_b) >= 5e-3 else
           f"Charging the pass as one kernel, max(all FLOPs / peak, all bytes / bandwidth), gives the same v here "
           f"({v_one:.3f}): nothing is compute-bound at B = {batch}. Past the knee the two part, because the linear "
           "layers' arithmetic cannot hide under the attention's KV-cache reads: attention waits for the QKV "
           "projection, and the MLP waits for attention.")
    st.markdown(one + "\n\n" + kernel_words(hw, t, mode, kv, gamma))
    link = algebra_link(hw_key, mode, kv, target, draft, batch, ctx, alpha, gamma)
    st.markdown(f"This workload in the algebra: [open it with c and v(gamma) priced for every gamma at B = {batch}, "
                f"context {ctx:,}]({link}). The algebra's free-v mode would hold one v fixed while gamma changes.")
    contexts = tuple(sorted(set(CONTEXTS) | {int(ctx)}))
    curves, cross, limits = speedup_data(hw_key, mode, kv, target, draft, gamma, alpha, contexts)
    wo = rl.crossover_batch(hw, gamma, mode)
    here = cross[int(ctx)]
    where = ("does not fall to 1 at any batch up to 1,024" if here is None
             else "is at most 1 already at batch 1" if here <= 1 else f"falls to 1 at B = {here:.0f}")
    lim = limits[int(ctx)]
    hbm = (f" (one device's HBM is full at B = {lim:.0f}; past it the curve is hypothetical)"
           if lim is not None and 1 <= lim < BATCH[-1] else "")
    st.markdown(f"At context {ctx:,}, gamma = {gamma} and alpha = {alpha:g}, the modelled speedup **{where}**{hbm}; "
                f"the linear layers' crossover for this gamma is B = {num(wo)}. Attention reads each sequence's KV "
                "cache once whatever the number of new tokens, so a long context adds the same time to a decode "
                "step and to a verify pass: v moves toward 1 and the crossing moves out.")
    if lim == 0.0:
        st.warning(f"The weights alone ({stp.memory_needed_gb(t, d, mode, 1, 0, kv):,.0f} GB) exceed {hw.name}'s "
                   f"{hw.memory_gb:g} GB: this pair needs several devices; the curves show one device's roofline.")
    elif lim is not None and batch > lim:
        st.warning(f"At B = {batch} and context {ctx:,}, target + draft weights and KV need "
                   f"{stp.memory_needed_gb(t, d, mode, batch, ctx, kv):,.0f} GB, more than {hw.name}'s "
                   f"{hw.memory_gb:g} GB: this point would not fit on one device (HBM is full at B = {lim:.0f}).")
    st.plotly_chart(rf.speedup_figure(curves, cross, wo, limits, int(ctx)), key="fig_speedup")
    split_b = np.array(SPLIT_BATCHES)
    split = [stp.step_time(t, hw, mode, split_b, n, ctx, kv) for n in (1, gamma + 1)]
    v_split = stp.spec_curve(t, d, hw, mode, gamma, alpha, ctx, split_b, kv).v
    st.plotly_chart(rf.kernel_split_figure(SPLIT_BATCHES, *split, v_split, gamma,
                                           f"Where the time goes: {t.name}, context {ctx:,}"), key="fig_split")
    g_b, s_g = best_gamma_data(hw_key, mode, kv, target, draft, alpha, int(ctx))
    st.plotly_chart(rf.best_gamma_figure(BATCH, g_b, s_g, batch), key="fig_best_gamma")
    st.caption("The best gamma falls as the batch grows: once the linear layers are compute-bound, every drafted "
               "token is another token through the target, so v(gamma) climbs by about one decode step's worth of "
               "linear-layer compute per token. Gamma = 0 means plain decoding (1x).")
    measured_section(gamma, alpha, int(ctx))  # off by default: a radio opens it


def probe_section() -> None:
    """Measure it here: a short probe of linear layers on this machine, against the roofline model."""
    st.header("Measure it here")
    dev = device_label(resolve_device("auto"))
    st.markdown(
        f"The probe times the linear layers (QKV, O, MLP) of one or two decoder layers on **{dev}** at 1, 2, "
        "4, ... tokens per pass. It first measures this machine's own ceilings (a large matmul and a memory "
        "copy), so the model line uses measured numbers, not a datasheet. It takes up to about 25 s."
    )
    shape = bound_select("Probe shape", list(PROBE_SHAPES), key="probe", default="Llama-3.2-1B, 1 layer")
    if st.button("Measure it here", key="probe_run", icon=":material/timer:"):
        bar = st.progress(0.0, text="waiting for the device (one run at a time: races and probes share it)")
        queue = device_queue(resolve_device("auto").type)  # the live page's line for this device

        def on_wait(pos: int) -> None:
            bar.progress(0.0, text=f"waiting for the device: {pos} run(s) ahead (a live race or another probe)")

        with queue.turn(on_wait):
            for ev in probe(PROBE_SHAPES[shape]):
                bar.progress(ev.fraction, text=ev.message)
                if ev.result is not None:
                    st.session_state["probe_result"] = ev.result
    res = st.session_state.get("probe_result")
    if res is None:
        return
    st.plotly_chart(rf.probe_figure(res), key="fig_probe")
    cols = st.columns(4)
    cols[0].metric("Measured matmul rate", f"{res.peak_flops / 1e9:,.1f} GFLOP/s")
    cols[1].metric("Measured copy bandwidth", f"{res.bandwidth / 1e9:,.1f} GB/s")
    cols[2].metric("Model knee (tokens)", f"{res.knee_model:.0f}")
    knee = "unreliable" if not res.knee_reliable else f"{res.knee_measured:.0f}" if res.knee_reached else "not reached"
    cols[3].metric("Measured knee (tokens)", knee, help="a fit of t0 x max(1, T / K) to the medians")
    if not res.knee_reliable:
        st.warning(f"The measured knee is not to be trusted: {res.knee_note}. The fit gives "
                   f"{res.knee_measured:.0f} tokens; read it as a guess, and measure again with more token counts.")
    st.caption(f"Measured on {res.device} in {res.elapsed_s:.1f} s. Medians; bars show the interquartile range. The "
               "machine is shared, so times vary run to run.")
    with st.expander("Table"):
        st.code(format_table(res), language=None)


def render() -> None:
    st.title("Roofline: why verifying drafts is nearly free at small batch, and what it costs as the batch fills "
             "the GPU")
    st.markdown(
        "A decode step at small batch reads every weight once and does about one multiply-add per weight "
        "per sequence: far too little arithmetic per byte to keep the tensor cores busy. Verifying gamma draft "
        "tokens in the same pass multiplies the linear layers' arithmetic by gamma + 1 for the same weight reads, "
        "so the verify pass costs about one decode step (v near 1) until the batch fills the compute. Nearly free "
        "is not free: the draft's own steps cost c each at every batch, attention reads every sequence's KV cache "
        "however much arithmetic is idle, and past the knee each verified token costs time. **Unused arithmetic "
        "alone does not guarantee a speedup.** Everything below is a **roofline model, not a measurement**, "
        "unless it says *measured*."
    )
    hw, hw_key = pick_hardware()
    c1, c2 = st.columns(2)
    with c1:
        mode, kv = pick_precision("mode")
    with c2:
        gamma = slider_input("Draft length gamma", "gamma", 0, 16, 3, 1)
    batch = pick_batch(16)
    st.info(f"Datasheet peaks are ceilings that real kernels do not reach: one H200 measured about "
            f"{rl.H200_MEASURED['bf16_matmul_tflops']:.0f} TFLOP/s on a bf16 matmul (datasheet 989) and about "
            f"{rl.H200_MEASURED['copy_tbs']:g} TB/s on a device-to-device copy (datasheet 4.8). Choose *achievable* "
            "ceilings to scale the chosen device by those fractions (or your own): the knee moves to a smaller "
            "batch.")
    if hw is not None and not hw.supports(mode):
        try:
            hw.peak_flops(mode)
        except ValueError as exc:
            st.warning(f"{exc}. Choose BF16 or weight-only 8-bit for {hw.name}.")
    elif hw is not None:
        readouts(hw, mode, gamma, batch)
        c1, c2 = st.columns(2)
        c1.plotly_chart(rf.roofline_figure(hw, mode, batch, gamma), key="fig_roofline")
        c2.plotly_chart(rf.intensity_figure(hw, mode, sorted(set(GAMMAS) | {gamma})), key="fig_intensity")
        steptime_section(hw, hw_key, mode, kv, gamma, batch)
    probe_section()


render()
