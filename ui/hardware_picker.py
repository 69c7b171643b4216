"""Controls for a decoder workload, shared by the roofline and algebra pages.

Hardware (a preset or custom), datasheet or achievable ceilings, precision and KV cache, target and draft
shapes, batch and context: each bound to a URL parameter of the same name on both pages (precision is
``mode`` on the roofline page and ``prec`` on the algebra page, whose ``mode`` is the acceptance mode), so
the roofline page can hand its whole workload to the algebra page in one link.
"""

from __future__ import annotations

from urllib.parse import quote, urlencode

import streamlit as st

from specdec_core import roofline, steptime
from ui.controls import bound_radio, bound_select, number_box, slider_input

CUSTOM = "Custom"
CEILING_LABELS = {
    "datasheet": "datasheet peaks",
    "achievable": "achievable (a measured fraction of the datasheet)",
}
DEFAULT_COMPUTE = round(roofline.ACHIEVABLE_COMPUTE, 3)        # 790 / 989 on one H200
DEFAULT_BANDWIDTH = round(roofline.ACHIEVABLE_BANDWIDTH, 3)    # 4.3 / 4.8 on the same H200


def hw_from_key(key: tuple) -> roofline.Hardware:
    """key = (name, bf16, fp8, bw, ceilings, compute fraction, bandwidth fraction); bf16, fp8, bw for Custom only."""
    name, bf16, fp8, bw, ceil, fc, fb = key
    base = roofline.HARDWARE[name] if name != CUSTOM else roofline.custom_hardware(bf16, bw, fp8 or None)
    return roofline.ceilings(base, ceil, fc, fb)


def pick_ceilings() -> tuple[str, float, float]:
    """Datasheet peaks, or an achievable fraction of them (defaults: what one H200 measured)."""
    ceil = bound_radio("Ceilings", roofline.CEILINGS, key="ceil", default="datasheet", format_func=CEILING_LABELS.get,
                       help="Datasheet peaks flatter the model's knee; real kernels reach a fraction of them.")
    if ceil == "datasheet":
        return ceil, DEFAULT_COMPUTE, DEFAULT_BANDWIDTH
    c1, c2 = st.columns(2)
    with c1:
        fc = number_box("Fraction of peak compute", "fc", 0.05, 1.0, DEFAULT_COMPUTE, 0.01, "%.3f")
    with c2:
        fb = number_box("Fraction of bandwidth", "fb", 0.05, 1.0, DEFAULT_BANDWIDTH, 0.01, "%.3f")
    st.caption(
        f"Defaults: one H200 measured {roofline.H200_MEASURED['bf16_matmul_tflops']:.0f} of 989 TFLOP/s on a bf16 "
        f"matmul and {roofline.H200_MEASURED['copy_tbs']:g} of 4.8 TB/s on a copy. The same compute fraction is "
        "applied to FP8."
    )
    return ceil, float(fc), float(fb)


def pick_hardware() -> tuple[roofline.Hardware | None, tuple]:
    """A preset or custom device, then its ceilings; a bad custom value shows the core's message and gives None."""
    name = bound_select("Hardware", list(roofline.HARDWARE) + [CUSTOM], key="hw", default="H100 SXM")
    bf16 = fp8 = bw = 0.0
    if name != CUSTOM:
        hw = roofline.HARDWARE[name]
        st.caption(f"Source: {hw.source}. {hw.notes}")
    else:
        c1, c2, c3 = st.columns(3)
        with c1:
            bf16 = number_box("BF16 dense TFLOP/s", "bf16", 0.0, 100_000.0, 989.0, 10.0)
        with c2:
            fp8 = number_box("FP8 dense TFLOP/s (0 = none)", "fp8", 0.0, 100_000.0, 1979.0, 10.0)
        with c3:
            bw = number_box("Bandwidth TB/s", "bw", 0.0, 1_000.0, 3.35, 0.05)
    key = (name, float(bf16), float(fp8), float(bw), *pick_ceilings())
    try:
        return hw_from_key(key), key
    except ValueError as exc:
        st.error(f"{exc}. Enter dense peaks > 0 and a bandwidth > 0.")
        return None, key


def pick_precision(key: str = "mode") -> tuple[str, str]:
    """(mode, kv): the weights' precision mode and, in FP8 mode, the KV cache's precision (BF16 otherwise)."""
    mode = bound_radio(
        "Precision",
        list(roofline.MODES),
        key=key,
        default="bf16",
        captions=[roofline.MODE_LABELS[m] for m in roofline.MODES],
    )
    if mode != "fp8":
        return mode, "bf16"
    kv = bound_radio(
        "KV cache",
        list(steptime.KV_PRECISIONS),
        key="kv",
        default="bf16",
        format_func=steptime.KV_LABELS.get,
        help="An FP8 KV cache halves the bytes attention reads and runs QK^T and PV at the FP8 peak.",
    )
    return mode, kv


def pick_shapes() -> tuple[str, str]:
    """Target and draft decoder shapes, by preset name."""
    names = list(steptime.SHAPES)
    target = bound_select("Target shape", names, key="target", default="Llama-3.1-8B")
    draft = bound_select("Draft shape", names, key="draft", default="Llama-3.2-1B (draft)")
    return target, draft


def pick_context(target: str, draft: str) -> int:
    """Cached tokens per sequence, up to what both shapes allow."""
    max_ctx = min(steptime.SHAPES[target].max_context, steptime.SHAPES[draft].max_context)
    return int(slider_input("Context length L (tokens)", "ctx", 0, max_ctx, min(2048, max_ctx), 256))


def pick_batch(default: int = 16) -> int:
    """Sequences decoded together."""
    return int(slider_input("Batch B (sequences decoded together)", "batch", 1, 1024, default, 1))


def algebra_link(
    hw_key: tuple, mode: str, kv: str, target: str, draft: str, batch: int, context: int, alpha: float, gamma: int
) -> str:
    """The algebra page's address in decoder-shape cost mode for this whole workload (not one v)."""
    name, bf16, fp8, bw, ceil, fc, fb = hw_key
    q: dict[str, str] = {"cost": "shape", "target": target, "draft": draft, "hw": name}
    if name == CUSTOM:
        q |= {"bf16": f"{bf16:g}", "fp8": f"{fp8:g}", "bw": f"{bw:g}"}
    q["ceil"] = ceil
    if ceil != "datasheet":
        q |= {"fc": f"{fc:g}", "fb": f"{fb:g}"}
    q["prec"] = mode
    if mode == "fp8":
        q["kv"] = kv
    q |= {"batch": str(batch), "ctx": str(context), "alpha": f"{alpha:g}", "gamma": str(gamma)}
    return "/algebra?" + urlencode(q, quote_via=quote)
