"""Live decoding: a real draft proposes, a real target verifies; alpha, c, v and the speedup are measured."""

from __future__ import annotations

import streamlit as st

from ui.controls import bound_toggle
from ui.live import constraint_panel
from ui.live.batch_view import batch_section
from ui.live.results import export, results
from ui.live.setup import buttons, setup, start_runs
from ui.live.stage import Stage


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
    constraint_panel.render(settings, sp, stage.on_wait)  # constrained decoding, with the parser's rollback
    if rec is not None and m is not None:
        export(rec, m)


render()
