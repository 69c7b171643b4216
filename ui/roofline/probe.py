"""The roofline page's "Measure it here": the probe of linear layers on this machine, per weight format.

On a CPU the probe runs the stack on the kernels a quantised target uses (gpu_demo.models.quant), so the knee
can be measured for float32, fp16, int8 and int4 weights and set beside the model's knee for each format's
bytes per weight. Results are kept per (shape, format) in the session, so the formats can be compared.
"""

from __future__ import annotations

import streamlit as st

from gpu_demo.device import device_label, resolve_device
from gpu_demo.live.queue import device_queue
from gpu_demo.measure.probe import PROBE_FORMATS, PROBE_SHAPES, ProbeResult, format_table, probe
from gpu_demo.models.quant import quant_unavailable_reason
from ui.chart_wire import charts_last
from ui.controls import bound_select
from ui.presenter import show
from ui.roofline import figures

LAST = "probe_result"                 # the last result (a ProbeResult)
BY_FORMAT = "probe_results"           # {(shape name, weight format): ProbeResult} of this session
FORMAT_WORDS = {"float32": "float32 (4 bytes a weight)", "fp16": "fp16 (2 bytes)",
                "int8": "int8 (1.125 bytes with its scales)",
                "int4": "int4 (0.75 bytes with its scales)"}


def formats_here(device_type: str) -> list[str]:
    """The weight formats the probe can run here: the CPU's quantised kernels that pass their probe (of
    PROBE_FORMATS: the formats its model describes)."""
    if device_type != "cpu":
        return ["float32"]
    return [f for f in PROBE_FORMATS if quant_unavailable_reason(f) is None]


def knee_words(res: ProbeResult) -> str:
    """The measured knee as the page says it: tokens, 'not reached' or 'unreliable'."""
    if not res.knee_reliable:
        return "unreliable"
    return f"{res.knee_measured:.0f}" if res.knee_reached else "not reached"


def _run(shape: str, weights: str) -> None:
    """Run the probe in the device's line, with a progress bar; keep the result."""
    bar = st.progress(0.0, text="waiting for the device (one run at a time: races and probes share it)")
    queue = device_queue(resolve_device("auto").type)  # the live page's line for this device

    def on_wait(pos: int) -> None:
        bar.progress(0.0, text=f"waiting for the device: {pos} run(s) ahead (a live race or another probe)")

    with queue.turn(on_wait):
        for ev in probe(PROBE_SHAPES[shape], weights=weights):
            bar.progress(ev.fraction, text=ev.message)
            if ev.result is not None:
                st.session_state[LAST] = ev.result
                st.session_state.setdefault(BY_FORMAT, {})[(shape, weights)] = ev.result


def format_table_section(shape: str) -> None:
    """The knee per weight format measured in this session for `shape`, beside the model's."""
    runs = {f: r for (s, f), r in st.session_state.get(BY_FORMAT, {}).items() if s == shape}
    if len(runs) < 2:
        if runs:
            st.caption("Run the probe again with another weight format to compare the knees.")
        return
    st.subheader("The knee by weight format")
    st.dataframe(
        [{"weights": FORMAT_WORDS.get(f, f), "bytes per weight": r.weight_bytes, "t(1) ms": 1e3 * r.measured_s[0],
          "model knee (tokens)": round(r.knee_model, 1), "measured knee (tokens)": knee_words(r)}
         for f, r in sorted(runs.items(), key=lambda kv: PROBE_FORMATS.index(kv[0]))],
        hide_index=True)
    st.caption(
        "The model reads each format's bytes per weight at the measured copy bandwidth and computes at the "
        "measured float32 matmul rate, so its knee, peak x bytes / (2 x bandwidth), halves with every halving "
        "of the bytes: weight-only 8-bit storage halves the threshold, as the source document says. The measured knee "
        "follows only where the kernel does: here int8 and int4 also round the activations to int8 per block of 32 "
        "and multiply in integers (ONNX Runtime's kernels), so each format has its own compute rate as well. "
        "Each row is one run on a shared machine.")


@st.fragment
@charts_last()
def probe_section() -> None:
    """Measure it here: a short probe of linear layers on this machine, against the roofline model."""
    st.header("Measure it here")
    dev = resolve_device("auto")
    st.markdown(
        f"The probe times the linear layers (QKV, O, MLP) of one or two decoder layers on **{device_label(dev)}** "
        "at 1, 2, 4, ... tokens per pass. It first measures this machine's own ceilings (a large matmul and a "
        "memory copy), so the model line uses measured numbers, not a datasheet. It takes up to about 25 s."
    )
    shape = bound_select("Probe shape", list(PROBE_SHAPES), key="probe", default="Llama-3.2-1B, 1 layer")
    formats = formats_here(dev.type)
    weights = "float32"
    if len(formats) > 1:
        weights = bound_select("Weight format (this CPU's kernels)", formats, key="pweights", default="float32",
                               format_func=lambda f: FORMAT_WORDS.get(f, f),
                               help="The same stack on the kernels a quantised target uses (gpu_demo.models.quant).")
    if st.button("Measure it here", key="probe_run", icon=":material/timer:"):
        try:
            _run(shape, weights)
        except ValueError as exc:
            st.warning(f"The probe cannot run that here: {exc}")
    res = st.session_state.get(LAST)
    if res is None:
        return
    show(figures.probe_figure(res), key="fig_probe")
    cols = st.columns(4)
    cols[0].metric("Measured matmul rate", f"{res.peak_flops / 1e9:,.1f} GFLOP/s")
    cols[1].metric("Measured copy bandwidth", f"{res.bandwidth / 1e9:,.1f} GB/s")
    cols[2].metric("Model knee (tokens)", f"{res.knee_model:.0f}")
    cols[3].metric("Measured knee (tokens)", knee_words(res), help="a fit of t0 x max(1, T / K) to the medians")
    if not res.knee_reliable:
        st.warning(f"The measured knee is not to be trusted: {res.knee_note}. The fit gives "
                   f"{res.knee_measured:.0f} tokens; read it as a guess, and measure again with more token counts.")
    st.caption(f"Measured on {res.device} with {res.weights} weights in {res.elapsed_s:.1f} s. Medians; bars show "
               "the interquartile range. The machine is shared, so times vary run to run.")
    with st.expander("Table"):
        st.code(format_table(res), language=None)
    format_table_section(shape)
