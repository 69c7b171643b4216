"""The live page's batch view: v measured against batch size on a CUDA GPU, beside the roofline's step time."""

from __future__ import annotations

import streamlit as st

from gpu_demo.device import gpu_name
from gpu_demo.live import runner
from gpu_demo.measure import batch as measure_batch
from ui.live.figures import batch_figure
from ui.presenter import show


def batch_section(settings: runner.Settings, sp: runner.SharedPair | None, on_wait, prog_ph) -> None:
    """v against batch size on a CUDA GPU (the built-in model is cache-resident on a CPU: no roofline to show)."""
    st.subheader("Batch view: v against batch size")
    if settings.device != "cuda":
        st.info(
            "Unavailable here: the batch view needs a CUDA GPU, and this run uses the CPU. A CPU does have a "
            "memory-bound regime (decoding a multi-GB model streams every weight from DRAM each step, at a much "
            "lower ridge than a GPU's), but this app's built-in target (about 16 MB in float32) stays in the "
            "CPU's cache, so a batch sweep here would measure per-call overheads, not the roofline."
        )
        return
    if sp is not None and st.button(f"Measure v at batch 1..256 (gamma = {settings.gamma})", key="batch_btn"):
        try:
            with sp.queue.turn(on_wait):
                rows = measure_batch.measure_v(
                    sp.pair.target, settings.gamma, on_progress=lambda f: prog_ph.progress(f, text="batch sweep")
                )
            st.session_state["live_batch"] = (settings.gamma, rows, gpu_name())
        except (RuntimeError, ValueError) as exc:  # e.g. out of GPU memory, or a model without batched caches
            st.error(f"The batch sweep failed on this pair: {exc}")
        prog_ph.empty()
    batch = st.session_state.get("live_batch")
    if batch is not None and sp is not None:
        g, rows, gpu = batch
        hw, shape = (
            measure_batch.gpu_preset(gpu),
            measure_batch.target_shape(sp.pair.target, sp.pair.info.get("target_params")),
        )
        curve = measure_batch.model_v(shape, hw, g, [r[0] for r in rows]) if hw and shape else None
        show(
            batch_figure(
                [r[0] for r in rows], [r[3] for r in rows], curve, hw.name if hw else "no preset for this GPU"
            ),
            key="fig_batch",
        )
        st.caption(
            f"Measured on {gpu} at gamma = {g}. The model is the roofline page's step time for "
            f"{hw.name if hw else 'no matching preset'}; where the measured v stays near 1 the verify pass "
            "is memory- or launch-bound, and the crossover is where it starts to climb."
        )
