"""The live page after a run: the finished (or stopped) race with its tokens, measured panel and race readout,
the last sweep, and the export."""

from __future__ import annotations

import time

import streamlit as st

from gpu_demo.live import runner
from specdec_core.measure import Measured
from specdec_core.repeats import RepeatSummary, summarise_repeats
from ui.live import export as live_export
from ui.live import panel, tokens
from ui.live.stage import Stage, piece, prompt_shown


def race_view(rec: runner.RunRecord, m: Measured, s: RepeatSummary) -> None:
    """Both texts of repeat 0, the greedy check over every finished repeat, and the race's pooled reading."""
    st.subheader("Race against the autoregressive baseline")
    done = rec.finished_repeats()
    if not done:
        st.caption("The race needs at least one finished repeat: a speculative run and its baseline.")
        return
    if rec.first.done:
        c1, c2 = st.container(key="race_texts").columns(2)
        c1.markdown("**speculative** (repeat 1)")
        c1.code("".join(map(piece, rec.spec_tokens())), language=None, wrap_lines=True)
        c2.markdown("**autoregressive baseline** (repeat 1)")
        c2.code("".join(map(piece, rec.base_tokens())), language=None, wrap_lines=True)
    if rec.settings.greedy:
        same = all(r.spec_tokens() == r.base_tokens() for r in done)
        (st.success if same else st.error)(
            "Greedy: the speculative text equals the autoregressive text token for token."
            if same
            else "Greedy: the texts differ, which the exact greedy rule forbids; please report this run (export below)."
        )
    else:
        st.caption(
            "Sampled runs use one random stream per run (repeat r uses seed + r), so the two texts differ; "
            "each is a sample from p."
        )
    panel.race_readout(m, s, rec.device_name, rec.settings.pair)


def show_run(rec: runner.RunRecord, settings: runner.Settings, step_mode: bool, out_ph, panel_ph):
    """The finished (or stopped) race: status, step mode, tokens, measured panel and the race; returns repeat 0's
    summary for the export."""
    done = rec.finished_repeats()
    reps = done or rec.repeats[:1]
    s = summarise_repeats(panel.race_runs(rec))
    if rec.queue_wait_s > 0.05:
        st.caption(f"This run waited {rec.queue_wait_s:.1f} s in line for the shared model.")
    if rec.status == "stopped":
        st.warning(
            f"{rec.note} after {len(done)} of {rec.settings.repeats} repeats ({len(rec.events)} rounds and "
            f"{len(rec.base_events)} baseline tokens in repeat 1); the numbers below use what finished. "
            "Press Run to start again."
        )
    if rec.settings != settings:
        st.caption("The settings changed since this run; the results below are from the previous settings.")
    shown = tokens.step_view(rec, piece) if step_mode and rec.events else rec.events
    out_ph.html(tokens.stream_html(prompt_shown(rec.settings), shown, piece, show_all_rejected=step_mode))
    with panel_ph.container():
        st.subheader("Measured panel")
        m = panel.pooled(reps, rec.settings.gamma)  # the one statistic of the panel and the race
        panel.panel(m, s, panel.vllm_counts(reps, rec.settings.gamma))
    race_view(rec, m, s)
    return panel.measure_record(rec)


def results(stage: Stage, settings: runner.Settings) -> tuple[runner.RunRecord | None, Measured | None]:
    """The last race (tokens, panel, race) and the last sweep, from the session: (race record, its measures)."""
    rec: runner.RunRecord | None = st.session_state.get("live_rec")
    m = None
    if rec is None:
        stage.out_ph.caption("Press **Run the race** to decode live. Tokens appear round by round.")
    else:
        m = show_run(rec, settings, stage.step_mode, stage.out_ph, stage.panel_ph)
    srec: runner.SweepRecord | None = st.session_state.get("live_sweep")
    if srec is not None:
        st.subheader("Sweep: measured against predicted speedup, gamma = 1..8")
        if srec.settings != settings:
            st.caption("This sweep used earlier settings.")
        panel.sweep_panel(srec)
    return rec, m


def export(rec: runner.RunRecord, m: Measured) -> None:
    """Download repeat 1's events and metrics."""
    st.subheader("Export")
    st.caption("The export holds repeat 1's events and metrics.")
    e1, e2 = st.columns(2)
    e1.download_button(
        "run as JSON (events, settings, device, versions)",
        live_export.run_json(rec, m, live_export.versions()),
        file_name=f"specdec-live-{int(time.time())}.json",
        mime="application/json",
        key="dl_json",
    )
    e2.download_button(
        "metrics as CSV",
        live_export.metrics_csv(m),
        file_name="specdec-live-metrics.csv",
        mime="text/csv",
        key="dl_csv",
    )
