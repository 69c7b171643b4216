"""The roofline page's measured section: the verify cost of the lab's own 135M target, measured on one H200.

Every number is read from the committed run through specdec_core.h200_run (its provenance is printed under the
figure); the two models beside it come from specdec_core.steptime at the same (T, B) points.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from specdec_core import h200_run as h200
from specdec_core import roofline
from ui.figure_cache import cached_figure
from ui.presenter import show
from ui.roofline import figures

small_model_figure = cached_figure(figures.h200_small_model_figure)


@st.cache_data(show_spinner=False)
def knees() -> dict[str, float | int | None]:
    """The measured flat range and knee, the models' knees, the flat level of v, the ridge and the step floors."""
    pts = h200.verify_points()
    flat_until, knee = h200.flat_and_knee(pts)
    floor = h200.step_floor()
    one = next(g for g in h200.graph_steps() if g.tokens == 1)
    return {
        "flat_until": flat_until,
        "knee": knee,
        "flat_v": float(np.median(pts.v[pts.per_pass <= flat_until])),
        "pure_knee": h200.model_knee(pts, with_costs=False),
        "costed_knee": h200.model_knee(pts, with_costs=True),
        "ridge": roofline.ridge(roofline.HARDWARE["H200 SXM"]),
        "context": pts.context,
        "max_b": int(pts.batch.max()),
        "max_t": int(pts.tokens.max()),
        "eager_ms": floor["eager_ms"],
        "chain_ms": floor["gemv_chain_graph_ms"],
        "read_ms": floor["weight_read_ms"],
        "g_eager_ms": one.eager_ms,
        "g_graph_ms": one.graph_ms,
        "launch_share": h200.launch_share(),
    }


def _tokens(n: int | None) -> str:
    """A tokens-per-pass count for prose; 'not reached' where the threshold is never met."""
    return "not reached in the measured range" if n is None else f"{n:,} tokens a pass"


def h200_section() -> None:
    """Measured v(T, B) of SmolLM2-135M on an H200 beside the roofline, and why a small model's knee is far out."""
    k, pts = knees(), h200.verify_points()
    st.subheader("Measured: a small model is launch-bound, so its knee is not at the ridge")
    st.markdown(
        f"The lab's own engine verified T = 2 to {k['max_t']} tokens for B = 1 to {k['max_b']} sequences of "
        f"SmolLM2-135M at context {k['context']} on one H200 (**measured**, eager PyTorch, bf16). v stayed near "
        f"{k['flat_v']:.2f} up to {k['flat_until']:,} tokens a pass and first reached {h200.KNEE_V:g} at "
        f"{_tokens(k['knee'])}. The pure roofline puts that knee at {_tokens(k['pure_knee'])}, near the ridge "
        f"({k['ridge']:.0f} FLOP per byte on the H200's datasheet, which for a large model's verify pass is "
        f"B(gamma + 1) = {k['ridge']:.0f} tokens: the crossover above). Adding the measured plain step as a fixed "
        f"cost per pass and the logits' traffic moves the model's knee to {_tokens(k['costed_knee'])}."
    )
    cols = st.columns(4)
    cols[0].metric("eager decode step", f"{k['eager_ms']:.1f} ms", help="median, batch 1, measured")
    cols[1].metric(
        "from a CUDA graph",
        f"{k['g_graph_ms']:.2f} ms",
        help=f"replayed; {k['g_eager_ms']:.1f} ms eager in that run, logits identical",
    )
    cols[2].metric("bare GEMV chain in a graph", f"{k['chain_ms']:.2f} ms", help="the same matrix shapes, no model")
    cols[3].metric(
        "reading every weight once",
        f"{k['read_ms']:.3f} ms",
        help=f"{h200.SMOLLM2_135M.params / 1e6:.1f}M bf16 weights at "
        f"{roofline.HARDWARE['H200 SXM'].bandwidth_tbs:g} TB/s",
    )
    mv, cv = h200.model_v(pts, with_costs=False), h200.model_v(pts, with_costs=True)
    show(
        small_model_figure(
            pts.per_pass.tolist(),
            pts.tokens.tolist(),
            pts.v.tolist(),
            mv.tolist(),
            cv.tolist(),
            h200.KNEE_V,
            k["ridge"],
            "measured points beside two models at the same (T, B); hover for T and B",
        ),
        key="fig_h200_small",
    )
    vocab, meas = h200.SMOLLM2_135M.vocab, roofline.H200_MEASURED
    st.markdown(
        f"**The lesson.** Reading every weight of a 135M model takes {k['read_ms'] * 1e3:.0f} us, yet a step took "
        f"{k['eager_ms']:.1f} ms: kernel launches and host work. Replayed from a CUDA graph the same step took "
        f"{k['g_graph_ms']:.2f} ms against {k['g_eager_ms']:.1f} ms eager in the same run, so "
        f"{k['launch_share']:.0%} of it was launch overhead. A pass that is mostly fixed cost barely notices more "
        f"tokens, so v stays flat until the pass's own arithmetic and its logits ({vocab:,} of them per token) "
        "grow comparable to that fixed cost: **a small model's knee is set by overhead and the logits, not by the "
        "ridge.** A large model's decode step is the weight read itself, which is why the crossover above applies "
        "to it. Assumptions of the models: the H200's achievable ceilings "
        f"({meas['bf16_matmul_tflops']:.0f} TFLOP/s, {meas['copy_tbs']:g} TB/s), the measured step at B = 1 as the "
        "fixed cost, the logits written and read once in float32."
    )
    st.caption(f"Source: {h200.provenance().line()}.")
