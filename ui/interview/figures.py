"""Plotly figures for the interview drills: each drill drawn on its curve. Numbers come from the core."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import plotly.graph_objects as go

from specdec_core import drills
from specdec_core.algebra import best_gamma, break_even_alpha, expected_tokens, speedup
from specdec_core.drill_kinds import batch_tokens_of, kv_batch_of, rule_law, tree_depth_masses, tree_mask_of
from specdec_core.moe import expert_read_ratio
from specdec_core.paged_kv import page_fill, pages_held
from specdec_core.rejection import accepted_mass, matched_mass
from specdec_core.roofline import HARDWARE, crossover_batch, ridge, verify_intensity
from specdec_core.steptime import SHAPES, step_time
from ui.theme import OKABE_ITO, ROLE_COLOUR, new_figure, presenter_spec

ALPHA_GRID = np.linspace(0.0, 1.0, 201)


def _size(fig: go.Figure, large: bool) -> go.Figure:
    """Projector size (classroom: presenter mode's sizes, ui.theme.presenter_spec) or laptop size."""
    if large:
        fig = go.Figure(presenter_spec(fig))
    else:
        fig.update_layout(font=dict(size=14), title_font_size=17)
    fig.update_layout(height=520 if large else 320, margin=dict(t=60, b=60, l=70, r=20))
    return fig


def _speedup_curve(fig: go.Figure, cfg: dict, name: str, colour: str) -> None:
    """Speedup against alpha at fixed gamma, c, v, with the drill's point marked."""
    s = speedup(ALPHA_GRID, cfg["gamma"], cfg["c"], cfg["v"])
    fig.add_trace(go.Scatter(x=ALPHA_GRID, y=s, name=name, line=dict(color=colour)))
    fig.add_trace(go.Scatter(x=[cfg["alpha"]], y=[speedup(cfg["alpha"], cfg["gamma"], cfg["c"], cfg["v"])],
                             mode="markers", marker=dict(size=12, color=colour), showlegend=False))


def _tokens_figure(d: dict) -> go.Figure:
    """E[N] against alpha at the drill's gamma, with the gamma + 1 ceiling."""
    fig = new_figure("E[N] against alpha", xaxis_title="alpha", yaxis_title="tokens per pass")
    fig.add_trace(go.Scatter(x=ALPHA_GRID, y=expected_tokens(ALPHA_GRID, d["gamma"]), name=f"gamma = {d['gamma']}"))
    fig.add_trace(go.Scatter(x=[d["alpha"]], y=[expected_tokens(d["alpha"], d["gamma"])], mode="markers",
                             marker=dict(size=12, color=ROLE_COLOUR["predicted"]), name="this drill"))
    fig.add_hline(y=d["gamma"] + 1, line_dash="dash", line_color=ROLE_COLOUR["threshold"],
                  annotation_text="gamma + 1 ceiling")
    return fig


def _speedup_axes() -> go.Figure:
    """An empty speedup-against-alpha chart with the no-gain line at 1."""
    fig = new_figure("Speedup against alpha", xaxis_title="alpha", yaxis_title="speedup (x)")
    fig.add_hline(y=1.0, line_dash="dash", line_color=ROLE_COLOUR["threshold"], annotation_text="no gain")
    return fig


def _speedup_figure(d: dict) -> go.Figure:
    """Speedup against alpha for the drill's gamma, c, v, its point marked."""
    fig = _speedup_axes()
    _speedup_curve(fig, d, "this configuration", OKABE_ITO[0])
    return fig


def _compare_figure(d: dict) -> go.Figure:
    """Both configurations' speedup against alpha, each with its point."""
    fig = _speedup_axes()
    _speedup_curve(fig, d["A"], "A", OKABE_ITO[0])
    _speedup_curve(fig, d["B"], "B", OKABE_ITO[1])
    return fig


def _break_even_figure(d: dict) -> go.Figure:
    """Speedup against alpha with the break-even alpha marked."""
    fig = _speedup_axes()
    fig.add_trace(go.Scatter(x=ALPHA_GRID, y=speedup(ALPHA_GRID, d["gamma"], d["c"], d["v"]), name="speedup"))
    fig.add_vline(x=break_even_alpha(d["gamma"], d["c"], d["v"]), line_dash="dot", annotation_text="break-even alpha")
    return fig


def _best_gamma_figure(d: dict) -> go.Figure:
    """Speedup for every integer gamma, the best one highlighted."""
    g_star, _ = best_gamma(d["alpha"], d["c"], d["v"])
    gammas = np.arange(0, min(32, 2 * g_star + 4) + 1)
    colours = [ROLE_COLOUR["accepted"] if g == g_star else OKABE_ITO[5] for g in gammas]
    fig = new_figure("Speedup against draft length", xaxis_title="gamma", yaxis_title="speedup (x)")
    fig.add_trace(go.Bar(x=gammas, y=speedup(d["alpha"], gammas, d["c"], d["v"]), marker_color=colours,
                         name="speedup"))
    return fig


def _crossover_figure(d: dict) -> go.Figure:
    """Verification intensity against batch, the ridge and the crossover batch."""
    hw = HARDWARE[d["hardware"]]
    b_star, r = crossover_batch(hw, d["gamma"], d["mode"]), ridge(hw, d["mode"])
    batch = np.geomspace(1, max(4 * b_star, 16), 100)
    # Lines as traces, not shapes: shape annotations on log axes take log10 coordinates.
    fig = new_figure("Verification intensity against batch", xaxis_title="batch B",
                     yaxis_title="FLOP per byte", xaxis_type="log", yaxis_type="log")
    fig.add_trace(go.Scatter(x=batch, y=verify_intensity(batch, d["gamma"], d["mode"]), name="verify intensity"))
    fig.add_trace(go.Scatter(x=batch[[0, -1]], y=[r, r], name=f"ridge {r:.0f}", mode="lines",
                             line=dict(dash="dash", color=ROLE_COLOUR["threshold"])))
    fig.add_trace(go.Scatter(x=[b_star], y=[r], name=f"crossover B = {b_star:.1f}", mode="markers",
                             marker=dict(size=13, symbol="diamond", color=ROLE_COLOUR["predicted"])))
    return fig


def _tree_tokens_figure(d: dict) -> go.Figure:
    """The chance each depth of the tree is reached, prod S(b_i)."""
    depth = np.arange(1, len(d["branching"]) + 1)
    fig = new_figure("Chance each depth of the tree is accepted", xaxis_title="depth",
                     yaxis_title="P(a path reaches it)", yaxis_range=[0, 1.05])
    fig.add_trace(go.Bar(x=depth, y=tree_depth_masses(d), marker_color=ROLE_COLOUR["accepted"],
                         name="prod S(b_i)"))
    return fig


def _exact_rule_figure(d: dict) -> go.Figure:
    """Each rule's emitted law beside p."""
    x = [f"token {i}" for i in range(len(d["p"]))]
    fig = new_figure("Each rule's emitted law against p", yaxis_title="probability", barmode="group")
    fig.add_trace(go.Bar(x=x, y=d["p"], name="p (target)", marker_color=ROLE_COLOUR["target"]))
    for side, colour, shape in (("A", OKABE_ITO[4], "/"), ("B", OKABE_ITO[6], "x")):
        fig.add_trace(go.Bar(x=x, y=rule_law(d[side], d["p"], d["q"], d["k"]), name=f"{side} emits",
                             marker_color=colour, marker_pattern_shape=shape))
    return fig


def _p_q_bars(p: np.ndarray, q: np.ndarray, title: str) -> tuple[go.Figure, list[str]]:
    """Grouped bars of p and q, and their token labels."""
    x = [f"token {i}" for i in range(len(p))]
    fig = new_figure(title, yaxis_title="probability", barmode="group")
    fig.add_trace(go.Bar(x=x, y=p, name="p (target)", marker_color=ROLE_COLOUR["target"]))
    fig.add_trace(go.Bar(x=x, y=q, name="q (draft)", marker_color=ROLE_COLOUR["draft"]))
    return fig, x


def _alpha_pq_figure(d: dict) -> go.Figure:
    """p, q and their overlap min(p, q), whose sum is alpha."""
    p, q = np.array(d["p"]), np.array(d["q"])
    fig, x = _p_q_bars(p, q, "p, q and their overlap min(p, q)")
    fig.add_trace(go.Bar(x=x, y=accepted_mass(p, q), name="min(p, q): accepted", marker_color=ROLE_COLOUR["accepted"],
                         marker_pattern_shape="/"))
    return fig


def _sample_compare_figure(d: dict) -> go.Figure:
    """Kept mass per token under each rule: min(p, q) against p q."""
    p, q = np.array(d["p"]), np.array(d["q"])
    return _two_rules(p, q, "Kept per token: min(p, q) against p x q", ("min(p, q): min(1, p/q) keeps",
                      accepted_mass(p, q)), ("p q: sample-and-compare keeps", matched_mass(p, q)))


def _two_rules(p: np.ndarray, q: np.ndarray, title: str, first: tuple[str, np.ndarray],
               second: tuple[str, np.ndarray]) -> go.Figure:
    """p and q, then what each of two rules keeps per token (hatched bars)."""
    fig, x = _p_q_bars(p, q, title)
    for (name, kept), colour, shape in ((first, "accepted", "/"), (second, "residual", "x")):
        fig.add_trace(go.Bar(x=x, y=kept, name=name, marker_color=ROLE_COLOUR[colour], marker_pattern_shape=shape))
    return fig


def _tree_mask_figure(d: dict) -> go.Figure:
    """The tree attention mask among the nodes as a heat map."""
    mask = tree_mask_of(d).astype(int)                                     # (N, N)
    labels = [f"n{i}" for i in range(mask.shape[0])]
    fig = new_figure("Tree attention mask among the nodes (1 = may attend)", xaxis_title="key node",
                     yaxis_title="query node", yaxis_autorange="reversed")
    fig.add_trace(go.Heatmap(z=mask, x=labels, y=labels, colorscale=[[0, "#ffffff"], [1, ROLE_COLOUR["accepted"]]],
                             showscale=False, xgap=1, ygap=1, name="mask"))
    return fig


def _kv_batch_figure(d: dict) -> go.Figure:
    """Bytes one decode step reads against batch: the weights (flat) and the KV cache at L/2, L and 2L."""
    m = SHAPES[d["model"]]
    b_kv = kv_batch_of(d)
    batch = np.geomspace(1, max(8 * b_kv, 16), 100)
    hw = HARDWARE["H100 SXM"]                     # bytes do not depend on the device; only times would
    fig = new_figure(f"{m.name}: bytes read per decode step", xaxis_title="batch B", yaxis_title="GB per step",
                     xaxis_type="log", yaxis_type="log")
    for factor, dash in ((0.5, "dot"), (1.0, "solid"), (2.0, "dash")):
        ctx = int(d["context"] * factor)
        if ctx > m.max_context:
            continue
        st = step_time(m, hw, d["mode"], batch, 1, ctx, d["kv"])
        fig.add_trace(go.Scatter(x=batch, y=st.attention.bytes / 1e9, name=f"KV reads, L = {ctx:,}",
                                 line=dict(dash=dash, color=ROLE_COLOUR["measured"])))
    weights = step_time(m, hw, d["mode"], batch, 1, d["context"], d["kv"]).linear.bytes / 1e9
    fig.add_trace(go.Scatter(x=batch, y=weights, name="weight reads", line=dict(color=ROLE_COLOUR["target"])))
    fig.add_trace(go.Scatter(x=[b_kv], y=[weights[0]], name=f"B = {b_kv:.1f}", mode="markers",
                             marker=dict(size=13, symbol="diamond", color=ROLE_COLOUR["predicted"])))
    return fig


def _rollback_figure(d: dict) -> go.Figure:
    """The sequence's last pages: slots kept, slots rolled back, free slots; a page with no kept slot is freed."""
    n, g, k, page = d["cached"], d["gamma"], d["accepted"], d["page"]
    total = pages_held(n + g, page)
    first = max(0, pages_held(n, page) - 2)                       # the last few pages only
    kept = page_fill(n + k, page, total)[first:]                  # (pages,)
    written = page_fill(n + g, page, total)[first:]
    x = [f"page {i}" for i in range(first, total)]
    fig = new_figure("The sequence's last pages after the rollback", yaxis_title="token slots", barmode="stack",
                     yaxis_range=[0, page])
    fig.add_trace(go.Bar(x=x, y=kept, name="kept (cached + accepted)", marker_color=ROLE_COLOUR["accepted"]))
    fig.add_trace(go.Bar(x=x, y=written - kept, name="rolled back", marker_color=ROLE_COLOUR["measured"],
                         marker_pattern_shape="x"))
    fig.add_trace(go.Bar(x=x, y=page - written, name="never written", marker_color="#dddddd"))
    return fig


def _argmax_draft_figure(d: dict) -> go.Figure:
    """p and q, with the argmax draft's kept mass p(argmax q) against the sampled draft's min(p, q)."""
    p, q = np.array(d["p"]), np.array(d["q"])
    one_hot = np.eye(len(q))[int(np.argmax(q))]                            # (V,)
    return _two_rules(p, q, "An argmax draft keeps p(argmax q); a sampled one keeps min(p, q)",
                      ("min(p, q): sampled draft keeps", accepted_mass(p, q)),
                      ("p at argmax q: argmax draft keeps", accepted_mass(p, one_hot)))


def _moe_experts_figure(d: dict) -> go.Figure:
    """Routed-expert reads of a pass against its token count: the uniform-routing curve, T (no sharing) and 1."""
    e, k, t = d["experts"], d["top_k"], d["gamma"] + 1
    tokens = np.arange(1, max(2 * t, 9) + 1)
    ratio = [expert_read_ratio(e, k, int(n)) for n in tokens]
    fig = new_figure(f"Expert weights read per pass ({k} of {e} experts per token)", xaxis_title="tokens in the pass",
                     yaxis_title="x one decode step's expert reads")
    fig.add_trace(go.Scatter(x=tokens, y=ratio, name="uniform routing", line=dict(color=ROLE_COLOUR["measured"])))
    fig.add_trace(go.Scatter(x=tokens, y=tokens, name="no sharing (T)", mode="lines",
                             line=dict(dash="dash", color=ROLE_COLOUR["threshold"])))
    fig.add_trace(go.Scatter(x=[t], y=[expert_read_ratio(e, k, t)], name=f"gamma + 1 = {t}", mode="markers",
                             marker=dict(size=13, symbol="diamond", color=ROLE_COLOUR["predicted"])))
    return fig


def _batch_tokens_figure(d: dict) -> go.Figure:
    """E[N] against alpha: each request's point, and the mean alpha's E[N] below their mean (convexity)."""
    a, g = np.asarray(d["alphas"]), d["gamma"]
    fig = new_figure("E[N] is convex in alpha: a batch's mean E[N] beats E[N] at the mean alpha",
                     xaxis_title="alpha", yaxis_title="tokens per pass")
    fig.add_trace(go.Scatter(x=ALPHA_GRID, y=expected_tokens(ALPHA_GRID, g), name=f"gamma = {g}"))
    fig.add_trace(go.Scatter(x=a, y=expected_tokens(a, g), mode="markers", name="each request",
                             marker=dict(size=11, color=ROLE_COLOUR["accepted"])))
    fig.add_trace(go.Scatter(x=[a.mean()], y=[batch_tokens_of(d) / a.size], mode="markers", name="mean of E[N]",
                             marker=dict(size=13, symbol="diamond", color=ROLE_COLOUR["predicted"])))
    fig.add_trace(go.Scatter(x=[a.mean()], y=[expected_tokens(float(a.mean()), g)], mode="markers",
                             name="E[N] at mean alpha",
                             marker=dict(size=13, symbol="x", color=ROLE_COLOUR["measured"])))
    return fig


FIGURES: dict[str, Callable[[dict], go.Figure]] = {
    "tokens": _tokens_figure, "speedup": _speedup_figure, "best_gamma": _best_gamma_figure,
    "break_even": _break_even_figure, "crossover": _crossover_figure, "alpha_pq": _alpha_pq_figure,
    "compare": _compare_figure, "tree_tokens": _tree_tokens_figure, "exact_rule": _exact_rule_figure,
    "kv_batch": _kv_batch_figure, "rollback_pages": _rollback_figure, "sample_compare": _sample_compare_figure,
    "tree_mask": _tree_mask_figure, "argmax_draft": _argmax_draft_figure, "moe_experts": _moe_experts_figure,
    "batch_tokens": _batch_tokens_figure,
}


def drill_figure(drill: drills.Drill, large: bool = False) -> go.Figure:
    """The drill on its curve (FIGURES: one per kind), at projector or laptop size."""
    if drill.kind not in FIGURES:
        raise ValueError(f"no figure for drill kind {drill.kind!r}")
    return _size(FIGURES[drill.kind](drill.params), large)
