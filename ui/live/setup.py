"""The live page before a run: settle the previous run, read the controls, load the pair, the buttons, and
start the race or the sweep (each record kept in the session before it runs, so a stop keeps it)."""

from __future__ import annotations

import streamlit as st

from gpu_demo.live import runner
from ui.controls import set_value
from ui.live import controls, pairs
from ui.live.h200 import h200_table
from ui.live.stage import Stage
from ui.safe_text import md

SWEEP_GAMMAS = list(range(1, 9))
STOPPED_BY_YOU = "Stopped by you"
STOPPED_BY_RERUN = "Stopped because a setting changed (or the page reran) during the run"


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
        sp = pairs.get_pair(settings.pair, settings.device)
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
        f"Loaded **{sp.name}** on {pairs.device_name(sp)} in {sp.load_s:.2f} s (once per server, shared by "
        f"every session and pair on this device). {pairs.pair_description(sp.name)}"
        + (f" Draft kernel here: {sp.pair.info['draft_kernel']}." if sp.pair.info.get("draft_kernel") else "")
    )
    try:
        return sp, runner.validate(sp, settings)
    except ValueError as exc:
        st.error(f"This run cannot start with these settings: {md(exc, 400)}")
        return sp, None


def setup() -> tuple[runner.Settings, runner.SharedPair | None, list[int] | None]:
    """Settle the previous run, read the controls, say which device runs, load the pair: (settings, pair, ids)."""
    settle_previous()
    settings, pair_ok, pair_reason, dev_problem = controls.all_controls()
    st.session_state["live_settings"] = settings
    _, device_why = pairs.device_choices()
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
        rec = runner.RunRecord(settings, pairs.device_name(sp), ids)
        st.session_state["live_rec"] = rec
        set_value("round", 1)
        runner.run_race(sp, rec, stage.on_wait, stage.on_round, stage.on_base)
        stage.prog_ph.empty()
    if sweep:
        srec = runner.SweepRecord(settings, SWEEP_GAMMAS)
        st.session_state["live_sweep"] = srec
        runner.run_sweep(sp, srec, ids, stage.on_wait, stage.sweep_progress, stage.on_sweep_round)
        stage.prog_ph.empty()
