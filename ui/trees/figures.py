"""Plotly figures for the trees and multi-draft page. Builders only: every number arrives computed by specdec_core.
Built as plain dicts (ui.plainfig: a vocab or k step rebuilds most of them), each checked against Plotly's
validation in the tests."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.colors import get_colorscale

from specdec_core.trees import Tree
from ui.plainfig import PlainFigure
from ui.theme import BOTTOM_LEGEND, OKABE_ITO, ROLE_COLOUR, fixed_margins, foot_margin


def _legend_below(fig: PlainFigure, height: int | None = None) -> PlainFigure:
    """Legend at the figure's foot in fixed margins (ui.theme.BOTTOM_LEGEND), so long names never cover the title
    and the chart is laid out once."""
    fig.update_layout(legend=BOTTOM_LEGEND, margin=fixed_margins(t=50, b=max(110, foot_margin(fig.legend_entries()))))
    if height:
        fig.update_layout(height=height)
    return fig


def acceptance_k_figure(ks: np.ndarray, curves: dict[str, np.ndarray], k_now: int) -> go.Figure:
    """P(some candidate is kept) against the number of candidates k, one line per way of drawing them."""
    fig = PlainFigure(title="Acceptance grows with the number of candidates k", xaxis_title="candidates k",
                     yaxis=dict(title="P(a candidate is kept)", range=[0, 1.02]))
    for (name, y), symbol in zip(curves.items(), ("circle", "diamond", "square")):
        fig.add_scatter(x=ks, y=y, mode="lines+markers", name=name, marker_symbol=symbol)
    fig.add_vline(x=k_now, line_dash="dot", line_color=ROLE_COLOUR["predicted"])
    fig.update_xaxes(dtick=1)
    return _legend_below(fig).figure()


def laws_figure(p: np.ndarray, q: np.ndarray, laws: dict[str, np.ndarray], title: str,
                tau: float | None = None) -> go.Figure:
    """p and q as bars, each rule's exact law as markers; an optional threshold line (typical acceptance)."""
    x = [str(i) for i in range(p.size)]
    fig = PlainFigure(title=title, barmode="group", xaxis_title="token", yaxis_title="probability", bargap=0.3)
    fig.add_bar(x=x, y=p, name="target p", marker_color=ROLE_COLOUR["target"])
    fig.add_bar(x=x, y=q, name="draft q", marker_color=ROLE_COLOUR["draft"], marker_pattern_shape=".")
    for (name, law), symbol, colour in zip(laws.items(), ("line-ew", "x", "circle-open"),
                                           (ROLE_COLOUR["predicted"], ROLE_COLOUR["measured"], OKABE_ITO[4])):
        fig.add_scatter(x=x, y=law, mode="markers", name=name,
                        marker=dict(symbol=symbol, size=20 if symbol == "line-ew" else 11,
                                    line=dict(width=3, color=colour), color=colour))
    if tau is not None:
        fig.add_hline(y=tau, line_dash="dash", line_color=ROLE_COLOUR["threshold"],
                      annotation_text=f"tau = {tau:.3g}", annotation_position="top right")
    return _legend_below(fig).figure()


def tv_curve_figure(grid: np.ndarray, tv: np.ndarray, acceptance: np.ndarray, exact_acceptance: float,
                    vary: str, current: float) -> go.Figure:
    """Typical acceptance's TV(law, p) and its acceptance as one threshold moves; the exact rule's acceptance."""
    fig = PlainFigure(title=f"Typical acceptance as {vary} moves", xaxis_title=vary,
                     yaxis=dict(title="probability", range=[0, 1.02]))
    fig.add_scatter(x=grid, y=tv, mode="lines", name="TV(emitted law, p): its bias", line=dict(width=3),
                    line_color=ROLE_COLOUR["measured"])
    fig.add_scatter(x=grid, y=acceptance, mode="lines", name="P(a candidate is kept), typical",
                    line=dict(dash="dash"), line_color=ROLE_COLOUR["draft"])
    fig.add_hline(y=exact_acceptance, line_dash="dot", line_color=ROLE_COLOUR["accepted"],
                  annotation_text="exact rule's acceptance", annotation_position="bottom right")
    fig.add_vline(x=current, line_dash="dot", line_color=ROLE_COLOUR["predicted"])
    return _legend_below(fig).figure()


def _tree_layout(tree: Tree) -> tuple[np.ndarray, np.ndarray]:
    """x = depth, y = position of the node in a depth-first order of the leaves (parents centred on children)."""
    kids: dict[int, list[int]] = {}
    for j, (par, _rank) in sorted(enumerate(zip(tree.parent, tree.rank)), key=lambda t: t[1][1]):
        kids.setdefault(par, []).append(j)
    y = np.zeros(tree.n_nodes)
    counter = [0.0]

    def place(node: int) -> float:
        children = kids.get(node, [])
        if not children:
            counter[0] += 1.0
            return counter[0]
        ys = [place(c) for c in children]
        for c, yc in zip(children, ys):
            y[c] = yc
        return float(np.mean(ys))

    place(-1)
    return tree.depth.astype(float), -y


def tree_figure(tree: Tree, pi: np.ndarray, title: str) -> go.Figure:
    """The draft tree: the root on the left, each node sized and shaded by the probability its path is kept."""
    fig = PlainFigure(title=title, xaxis=dict(title="depth", dtick=1, zeroline=False), hovermode="closest",
                     yaxis=dict(visible=False), height=max(320, min(900, 14 * max(tree.n_nodes, 1))))
    if tree.n_nodes == 0:
        fig.add_annotation(text="no draft nodes: plain decoding", showarrow=False, x=0, y=0)
        return fig.figure()
    x, y = _tree_layout(tree)
    root_y = float(np.mean(y[np.array(tree.parent) == -1]))
    ex, ey = [], []
    for j, par in enumerate(tree.parent):
        ex += [0.0 if par < 0 else x[par], x[j], None]
        ey += [root_y if par < 0 else y[par], y[j], None]
    fig.add_scatter(x=ex, y=ey, mode="lines", line=dict(color="#999999", width=1), hoverinfo="skip", showlegend=False)
    fig.add_scatter(x=[0.0], y=[root_y], mode="markers", name="root (last accepted token)",
                    marker=dict(symbol="square", size=14, color=ROLE_COLOUR["predicted"]))
    fig.add_scatter(
        x=x, y=y, mode="markers", name="draft node (size: P(path kept))",
        marker=dict(size=8 + 22 * np.sqrt(pi / max(pi.max(), 1e-12)), color=pi, colorscale=get_colorscale("Blues"),
                    cmin=0, cmax=1, line=dict(width=1, color="#333333"), showscale=True,
                    colorbar=dict(title="P(path kept)", thickness=12)),
        text=[f"node {j}: depth {int(d)}, rank {r}, P(path kept) = {v:.4f}"
              for j, (d, r, v) in enumerate(zip(x, tree.rank, pi))],
        hovertemplate="%{text}<extra></extra>",
    )
    return _legend_below(fig).update_layout(margin=dict(r=110)).figure()   # room for the colour bar


def against_batch_figure(batch: np.ndarray, curves: dict[str, np.ndarray], title: str, yaxis_title: str,
                         batch_now: float, one_line: bool = True, log_y: bool = False) -> go.Figure:
    """Several curves against batch on a log axis; a dotted line at y = 1 (no gain) and at the chosen batch."""
    fig = PlainFigure(title=title, xaxis=dict(title="batch B (sequences)", type="log"),
                     yaxis=dict(title=yaxis_title, type="log" if log_y else "linear"))
    for (name, y), dash in zip(curves.items(), ("solid", "dash", "dot", "dashdot")):
        fig.add_scatter(x=batch, y=y, mode="lines", name=name, line=dict(dash=dash, width=3))
    if one_line:
        fig.add_hline(y=1.0, line_dash="dot", line_color="#777777")
    fig.add_vline(x=batch_now, line_dash="dot", line_color=ROLE_COLOUR["predicted"])
    return _legend_below(fig).figure()


def best_gamma_figure(batch: np.ndarray, gammas: np.ndarray, batch_now: float) -> go.Figure:
    """The chain's best gamma against batch (0 = speculation switched off)."""
    fig = PlainFigure(title="Best chain gamma against batch", xaxis=dict(title="batch B (sequences)", type="log"),
                     yaxis=dict(title="best gamma (0 = off)", rangemode="tozero", dtick=1))
    fig.add_scatter(x=batch, y=gammas, mode="lines", line_shape="hv", name="best gamma", line=dict(width=3),
                    line_color=ROLE_COLOUR["accepted"])
    fig.add_vline(x=batch_now, line_dash="dot", line_color=ROLE_COLOUR["predicted"])
    return _legend_below(fig).figure()
