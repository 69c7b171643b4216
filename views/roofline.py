"""Roofline: why verifying drafts is nearly free at small batch, and what it costs once the batch fills the GPU."""

from __future__ import annotations

import streamlit as st

from specdec_core import roofline
from specdec_core.formatting import whole
from ui import presenter
from ui.chart_wire import charts_last
from ui.controls import slider_input
from ui.hardware_picker import pick_batch, pick_hardware, pick_precision
from ui.presenter import show
from ui.roofline import figures
from ui.roofline.h200 import h200_section
from ui.roofline.probe import probe_section
from ui.roofline.steptime import steptime_section

GAMMAS = (1, 3, 7)


def readouts(hw: roofline.Hardware, mode: str, gamma: int, batch: int) -> None:
    """Ridge, intensities and crossover in the seed's style, plus the FP8 vs weight-only sentence."""
    ridge, bx = roofline.ridge(hw, mode), roofline.crossover_batch(hw, gamma, mode)
    coef = roofline.verify_intensity(1, gamma, mode)
    cols = st.columns(4)
    cols[0].metric("Ridge (FLOP/byte)", whole(ridge))
    cols[1].metric("Decode intensity", f"{roofline.decode_intensity(batch, mode):.0f}",
                   help=f"FLOP per byte of a plain decode step at B = {batch}")
    cols[2].metric("Verify intensity", f"{roofline.verify_intensity(batch, gamma, mode):.0f}",
                   help=f"FLOP per byte of verifying gamma = {gamma} drafts at B = {batch}")
    cols[3].metric("Crossover batch B*", whole(bx), help="roofline model, not a measurement")
    peak, bw = hw.peak_flops(mode) / roofline.TERA, hw.bandwidth_tbs
    two = "" if roofline.flops_per_weight_byte(mode) == 1 else "2"
    st.latex(
        rf"\text{{ridge}} = \frac{{{peak:g}\ \text{{TFLOP/s}}}}{{{bw:g}\ \text{{TB/s}}}} = {whole(ridge)},\quad "
        rf"I_\text{{verify}} = {two}B(\gamma+1) = {coef:g}B,\quad B^* = {whole(ridge)}/{coef:g} = {whole(bx)}"
    )
    bf = roofline.crossover_batch(hw, gamma, "bf16")
    w8 = roofline.crossover_batch(hw, gamma, "w8a16")
    if hw.supports("fp8"):
        f8 = roofline.crossover_batch(hw, gamma, "fp8")
        st.markdown(
            f"**FP8 versus weight-only 8-bit.** Native FP8 halves the weight bytes *and* doubles the peak, so "
            f"intensity and ridge both double ({whole(roofline.ridge(hw, 'fp8'))} FLOP/byte) "
            "and the crossover stays put: "
            f"{whole(f8)} against {whole(bf)} in BF16. Weight-only 8-bit storage with BF16 compute doubles the "
            f"intensity but not the peak, so the crossover halves to {whole(w8)}: the idle compute fills twice as soon."
        )
    else:
        st.markdown(
            f"**FP8 versus weight-only 8-bit.** {hw.name} has no FP8 tensor cores, so native FP8 is not an "
            f"option here. Weight-only 8-bit storage with BF16 compute doubles the intensity but not the peak: "
            f"the crossover halves from {whole(bf)} to {whole(w8)}."
        )


def render() -> None:
    st.title(
        "Roofline: why verifying drafts is nearly free at small batch, and what it costs as the batch fills the GPU"
    )
    presenter.intro(
        "A decode step at small batch reads every weight once and does about one multiply-add per weight "
        "per sequence: far too little arithmetic per byte to keep the tensor cores busy. Verifying gamma draft "
        "tokens in the same pass multiplies the linear layers' arithmetic by gamma + 1 for the same weight reads, "
        "so the verify pass costs about one decode step (v near 1) until the batch fills the compute. Nearly free "
        "is not free: the draft's own steps cost c each at every batch, attention reads every sequence's KV cache "
        "however much arithmetic is idle, and past the knee each verified token costs time. **Unused arithmetic "
        "alone does not guarantee a speedup.** Everything below is a **roofline model, not a measurement**, "
        "unless it says *measured*."
    )
    model_section()
    h200_section()
    probe_section()


@st.fragment
@charts_last()
def model_section() -> None:
    """The device, precision, gamma and batch; the roofline readouts and figures; the step-time section.

    A fragment: its controls rerun it (and the step-time section inside it), not the page's text or the probe."""
    hw, hw_key = pick_hardware()
    c1, c2 = st.columns(2)
    with c1:
        mode, kv = pick_precision("mode")
    with c2:
        gamma = slider_input("Draft length gamma", "gamma", 0, 16, 3, 1)
    batch = pick_batch(16)
    notes = presenter.secondary("Datasheet against achievable ceilings")
    notes.info(
        f"Datasheet peaks are ceilings that real kernels do not reach: one H200 measured about "
        f"{roofline.H200_MEASURED['bf16_matmul_tflops']:.0f} TFLOP/s on a bf16 matmul (datasheet 989) and about "
        f"{roofline.H200_MEASURED['copy_tbs']:g} TB/s on a device-to-device copy (datasheet 4.8). Choose *achievable* "
        "ceilings to scale the chosen device by those fractions (or your own): the knee moves to a smaller "
        "batch."
    )
    if hw is not None and not hw.supports(mode):
        try:
            hw.peak_flops(mode)
        except ValueError as exc:
            st.warning(f"{exc}. Choose BF16 or weight-only 8-bit for {hw.name}.")
    elif hw is not None:
        slot = presenter.top()  # presenter mode: the roofline and intensity figures before the readouts
        readouts(hw, mode, gamma, batch)
        with presenter.key_figure(slot):
            c1, c2 = st.columns(2)
            show(figures.roofline_figure(hw, mode, batch, gamma), key="fig_roofline", where=c1)
            show(figures.intensity_figure(hw, mode, sorted(set(GAMMAS) | {gamma})), key="fig_intensity", where=c2)
        steptime_section(hw_key, mode, kv, gamma, batch)


render()
