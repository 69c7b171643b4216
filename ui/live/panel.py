"""The live page's measured panel and race readout: events -> specdec_core.measure -> metrics and figures."""

from __future__ import annotations

import math
from collections.abc import Sequence

import streamlit as st

from gpu_demo.decode import RoundEvent
from specdec_core.measure import Measured, summarise
from ui.live.figures import alpha_figure, length_figure, sweep_figure
from ui.live.runner import RunRecord, SweepPoint


def fmt(x: float, d: int = 3, unit: str = "") -> str:
    """A number for the page; '—' (not NaN) when it is not measured yet."""
    return f"{x:.{d}f}{unit}" if isinstance(x, (int, float)) and math.isfinite(x) else "—"


def measure_events(gamma: int, events: Sequence[RoundEvent], wall: Sequence[float],
                   base: Sequence[RoundEvent], base_wall: Sequence[float]) -> Measured:
    """specdec_core.measure.summarise over the plain lists carried by the events."""
    return summarise(
        gamma, [e.k for e in events], [e.n_accepted for e in events], [len(e.emitted) for e in events],
        [e.draft_s for e in events], [e.verify_s for e in events], list(wall),
        [e.verify_s for e in base], list(base_wall),
    )


def measure_record(rec: RunRecord) -> Measured:
    """The measured summary of a race (baseline-dependent numbers are NaN until the baseline has run)."""
    return measure_events(rec.settings.gamma, rec.events, rec.spec_wall, rec.base_events, rec.base_wall)


def gap_sentence(m: Measured) -> str:
    """One sentence reading the gap between predicted and measured speedup."""
    if not (math.isfinite(m.predicted_speedup) and math.isfinite(m.measured_speedup)):
        return "Run the race to compare the prediction with the clock."
    ratio = m.measured_speedup / m.predicted_speedup
    if ratio >= 0.9 and ratio <= 1.1:
        return (f"Measured is {ratio:.0%} of predicted: the algebra on the measured alpha_j, c and v accounts for "
                "the speedup, and the engine's per-round overhead is small.")
    if ratio < 0.9:
        return (f"Measured is only {ratio:.0%} of predicted: the algebra counts draft and verify passes only, so "
                "the rest is per-round host overhead (sampling, cache bookkeeping, Python) that it does not model, "
                "or timer noise on a short run.")
    return (f"Measured is {ratio:.0%} of predicted: on a short run the baseline's per-token time is noisy, and "
            "the wall clock includes time outside the draft and verify passes that c and v were taken from.")


def metrics_row(m: Measured) -> None:
    """Tokens per pass, alpha, c, v, tokens/s and the two speedups as st.metric."""
    cols = st.columns(4)
    cols[0].metric("tokens per target pass", fmt(m.tokens_per_pass, 2), help="emitted tokens / verification rounds")
    cols[1].metric("alpha (constant fit)", fmt(m.alpha_const, 3), help="accepted drafts / drafted positions reached")
    cols[2].metric("c measured", fmt(m.c, 4), help="draft seconds per drafted token / baseline seconds per token")
    cols[3].metric("v measured", fmt(m.v, 3), help="verify seconds per round / baseline seconds per token")
    cols = st.columns(4)
    cols[0].metric("tokens/s speculative", fmt(m.spec_tokens_per_s, 1))
    cols[1].metric("tokens/s autoregressive", fmt(m.base_tokens_per_s, 1))
    cols[2].metric("predicted speedup", fmt(m.predicted_speedup, 2, "x"),
                   help="speedup_positional(alpha_j, c, v) from specdec_core.algebra")
    cols[3].metric("measured speedup", fmt(m.measured_speedup, 2, "x"),
                   help="baseline seconds per token / speculative seconds per token (wall clock in the decoder)")


def panel(m: Measured, figures: bool = True, key: str = "") -> None:
    """The measured panel: metrics, then alpha_j bars and the accepted-length histogram beside the pmf.

    ``key`` makes the chart keys unique when the panel is redrawn several times in one script run (live).
    """
    metrics_row(m)
    st.caption(f"{m.rounds} rounds, {m.tokens} tokens. Predicted with the constant fit instead of alpha_j: "
               f"{fmt(m.predicted_speedup_const, 2, 'x')}; E[N] from alpha_j: {fmt(m.expected_tokens, 3)}.")
    if figures and m.rounds:
        left, right = st.columns(2)
        left.plotly_chart(alpha_figure(m.alphas, m.reached, m.alpha_const), key=f"fig_alpha{key}")
        right.plotly_chart(length_figure(m.length_counts, m.pmf_const, m.pmf_positional), key=f"fig_len{key}")


def sweep_results(points: Sequence[SweepPoint], base: Sequence[RoundEvent],
                  base_wall: Sequence[float]) -> list[Measured]:
    """One Measured per gamma, each against the shared baseline."""
    return [measure_events(p.gamma, p.events, p.wall, base, base_wall) for p in points]


def sweep_panel(results: Sequence[Measured]) -> None:
    """Measured against predicted speedup over gamma, and a table."""
    gammas = [r.gamma for r in results]
    st.plotly_chart(sweep_figure(gammas, [r.measured_speedup for r in results],
                                 [r.predicted_speedup for r in results]), key="fig_sweep")
    st.dataframe({
        "gamma": gammas, "alpha (fit)": [round(r.alpha_const, 3) for r in results],
        "c": [round(r.c, 4) for r in results], "v": [round(r.v, 3) for r in results],
        "predicted": [round(r.predicted_speedup, 3) for r in results],
        "measured": [round(r.measured_speedup, 3) for r in results],
    }, hide_index=True, key="sweep_table")
