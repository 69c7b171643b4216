"""The live page's run in progress: its places on the page (queue line, progress, tokens, panel) and the callbacks
the runner calls between rounds, and the token text of the pair that made the shown run."""

from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

from gpu_demo.live import queue, runner
from specdec_core.repeats import summarise_repeats
from ui.live import pairs, panel, tokens

# Mid-run redraws are throttled: every redraw makes the server and the browser work while the next
# rounds are timed, on the same cores and under the same GIL, and on a CPU that inflated c and v several
# fold. The finished run is always drawn in full (tokens, panel, charts) from its events.
LIVE_REDRAW_S = 0.5


def piece(token_id: int) -> str:
    """Display text of one token, with the tokenizer of the pair that made the shown run."""
    rec = st.session_state.get("live_rec")
    s = rec.settings if rec is not None else st.session_state["live_settings"]
    return pairs.get_pair(s.pair, s.device).pair.tokenizer.piece(token_id)


def prompt_shown(s: runner.Settings) -> str:
    """The run's prompt as the token box shows it (runner.shown_prompt)."""
    return runner.shown_prompt(pairs.get_pair(s.pair, s.device), s.prompt)


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
