"""Live decoding: a real draft proposes, a real target verifies; alpha, c, v and the speedup are measured."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import streamlit as st
import torch

from gpu_demo.live import queue, runner
from gpu_demo.measure import batch as measure_batch
from specdec_core.measure import Measured
from specdec_core.repeats import RepeatSummary, summarise_repeats
from ui.controls import bound_toggle, set_value
from ui.live import constraint_panel, controls, panel, tokens
from ui.live import export as live_export
from ui.live import pairs as lpairs
from ui.live.figures import batch_figure
from ui.live.h200 import h200_table
from ui.presenter import show
from ui.safe_text import md

SWEEP_GAMMAS = list(range(1, 9))
# Mid-run redraws are throttled: every redraw makes the server and the browser work while the next
# rounds are timed, on the same cores and under the same GIL, and on a CPU that inflated c and v several
# fold. The finished run is always drawn in full (tokens, panel, charts) from its events.
LIVE_REDRAW_S = 0.5
STOPPED_BY_YOU = "Stopped by you"
STOPPED_BY_RERUN = "Stopped because a setting changed (or the page reran) during the run"


def piece(token_id: int) -> str:
    """Display text of one token, with the tokenizer of the pair that made the shown run."""
    rec = st.session_state.get("live_rec")
    s = rec.settings if rec is not None else st.session_state["live_settings"]
    return lpairs.get_pair(s.pair, s.device).pair.tokenizer.piece(token_id)


def prompt_shown(s: runner.Settings) -> str:
    """The run's prompt as the token box shows it (runner.shown_prompt)."""
    return runner.shown_prompt(lpairs.get_pair(s.pair, s.device), s.prompt)


def settle_previous() -> None:
    """After Stop or a changed setting, let the old script run's race or sweep wind down, and say why it stopped."""
    for key in ("live_rec", "live_sweep"):
        prev = st.session_state.get(key)
        if prev is None:
            continue
        if not prev.settle():
            st.warning("The previous run is still finishing; it stops at its next round.")
        if prev.status == "stopped" and not prev.note:
            prev.note = STOPPED_BY_YOU if st.session_state.get("stop_btn") else STOPPED_BY_RERUN


def load_pair(
    settings: runner.Settings, pair_ok: bool, pair_reason: str
) -> tuple[runner.SharedPair | None, list[int] | None]:
    """The shared pair and the prompt's ids, or None with the reason on the page."""
    if not pair_ok:
        st.warning(f"The pair **{settings.pair}** is {pair_reason}. Choose another pair; the others still work.")
        sp = None
    else:
        sp = lpairs.get_pair(settings.pair, settings.device)
        if sp.error:
            st.error(
                f"The pair **{settings.pair}** could not be loaded, so it cannot run here: {md(sp.error, 600)}. "
                "Fix the file and press Run again: a failed load is retried, not kept."
            )
            sp = None
    with st.expander("all model pairs and where they run"):
        controls.pairs_table(settings.device)
    h200_table()
    if sp is None:
        return None, None
    st.caption(
        f"Loaded **{sp.name}** on {lpairs.device_name(sp)} in {sp.load_s:.2f} s (once per server, shared by "
        f"every session and pair on this device). {lpairs.pair_description(sp.name)}"
        + (f" Draft kernel here: {sp.pair.info['draft_kernel']}." if sp.pair.info.get("draft_kernel") else "")
    )
    try:
        return sp, runner.validate(sp, settings)
    except ValueError as exc:
        st.error(f"This run cannot start with these settings: {md(exc, 400)}")
        return sp, None


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
            st.session_state["live_batch"] = (settings.gamma, rows, torch.cuda.get_device_name(0))
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


@dataclass
class Stage:
    """The run's live places on the page (queue line, progress, tokens, panel) and the callbacks that fill them.

    The runner calls these between rounds (gpu_demo.live.runner): redraws are throttled to one per LIVE_REDRAW_S,
    and a Stop or a rerun lands in them, so a run stops between two rounds.
    """

    step_mode: bool
    queue_ph: object = field(default_factory=st.empty)
    prog_ph: object = field(default_factory=st.empty)
    out_ph: object = None
    panel_ph: object = None
    redraw_due: queue.Throttle = field(default_factory=lambda: queue.Throttle(LIVE_REDRAW_S))
    sweep_what: str = ""

    def place_output(self) -> None:
        """The token box and the panel, below the legend."""
        st.html(tokens.legend_html())
        st.caption(
            "Hover a token for its p and q top-5. Rejected drafts show struck through in the latest round, then drop."
        )
        self.out_ph, self.panel_ph = st.empty(), st.empty()

    def on_wait(self, position: int) -> None:
        """Show the queue position while waiting for the model."""
        self.queue_ph.info(f"Waiting for the model: {position} run(s) ahead of yours. It starts by itself.")

    def on_round(self, rec: runner.RunRecord) -> None:
        """Stream the run so far, at most once per LIVE_REDRAW_S (a Stop lands here, between two rounds)."""
        if not self.redraw_due():
            return
        self.queue_ph.empty()
        rep, n_rep = len(rec.repeats), rec.settings.repeats
        n = len(rec.repeats[-1].spec_tokens())
        self.prog_ph.progress(
            min(1.0, n / rec.settings.max_new),
            text=f"repeat {rep} of {n_rep}, speculative: {n} / {rec.settings.max_new} tokens",
        )
        if self.step_mode or rep > 1:
            return
        self.out_ph.html(tokens.stream_html(prompt_shown(rec.settings), rec.events, piece))
        with self.panel_ph.container():
            s = summarise_repeats(panel.race_runs(rec))
            panel.panel(
                panel.measure_record(rec),
                s,
                panel.vllm_counts(rec.repeats[:1], rec.settings.gamma),
                figures=False,
                key=f"_live{len(rec.events)}",
            )

    def on_base(self, rec: runner.RunRecord) -> None:
        """Progress of a baseline run (throttled like on_round)."""
        if not self.redraw_due():
            return
        rep = rec.repeats[-1]
        n, total = len(rep.base_tokens()), len(rep.spec_tokens()) if rep.spec_done else rec.settings.max_new
        self.prog_ph.progress(
            min(1.0, n / max(1, total)),
            text=f"repeat {len(rec.repeats)} of {rec.settings.repeats}, autoregressive baseline: {n} / {total} tokens",
        )

    def sweep_progress(self, frac: float, what: str) -> None:
        """Progress of a sweep, before each run."""
        self.queue_ph.empty()
        self.sweep_what = what
        self.prog_ph.progress(frac, text=f"sweep: {what}")

    def on_sweep_round(self, srec: runner.SweepRecord) -> None:
        """Between two rounds of a sweep (throttled): where a Stop lands, so the model is freed at once."""
        if self.redraw_due():
            self.prog_ph.progress(
                min(1.0, len(srec.runs) / max(1, srec.planned)),
                text=f"sweep: {self.sweep_what} ({srec.rounds()} rounds so far)",
            )


def intro() -> None:
    """The page's title and what it measures."""
    st.title("Live decoding: a draft proposes, the target verifies")
    st.markdown(
        "A small **draft** model guesses the next gamma tokens; the **target** checks them all in one forward "
        "pass and keeps the longest prefix the exact rule accepts, then adds one token of its own. Everything "
        "below is measured from the decoder's own per-round events, and the predicted speedup is the algebra "
        "(`specdec_core.algebra`) applied to the measured alpha_j, c and v. A race runs several repeats, "
        "interleaved (speculative, baseline, baseline, speculative, ...) so that a change in the machine's load "
        "hits both sides, and quotes medians with their spread: batch 1, this device."
    )


def setup() -> tuple[runner.Settings, runner.SharedPair | None, list[int] | None]:
    """Settle the previous run, read the controls, say which device runs, load the pair: (settings, pair, ids)."""
    settle_previous()
    settings, pair_ok, pair_reason, dev_problem = controls.all_controls()
    st.session_state["live_settings"] = settings
    _, device_why = lpairs.device_choices()
    if dev_problem:
        st.warning(f"{dev_problem}. Running on the CPU instead.")
    st.info(f"Device: **{settings.device}**. {device_why}")
    sp, ids = load_pair(settings, pair_ok, pair_reason)
    return settings, sp, ids


def buttons(settings: runner.Settings, sp: runner.SharedPair | None, ids: list[int] | None) -> tuple[bool, bool]:
    """Run, Sweep and Stop, and the line's length: (run clicked, sweep clicked)."""
    b1, b2, b3, b4 = st.columns([1.1, 1.3, 0.7, 2.4])
    run_clicked = b1.button(
        "Run the race",
        type="primary",
        key="run_btn",
        disabled=ids is None,
        help=f"{settings.repeats} interleaved repeats of a speculative run and the "
        "autoregressive baseline, same pair, settings and length.",
    )
    run_clicked = bool(st.session_state.pop(controls.QUICK_RUN, False)) or run_clicked  # a demo button asked for it
    sweep_clicked = b2.button("Sweep gamma 1-8", key="sweep_btn", disabled=ids is None)
    b3.button(
        "Stop",
        key="stop_btn",
        help="Stops a race or a sweep between two rounds and frees the model at once; "
        "changing any setting stops it too. What finished is kept.",
    )
    if sp is not None:
        b4.caption(
            f"Runs in line for this model now: {sp.queue.length()} (the model runs one at a time, first "
            "come first served)."
        )
    return run_clicked, sweep_clicked


def start_runs(
    stage: Stage, settings: runner.Settings, sp: runner.SharedPair, ids: list[int], race: bool, sweep: bool
) -> None:
    """Run the race and/or the sweep now; each record is kept in the session before it runs (a stop keeps it)."""
    if race:
        rec = runner.RunRecord(settings, lpairs.device_name(sp), ids)
        st.session_state["live_rec"] = rec
        set_value("round", 1)
        runner.run_race(sp, rec, stage.on_wait, stage.on_round, stage.on_base)
        stage.prog_ph.empty()
    if sweep:
        srec = runner.SweepRecord(settings, SWEEP_GAMMAS)
        st.session_state["live_sweep"] = srec
        runner.run_sweep(sp, srec, ids, stage.on_wait, stage.sweep_progress, stage.on_sweep_round)
        stage.prog_ph.empty()


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


def render() -> None:
    intro()
    settings, sp, ids = setup()
    step_mode = bound_toggle("step mode: one round per click, with every drafted token's q, p and uniform draw", "step")
    run_clicked, sweep_clicked = buttons(settings, sp, ids)
    stage = Stage(step_mode)
    stage.place_output()
    if sp is not None and ids is not None:
        start_runs(stage, settings, sp, ids, run_clicked, sweep_clicked)
    rec, m = results(stage, settings)
    batch_section(settings, sp, stage.on_wait, stage.prog_ph)
    constraint_panel.render(settings, sp, stage.on_wait)  # issue 18: constrained decoding, with the parser's rollback
    if rec is not None and m is not None:
        export(rec, m)


render()
