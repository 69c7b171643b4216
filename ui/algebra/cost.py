"""The algebra page's costs: free c and v, or c and v(gamma) priced by the step-time model of a decoder shape.

In free mode the page's best-gamma search holds v fixed while gamma changes, and says so. In decoder-shape
mode c(B) and v(gamma, B) come from ``specdec_core.steptime`` for every gamma 0..32, and the curves, the
search and the heatmap use v(gamma); a table and a figure show why the best gamma is what it is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from specdec_core import algebra, steptime
from ui.controls import bound_radio
from ui.hardware_picker import hw_from_key, pick_batch, pick_context, pick_hardware, pick_precision, pick_shapes
from ui.presenter import show
from ui.theme import OKABE_ITO, ROLE_COLOUR

COST_LABELS = {"free": "free c and v", "shape": "from a decoder shape"}
WHY_ROWS = 8                       # draft lengths listed in the table
FIXED_V_NOTE = (
    "This search holds v fixed while gamma changes. In a real server v grows with gamma once the batch fills the "
    "GPU: every extra draft token is one more token per sequence through the target's linear layers. Choose "
    "costs **from a decoder shape** to price every gamma."
)
# The seed's slowdown case, priced by a decoder shape: the 8B / 1B pair where v(4) is close to its 3.5.
SLOWDOWN_SHAPE = {"cost": "shape", "target": "Llama-3.1-8B", "draft": "Llama-3.2-1B (draft)", "hw": "H100 SXM",
                  "batch": "512", "ctx": "256", "alpha": "0.8", "gamma": "4"}


@dataclass(frozen=True)
class ShapeCosts:
    """c and v(gamma) for gamma = 0..max_gamma at one workload, with words for it."""

    c: float
    v: np.ndarray
    batch: int
    context: int
    label: str


@st.cache_data(max_entries=64)
def gamma_costs(target: str, draft: str, hw_key: tuple, mode: str, kv: str, context: int, batch: int,
                max_gamma: int) -> tuple[float, np.ndarray]:
    """(c, v(gamma) for gamma = 0..max_gamma) from specdec_core.steptime."""
    costs = steptime.gamma_costs(
        steptime.SHAPES[target], steptime.SHAPES[draft], hw_from_key(hw_key), mode, context, batch, max_gamma, kv
    )
    return costs.c, costs.v


def shape_costs(gamma: int, max_gamma: int) -> ShapeCosts | None:
    """The cost-mode choice; in decoder-shape mode its controls, c and v(gamma) metrics and the costs (else None)."""
    cost = bound_radio(
        "Costs",
        list(COST_LABELS),
        key="cost",
        default="free",
        format_func=COST_LABELS.get,
        help="Free: type c and v. From a decoder shape: the step-time model prices c and v(gamma).",
    )
    if cost == "free":
        return None
    target, draft = pick_shapes()
    hw, hw_key = pick_hardware()
    mode, kv = pick_precision("prec")
    batch, context = pick_batch(), pick_context(target, draft)
    if hw is None:
        st.caption("Until the hardware is valid, the free c and v below are used.")
        return None
    if not hw.supports(mode):
        st.warning(f"{hw.name} has no FP8 tensor cores, so native FP8 is not an option; using BF16.")
        mode, kv = "bf16", "bf16"
    c, v = gamma_costs(target, draft, hw_key, mode, kv, context, batch, max_gamma)
    cols = st.columns(2)
    cols[0].metric(f"c at B = {batch}", f"{c:.4f}", help="draft step / target decode step")
    cols[1].metric(
        f"v(gamma = {gamma}) at B = {batch}",
        f"{v[gamma]:.3f}",
        help="verify pass of gamma + 1 tokens / target decode step",
    )
    label = f"{target} with {draft} on {hw.name}, {mode}, B = {batch}, context {context:,}"
    return ShapeCosts(c, v, batch, context, label)


def v_label(v: float | np.ndarray) -> str:
    """'v = 1.5' for a fixed v, or the words for v(gamma)."""
    return f"v = {float(v):g}" if np.ndim(v) == 0 else "v(gamma) from the decoder shape"


def cost_figure(gammas: np.ndarray, tokens: np.ndarray, cost: np.ndarray, best: int) -> go.Figure:
    """E[N] and the step cost gamma c + v(gamma) against gamma: the speedup is their ratio, below 1 where cost wins."""
    data = [
        go.Scatter(
            x=gammas, y=tokens, name="E[N] (tokens per step)", mode="lines+markers", line=dict(color=OKABE_ITO[0])
        ),
        go.Scatter(
            x=gammas,
            y=cost,
            name="cost gamma c + v(gamma) (target steps)",
            mode="lines+markers",
            line=dict(color=OKABE_ITO[5], dash="dash"),
            marker=dict(symbol="square"),
        ),
    ]
    if best < gammas.size:
        data.append(
            go.Scatter(
                x=[best],
                y=[tokens[best]],
                name=f"best gamma = {best}",
                mode="markers",
                marker=dict(symbol="star", size=16, color=ROLE_COLOUR["predicted"]),
            )
        )
    layout = go.Layout(
        title="Why this gamma: tokens gained against the cost of the step",
        height=380,
        xaxis=dict(title="draft length gamma"),
        yaxis=dict(title="tokens or target steps", rangemode="tozero"),
        legend=dict(y=-0.25, yanchor="top", x=0, xanchor="left"),
        margin=dict(t=50, b=40),
    )
    return go.Figure(data, layout)


def cost_note(
    alpha: float,
    c: float,
    v: float | np.ndarray,
    search: np.ndarray | None,
    best: tuple[int, float],
    shape: ShapeCosts | None,
) -> None:
    """Free v: say that the search holds it fixed. v(gamma): show why the best gamma is what it is."""
    if shape is None:
        st.caption(FIXED_V_NOTE)
        return
    n = min(16, search.size) if search is not None else 16
    gammas = np.arange(n + 1)
    vg = algebra.v_by_gamma(v, n)
    if search is None:
        tokens, speed = algebra.expected_tokens(alpha, gammas), np.asarray(algebra.speedup(alpha, gammas, c, vg))
    else:
        tokens, speed = algebra.expected_tokens_prefixes(search[:n]), algebra.speedup_prefixes(search[:n], c, vg)
    cost = np.asarray(algebra.step_cost(gammas, c, vg))
    g, s = best
    verdict = (
        "no draft length pays here: **do not speculate** (gamma = 0, 1.00x)"
        if g == 0
        else f"the best draft length is **gamma = {g}**, at {s:.2f}x"
    )
    grows = (
        f"v grows with gamma, from v(1) = {vg[1]:.3f} to v({n}) = {vg[n]:.3f}, so {verdict}. The first draft "
        f"token alone raises the step cost from 1 to {cost[1]:.3f} target steps (c = {c:.3f} plus "
        f"v(1) = {vg[1]:.3f}) while E[N] rises only to {tokens[1]:.3f}."
        if n >= 1
        else verdict + "."
    )
    st.markdown(
        f"**Priced by the decoder shape** ({shape.label}): {grows} A speedup is E[N] / cost: past the point where "
        "the cost line climbs faster than E[N], a longer draft loses."
    )
    rows = [
        {
            "gamma": int(k),
            "v(gamma)": f"{vg[k]:.3f}",
            "cost gamma c + v": f"{cost[k]:.3f}",
            "E[N]": f"{tokens[k]:.3f}",
            "speedup": f"{speed[k]:.3f}x",
        }
        for k in gammas[: WHY_ROWS + 1]
    ]
    st.dataframe(rows, hide_index=True)
    show(cost_figure(gammas, tokens, cost, g), key="fig_cost")


def slowdown_note() -> None:
    """Under the seed's slowdown link: the fixed-v search's answer beside the same case priced by a decoder shape."""
    g_fixed, s_fixed = algebra.best_gamma(0.8, 0.05, 3.5, 32)
    q = SLOWDOWN_SHAPE
    hw_key = (q["hw"], 0.0, 0.0, 0.0, "datasheet", 1.0, 1.0)
    c, v = gamma_costs(q["target"], q["draft"], hw_key, "bf16", "bf16", int(q["ctx"]), int(q["batch"]), 32)
    g, s = algebra.best_gamma(0.8, c, v, 32)
    st.markdown(
        f"That link holds **v = 3.5 for every gamma**, so its best-gamma search answers gamma = {g_fixed} at "
        f"{s_fixed:.2f}x: a longer draft to escape a slowdown. But a verify pass that costs 3.5 decode steps means "
        "the batch has filled the GPU, and there every extra draft token adds to v too. The step-time model puts "
        f"{q['target']} with the 1B draft on an {q['hw']} at B = {q['batch']} and context {q['ctx']} at v(4) = "
        f"{v[4]:.2f}, near the link's 3.5, with c = {c:.3f}; priced with v(gamma) the best gamma at alpha 0.8 is "
        f"**{g}** ({s:.2f}x)."
    )
    st.page_link(
        "views/algebra.py",
        label="Open that case with v(gamma) from the decoder shape",
        query_params=q,
        icon=":material/tune:",
    )
