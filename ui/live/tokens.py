"""Token rendering for the live page: coloured spans with the app-wide KIND_STYLE and a non-colour cue.

Each emitted token is a ``<span class="tok tok-<kind>">`` whose colour and text decoration come from
``ui.theme.KIND_STYLE`` (accepted: underline, rejected: strike-through, correction: overline, bonus:
double underline), plus a small marker glyph, so the meaning survives greyscale and colour blindness.
Hovering a token shows its p and q top-5 (the ``title`` attribute).

The box is HTML for st.html, never Markdown: prompt and token text go through ui.safe_text.visible and html.escape, so
every control character is shown (a newline as a return arrow plus a line break, a carriage return as its
control picture) and no tag, entity or Markdown construct in a prompt or a token can take effect.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd
import streamlit as st

from gpu_demo.decode import RoundEvent
from specdec_core.measure import acceptance_probability
from ui.controls import get_value, number_box, set_value
from ui.safe_text import visible as safe_visible
from ui.theme import KIND_STYLE

MARKER_GLYPH = {"circle": "\u2022", "x": "\u00d7", "diamond": "\u25c6", "star": "\u2605"}
PLAIN_STYLE = "color:#555555;"
TARGET_STYLE = "color:#222222;"


def visible(piece: str) -> str:
    """A token's text made visible: newline as a return arrow plus a line break, tab as an arrow, every other
    control character as its control picture (ui.safe_text.visible)."""
    return safe_visible(piece, keep_newline=True)


def _decoration(cue: str) -> str:
    """CSS text-decoration for a KIND_STYLE cue."""
    if cue == "double-underline":
        return "underline double"
    return cue


def kind_css(kind: str) -> str:
    """Inline CSS of a token kind: colour, decoration of the same colour, thicker line."""
    st_ = KIND_STYLE[kind]
    return (f"color:{st_['colour']};text-decoration:{_decoration(st_['cue'])};"
            f"text-decoration-color:{st_['colour']};text-decoration-thickness:2px;font-weight:600;")


def top_text(top: Sequence[Sequence[float]], piece: Callable[[int], str]) -> str:
    """'a' 0.41, 'e' 0.22, ... for a top list of (id, prob)."""
    return ", ".join(f"{piece(int(t))!r} {float(pr):.3f}" for t, pr in top)


def span(text: str, kind: str | None, tip: str = "", marker: bool = False) -> str:
    """One token as HTML; kind None is prompt text, 'target' a plain autoregressive token.

    The decoration is the token's non-colour cue; ``marker`` adds the kind's glyph too (the legend uses it;
    in running text one glyph per character would bury the text).
    """
    body = html.escape(visible(text), quote=True)
    title = f' title="{html.escape(tip, quote=True)}"' if tip else ""
    if kind in KIND_STYLE:
        glyph = MARKER_GLYPH.get(KIND_STYLE[kind]["marker"], "") if marker else ""
        sup = f'<sup style="font-size:0.6em">{glyph}</sup>' if glyph else ""
        return f'<span class="tok tok-{kind}" style="{kind_css(kind)}"{title}>{body}</span>{sup}'
    style = TARGET_STYLE if kind == "target" else PLAIN_STYLE
    return f'<span class="tok tok-{kind or "prompt"}" style="{style}"{title}>{body}</span>'


def token_tip(ev: RoundEvent, i: int, piece: Callable[[int], str]) -> str:
    """Hover text for position i of a round: the kind and the p (and q) top-5 there."""
    parts = [f"round {ev.round + 1}, position {i + 1}"]
    if i < len(ev.p_top):
        parts.append("p top-5: " + top_text(ev.p_top[i], piece))
    if i < len(ev.q_top):
        parts.append("q top-5: " + top_text(ev.q_top[i], piece))
    return "\n".join(parts)


def round_spans(ev: RoundEvent, piece: Callable[[int], str], show_rejected: bool) -> list[str]:
    """Accepted drafts, then (if shown) the rejected draft struck through, then the correction or bonus."""
    out = []
    for i, (tok, kind) in enumerate(zip(ev.emitted, ev.kinds)):
        if kind == "correction" and show_rejected and ev.n_accepted < ev.k:
            out.append(span(piece(ev.drafted[ev.n_accepted]), "rejected", token_tip(ev, i, piece)))
        out.append(span(piece(tok), kind, token_tip(ev, i, piece)))
    return out


def stream_html(prompt: str, events: Sequence[RoundEvent], piece: Callable[[int], str],
                show_all_rejected: bool = False) -> str:
    """The prompt, then every round's tokens; rejected drafts are struck through in the latest round only
    (then dropped) unless show_all_rejected keeps them all."""
    parts = [span(prompt, None)]
    last = len(events) - 1
    for r, ev in enumerate(events):
        parts.extend(round_spans(ev, piece, show_all_rejected or r == last))
    return ('<div class="live-tokens" style="font-family:ui-monospace,Menlo,Consolas,monospace;'
            'white-space:pre-wrap;line-height:1.9;font-size:1.02rem;padding:0.6rem 0.8rem;'
            'border:1px solid #DDDDDD;border-radius:6px;max-height:420px;overflow-y:auto">'
            + "".join(parts) + "</div>")


def legend_html() -> str:
    """A legend: each kind in its colour and cue, with its marker and label."""
    items = [f'{span("token", k, marker=True)} {html.escape(KIND_STYLE[k]["label"])} ({KIND_STYLE[k]["cue"]})'
             for k in KIND_STYLE]
    return '<div class="live-legend" style="font-size:0.92rem">' + " &nbsp;&nbsp; ".join(items) + "</div>"


def step_table(ev: RoundEvent, piece: Callable[[int], str]) -> pd.DataFrame:
    """Per drafted position: token, q(x), p(x), min(1, p/q), the uniform u, and the verdict."""
    ratio = acceptance_probability(ev.p_x, ev.q_x)
    u = list(ev.uniforms) + [np.nan] * (ev.k - len(ev.uniforms))
    return pd.DataFrame({
        "position": np.arange(1, ev.k + 1),
        "draft token": [repr(piece(t)) for t in ev.drafted],
        "q(x)": ev.q_x, "p(x)": ev.p_x, "min(1, p/q)": ratio, "uniform u": u,
        "verdict": ev.verdicts(),
    })


def top5_table(ev: RoundEvent, i: int, piece: Callable[[int], str]) -> pd.DataFrame:
    """Side-by-side p and q top-5 at position i of a round (q empty at the bonus position)."""
    p = ev.p_top[i] if i < len(ev.p_top) else []
    q = ev.q_top[i] if i < len(ev.q_top) else []
    rows = max(len(p), len(q))
    cell = lambda top, j, c: (repr(piece(int(top[j][0]))) if c == 0 else float(top[j][1])) if j < len(top) else None  # noqa: E731
    return pd.DataFrame({
        "p token": [cell(p, j, 0) for j in range(rows)], "p": [cell(p, j, 1) for j in range(rows)],
        "q token": [cell(q, j, 0) for j in range(rows)], "q": [cell(q, j, 1) for j in range(rows)],
    })


def step_view(rec, piece: Callable[[int], str]) -> list:
    """Step mode: one round per click with every drafted token's q, p and uniform draw; the rounds shown.

    rec is the run's gpu_demo.live.runner.RunRecord; piece(token id) -> its display text."""
    st.subheader("Step through the rounds")
    n_rounds = len(rec.events)
    if get_value("round", 1) > n_rounds:
        set_value("round", n_rounds)

    def _step(delta: int) -> None:
        """Callback: move the shown round by delta, within 1..n_rounds."""
        set_value("round", min(n_rounds, max(1, get_value("round", 1) + delta)))

    s1, s2, s3 = st.columns([1, 1, 2])
    s1.button("previous round", key="prev_btn", on_click=_step, args=(-1,))
    s2.button("next round", key="next_btn", on_click=_step, args=(1,), type="primary")
    with s3:
        rnd = number_box("round", "round", 1, max(1, n_rounds), 1, 1)
    shown = rec.events[: int(rnd)]
    ev = shown[-1]
    st.markdown(f"**Round {ev.round + 1}** of {n_rounds}: drafted {ev.k}, accepted {ev.n_accepted}, emitted "
                f"{len(ev.emitted)} ({', '.join(ev.kinds)}).")
    st.dataframe(step_table(ev, piece), hide_index=True, key="step_table")
    positions = list(range(len(ev.p_top)))
    pos = st.selectbox("inspect a position of this round (p and q top-5)", positions, key="inspect",
                       format_func=lambda i: f"position {i + 1}" + (" (correction/bonus)" if i == ev.k else ""))
    st.dataframe(top5_table(ev, int(pos or 0), piece), hide_index=True, key="top5_table")
    return shown
