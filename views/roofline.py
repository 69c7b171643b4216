"""Roofline: why speculation is free at batch 1 and fades as the batch fills the GPU."""

from __future__ import annotations

import threading

import numpy as np
import streamlit as st

from gpu_demo.device import device_label, resolve_device
from gpu_demo.measure.probe import PROBE_SHAPES, format_table, probe
from specdec_core import roofline as rl
from specdec_core import steptime as stp
from ui import roofline_figures as rf
from ui.controls import bound_radio, bound_select, number_box, slider_input

CUSTOM = "Custom"
GAMMAS = (1, 3, 7)
CONTEXTS = (256, 2048, 16384, 131072)
BATCH = np.unique(np.round(np.geomspace(1, 1024, 161)))


def num(x: float) -> str:
    """A ridge, intensity or batch for the page: whole numbers as the seed writes them (295, 74); a value
    below 1, which only a custom device can produce, keeps two significant digits instead of showing 0."""
    return f"{x:.0f}" if x >= 1 else f"{x:.2g}"


def hw_from_key(key: tuple) -> rl.Hardware:
    """A preset by name, or ("Custom", bf16, fp8, bandwidth)."""
    return rl.HARDWARE[key[0]] if key[0] != CUSTOM else rl.custom_hardware(key[1], key[3], key[2] or None)


@st.cache_data
def speedup_data(hw_key: tuple, mode: str, target: str, draft: str, gamma: int, alpha: float,
                 contexts: tuple[int, ...]) -> tuple[dict, dict, dict]:
    """Speedup curves, speedup-1 crossings and HBM limits for each context, from specdec_core.steptime."""
    hw, t, d = hw_from_key(hw_key), stp.SHAPES[target], stp.SHAPES[draft]
    curves = {c: stp.spec_curve(t, d, hw, mode, gamma, alpha, c, BATCH) for c in contexts}
    cross = {c: stp.speedup_crossing(t, d, hw, mode, gamma, alpha, c, max_batch=BATCH[-1]) for c in contexts}
    limits = {c: stp.max_batch_in_memory(hw, t, d, mode, c) for c in contexts}
    return curves, cross, limits


@st.cache_resource
def probe_lock() -> threading.Lock:
    """One probe at a time per server: a classroom shares these CPU cores."""
    return threading.Lock()


def pick_hardware() -> tuple[rl.Hardware | None, tuple]:
    """Preset or custom hardware; a bad custom value shows the core's message and gives None."""
    name = bound_select("Hardware", list(rl.HARDWARE) + [CUSTOM], key="hw", default="H100 SXM")
    if name != CUSTOM:
        hw = rl.HARDWARE[name]
        st.caption(f"Source: {hw.source}. {hw.notes}")
        return hw, (name,)
    c1, c2, c3 = st.columns(3)
    with c1:
        bf16 = number_box("BF16 dense TFLOP/s", "bf16", 0.0, 100_000.0, 989.0, 10.0)
    with c2:
        fp8 = number_box("FP8 dense TFLOP/s (0 = none)", "fp8", 0.0, 100_000.0, 1979.0, 10.0)
    with c3:
        bw = number_box("Bandwidth TB/s", "bw", 0.0, 1_000.0, 3.35, 0.05)
    key = (CUSTOM, float(bf16), float(fp8), float(bw))
    try:
        return hw_from_key(key), key
    except ValueError as exc:
        st.error(f"{exc}. Enter dense peaks > 0 and a bandwidth > 0.")
        return None, key


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


def steptime_section(hw: rl.Hardware, hw_key: tuple, mode: str, gamma: int, batch: int) -> None:
    """Step-time model: c(B), v(B), speedup(B), where it crosses 1, and the four model figures."""
    st.header("A step-time model: from the roofline to the speedup")
    st.markdown(
        "Assumptions: one pass takes max(FLOPs / peak, bytes / bandwidth) with **perfect overlap** and **no "
        "launch overhead**; bytes are the weights once, plus **each sequence reads its whole KV cache** "
        "(BF16), plus activations; FLOPs are 2 x params x tokens plus attention. The draft runs on the same "
        "device in the same precision. Then c(B) = draft step / target step and v(B) = verify pass / target step."
    )
    names = list(stp.SHAPES)
    c1, c2 = st.columns(2)
    with c1:
        target = bound_select("Target shape", names, key="target", default="Llama-3.1-8B")
        draft = bound_select("Draft shape", names, key="draft", default="Llama-3.2-1B (draft)")
    with c2:
        max_ctx = min(stp.SHAPES[target].max_context, stp.SHAPES[draft].max_context)
        ctx = slider_input("Context length L (tokens)", "ctx", 0, max_ctx, min(2048, max_ctx), 256)
        alpha = slider_input("Acceptance alpha", "alpha", 0.0, 1.0, 0.8, 0.01, fmt="%.2f")
    t, d = stp.SHAPES[target], stp.SHAPES[draft]
    st.caption(f"Target: {t.source}. Draft: {d.source}.")
    try:
        cur = stp.spec_curve(t, d, hw, mode, gamma, alpha, ctx, batch)
    except ValueError as exc:
        st.error(str(exc))
        return
    cols = st.columns(5)
    cols[0].metric("Decode step (ms)", f"{float(cur.decode_s[()]) * 1e3:.4g}", help=f"target, B = {batch}")
    cols[1].metric("Verify pass (ms)", f"{float(cur.verify_s[()]) * 1e3:.4g}", help=f"gamma + 1 = {gamma + 1} tokens")
    cols[2].metric("c(B)", f"{float(cur.c[()]):.3f}")
    cols[3].metric("v(B)", f"{float(cur.v[()]):.2f}")
    cols[4].metric("Speedup", f"{float(cur.speedup[()]):.2f}x", help="roofline model, not a measurement")
    c_b, v_b = float(cur.c[()]), float(cur.v[()])
    if c_b <= 1.0 and 0.5 <= v_b <= 5.0:                      # the algebra page's ranges
        st.markdown(f"These costs in the algebra: [open alpha = {alpha:g}, gamma = {gamma}, c = {c_b:.4f}, "
                    f"v = {v_b:.3f}](/algebra?alpha={alpha:g}&gamma={gamma}&c={c_b:.6f}&v={v_b:.6f})")
    contexts = tuple(sorted(set(CONTEXTS) | {int(ctx)}))
    curves, cross, limits = speedup_data(hw_key, mode, target, draft, gamma, alpha, contexts)
    wo = rl.crossover_batch(hw, gamma, mode)
    here = cross[int(ctx)]
    where = ("does not fall to 1 at any batch up to 1,024" if here is None
             else "is at most 1 already at batch 1" if here <= 1 else f"falls to 1 at B = {here:.0f}")
    st.markdown(f"At context {ctx:,} the modelled speedup **{where}**; the weight-only linear-layer crossover "
                f"is B = {num(wo)}. Attention reads each sequence's KV cache once whatever the number of new "
                "tokens, so long contexts keep the verify pass memory-bound and move the crossing out.")
    lim = limits[int(ctx)]
    if lim == 0.0:
        st.warning(f"The weights alone ({stp.memory_needed_gb(t, d, mode, 1, 0):,.0f} GB) exceed {hw.name}'s "
                   f"{hw.memory_gb:g} GB: this pair needs several devices; the curves show one device's roofline.")
    elif lim is not None and batch > lim:
        st.warning(f"At B = {batch} and context {ctx:,}, target + draft weights and KV need "
                   f"{stp.memory_needed_gb(t, d, mode, batch, ctx):,.0f} GB, more than {hw.name}'s "
                   f"{hw.memory_gb:g} GB: this point would not fit on one device (HBM is full at B = {lim:.0f}).")
    st.plotly_chart(rf.speedup_figure(curves, cross, wo, limits, int(ctx)), key="fig_speedup")
    split = stp.step_time(t, hw, mode, BATCH, gamma + 1, ctx)
    st.plotly_chart(rf.steptime_figure(BATCH, split, f"Where the time goes: {t.name} verify pass, "
                                       f"gamma {gamma}, context {ctx:,}"), key="fig_split")


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
        bar = st.progress(0.0, text="waiting for the probe lock")
        with probe_lock():
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
    cols[3].metric("Measured knee (tokens)", f"{res.knee_measured:.0f}" if res.knee_reached else "not reached")
    st.caption(f"Measured on {res.device} in {res.elapsed_s:.1f} s. Medians; bars show the interquartile range. The "
               "machine is shared, so times vary run to run.")
    with st.expander("Table"):
        st.code(format_table(res), language=None)


def render() -> None:
    st.title("Roofline: why speculation is free at batch 1 and fades as the batch fills the GPU")
    st.markdown(
        "A decode step at small batch reads every weight once and does about one multiply-add per weight "
        "per sequence: far too little arithmetic per byte to keep the tensor cores busy. Verifying gamma draft "
        "tokens in the same pass multiplies the arithmetic by gamma + 1 for the same weight reads, so it "
        "rides on idle compute until the batch itself fills the GPU. Everything below is a **roofline model, "
        "not a measurement**, unless it says *measured*."
    )
    hw, hw_key = pick_hardware()
    c1, c2 = st.columns(2)
    with c1:
        mode = bound_radio("Precision", list(rl.MODES), key="mode", default="bf16",
                           captions=[rl.MODE_LABELS[m] for m in rl.MODES])
    with c2:
        gamma = slider_input("Draft length gamma", "gamma", 0, 16, 3, 1)
    batch = slider_input("Batch B (sequences decoded together)", "batch", 1, 1024, 16, 1)
    st.info(f"Datasheet peaks are ceilings that real kernels do not reach: one H200 measured about "
            f"{rl.H200_MEASURED['bf16_matmul_tflops']:.0f} TFLOP/s on a bf16 matmul (datasheet 989) and about "
            f"{rl.H200_MEASURED['copy_tbs']:g} TB/s on a device-to-device copy (datasheet 4.8).")
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
        steptime_section(hw, hw_key, mode, gamma, batch)
    probe_section()


render()
