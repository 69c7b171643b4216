"""Live decoding: a real draft proposes, a real target verifies; alpha, c, v and the speedup are measured."""

from __future__ import annotations

import time

import streamlit as st
import torch

from gpu_demo.measure import batch as lb
from specdec_core.measure import Measured
from ui.controls import bound_toggle, get_value, number_box, set_value
from ui.live import controls as lc
from ui.live import export as lx
from ui.live import pairs as lpairs
from ui.live import panel as lp
from ui.live import queue as lq
from ui.live import runner as lr
from ui.live import tokens as lt
from ui.live.figures import batch_figure
from ui.safe_text import md

SWEEP_GAMMAS = list(range(1, 9))
# Mid-run redraws are throttled: every redraw makes the server and the browser work while the next
# rounds are timed, on the same cores and under the same GIL, and on a CPU that inflated c and v several
# fold. The finished run is always drawn in full (tokens, panel, charts) from its events.
LIVE_REDRAW_S = 0.5

st.title("Live decoding: a draft proposes, the target verifies")
st.markdown(
    "A small **draft** model guesses the next gamma tokens; the **target** checks them all in one forward "
    "pass and keeps the longest prefix the exact rule accepts, then adds one token of its own. Everything below "
    "is measured from the decoder's own per-round events, and the predicted speedup is the algebra "
    "(`specdec_core.algebra`) applied to the measured alpha_j, c and v."
)

_prev: lr.RunRecord | None = st.session_state.get("live_rec")
if _prev is not None and not _prev.settle():  # after Stop or a changed setting, let the old script run wind down
    st.warning("The previous run is still finishing; it stops at its next round.")
settings, pair_ok, pair_reason, dev_problem = lc.all_controls()
_, device_why = lpairs.device_choices()
if dev_problem:
    st.warning(f"{dev_problem}. Running on the CPU instead.")
st.info(f"Device: **{settings.device}**. {device_why}")

sp: lr.SharedPair | None = None
ids: list[int] | None = None
if not pair_ok:
    st.warning(f"The pair **{settings.pair}** is {pair_reason}. Choose another pair; the others still work.")
else:
    sp = lpairs.get_pair(settings.pair, settings.device)
    if sp.error:
        st.error(f"The pair **{settings.pair}** could not be loaded, so it cannot run here: {sp.error}")
        sp = None
with st.expander("all model pairs and where they run"):
    lc.pairs_table(settings.device)
if sp is not None:
    st.caption(f"Loaded **{sp.name}** on {lpairs.device_name(sp)} in {sp.load_s:.2f} s (once per server). "
               f"{lpairs.pair_description(sp.name)}")
    try:
        ids = lr.validate(sp, settings)
    except ValueError as exc:
        st.error(f"This run cannot start with these settings: {md(exc, 400)}")

step_mode = bound_toggle("step mode: one round per click, with every drafted token's q, p and uniform draw", "step")
b1, b2, b3, b4 = st.columns([1.1, 1.3, 0.7, 2.4])
run_clicked = b1.button("Run the race", type="primary", key="run_btn", disabled=ids is None,
                        help="Speculative run, then the autoregressive baseline, same pair, settings and length.")
sweep_clicked = b2.button("Sweep gamma 1-8", key="sweep_btn", disabled=ids is None)
b3.button("Stop", key="stop_btn", help="Stops a run between two rounds; changing any setting stops it too.")
if sp is not None:
    b4.caption(f"Runs in line for this model now: {sp.queue.length()} (the model runs one at a time, first come "
               "first served).")

queue_ph, prog_ph = st.empty(), st.empty()
st.html(lt.legend_html())
st.caption("Hover a token for its p and q top-5. Rejected drafts show struck through in the latest round, then drop.")
out_ph, panel_ph = st.empty(), st.empty()


def piece(token_id: int) -> str:
    """Display text of one token, with the tokenizer of the pair that made the shown run."""
    rec_ = st.session_state.get("live_rec")
    owner = lpairs.get_pair(rec_.settings.pair, rec_.settings.device) if rec_ is not None else sp
    return owner.pair.tokenizer.piece(token_id)


def on_wait(position: int) -> None:
    """Show the queue position while waiting for the model."""
    queue_ph.info(f"Waiting for the model: {position} run(s) ahead of yours. It starts by itself.")


redraw_due = lq.Throttle(LIVE_REDRAW_S)


def on_round(rec: lr.RunRecord) -> None:
    """Stream the run so far (tokens, progress, metrics), at most once per LIVE_REDRAW_S of wall time."""
    if not redraw_due():
        return
    queue_ph.empty()
    n = len(rec.spec_tokens())
    prog_ph.progress(min(1.0, n / rec.settings.max_new), text=f"speculative: {n} / {rec.settings.max_new} tokens")
    if step_mode:
        return
    out_ph.html(lt.stream_html(rec.settings.prompt, rec.events, piece))  # HTML only: never parsed as Markdown
    with panel_ph.container():
        lp.panel(lp.measure_record(rec), figures=False, key=f"_live{len(rec.events)}")


def on_base(rec: lr.RunRecord) -> None:
    """Progress of the baseline run (throttled like on_round)."""
    if not redraw_due():
        return
    n, total = len(rec.base_tokens()), len(rec.spec_tokens())
    prog_ph.progress(min(1.0, n / max(1, total)), text=f"autoregressive baseline: {n} / {total} tokens")


def sweep_progress(frac: float, what: str) -> None:
    """Progress of a sweep."""
    queue_ph.empty()
    prog_ph.progress(frac, text=f"sweep: {what}")


if run_clicked and sp is not None and ids is not None:
    rec = lr.RunRecord(settings, lpairs.device_name(sp), ids)
    st.session_state["live_rec"] = rec
    set_value("round", 1)
    lr.run_race(sp, rec, on_wait, on_round, on_base)
    prog_ph.empty()
if sweep_clicked and sp is not None and ids is not None:
    points, b_ev, b_wall = lr.run_sweep(sp, settings, ids, SWEEP_GAMMAS, on_wait, sweep_progress)
    st.session_state["live_sweep"] = (settings, lp.sweep_results(points, b_ev, b_wall))
    prog_ph.empty()

rec: lr.RunRecord | None = st.session_state.get("live_rec")
if rec is not None and rec.status == "stopped" and not rec.note:
    rec.note = ("Stopped by you" if st.session_state.get("stop_btn") else
                "Stopped because a setting changed (or the page reran) during the run")


def show_run(rec: lr.RunRecord) -> Measured:
    """The finished (or stopped) run: status, step mode, tokens, measured panel and the race."""
    m: Measured = lp.measure_record(rec)
    if rec.queue_wait_s > 0.05:
        st.caption(f"This run waited {rec.queue_wait_s:.1f} s in line for the shared model.")
    if rec.status == "stopped":
        st.warning(f"{rec.note} after {len(rec.events)} rounds and {len(rec.base_events)} baseline tokens; the numbers "
                   "below use what was measured. Press Run to start again.")
    if rec.settings != settings:
        st.caption("The settings changed since this run; the results below are from the previous settings.")

    shown = rec.events
    if step_mode and rec.events:
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
        st.dataframe(lt.step_table(ev, piece), hide_index=True, key="step_table")
        positions = list(range(len(ev.p_top)))
        pos = st.selectbox("inspect a position of this round (p and q top-5)", positions, key="inspect",
                           format_func=lambda i: f"position {i + 1}" + (" (correction/bonus)" if i == ev.k else ""))
        st.dataframe(lt.top5_table(ev, int(pos or 0), piece), hide_index=True, key="top5_table")

    out_ph.html(lt.stream_html(rec.settings.prompt, shown, piece, show_all_rejected=step_mode))
    with panel_ph.container():
        st.subheader("Measured panel")
        lp.panel(m)

    st.subheader("Race against the autoregressive baseline")
    if rec.status == "done":
        same = rec.spec_tokens() == rec.base_tokens()
        spec_text, base_text = ("".join(map(piece, rec.spec_tokens())), "".join(map(piece, rec.base_tokens())))
        c1, c2 = st.columns(2)
        c1.markdown("**speculative**")
        c1.code(spec_text, language=None, wrap_lines=True)
        c2.markdown("**autoregressive baseline**")
        c2.code(base_text, language=None, wrap_lines=True)
        if rec.settings.greedy:
            (st.success if same else st.error)(
                "Greedy: the speculative text equals the autoregressive text token for token." if same else
                "Greedy: the texts differ, which the exact greedy rule forbids; please report this run (export below).")
        else:
            st.caption("Sampled runs use one random stream per run, so the two texts differ; each is a sample from p.")
        st.markdown(f"**Predicted** {lp.fmt(m.predicted_speedup, 2, 'x')} against **measured** "
                    f"{lp.fmt(m.measured_speedup, 2, 'x')}. {lp.gap_sentence(m)}")
        if m.tokens < 150:
            st.caption("A short run: a few milliseconds of noise move these numbers. Use 200+ tokens (or the "
                       "sweep) for steadier ones.")
    else:
        st.caption("The race needs a finished run: the baseline runs right after the speculative run.")
    return m


m: Measured | None = None
if rec is None:
    out_ph.caption("Press **Run the race** to decode live. Tokens appear round by round.")
else:
    m = show_run(rec)

sweep = st.session_state.get("live_sweep")
if sweep is not None:
    st.subheader("Sweep: measured against predicted speedup, gamma = 1..8")
    if sweep[0] != settings:
        st.caption("This sweep used earlier settings.")
    lp.sweep_panel(sweep[1])

st.subheader("Batch view: v against batch size")
if settings.device != "cuda":
    st.info("Unavailable here: the batch view needs a CUDA GPU, and this run uses the CPU. On a CPU, a batched "
            "verify costs about batch x the work, so there is no memory-bound regime to show.")
elif sp is not None and st.button(f"Measure v at batch 1..256 (gamma = {settings.gamma})", key="batch_btn"):
    try:
        with sp.queue.turn(on_wait):
            rows = lb.measure_v(sp.pair.target, settings.gamma,
                                on_progress=lambda f: prog_ph.progress(f, text="batch sweep"))
        st.session_state["live_batch"] = (settings.gamma, rows, torch.cuda.get_device_name(0))
    except (RuntimeError, ValueError) as exc:  # e.g. out of GPU memory, or a model without batched caches
        st.error(f"The batch sweep failed on this pair: {exc}")
    prog_ph.empty()
batch = st.session_state.get("live_batch")
if settings.device == "cuda" and batch is not None and sp is not None:
    g, rows, gpu = batch
    hw, shape = lb.gpu_preset(gpu), lb.target_shape(sp.pair.target, sp.pair.info.get("target_params"))
    curve = lb.model_v(shape, hw, g, [r[0] for r in rows]) if hw and shape else None
    st.plotly_chart(batch_figure([r[0] for r in rows], [r[3] for r in rows], curve,
                                 hw.name if hw else "no preset for this GPU"), key="fig_batch")
    st.caption(f"Measured on {gpu} at gamma = {g}. The model is the roofline page's step time for "
               f"{hw.name if hw else 'no matching preset'}; where the measured v stays near 1 the verify pass is "
               "memory- or launch-bound, and the crossover is where it starts to climb.")

if rec is not None and m is not None:
    st.subheader("Export")
    e1, e2 = st.columns(2)
    e1.download_button("run as JSON (events, settings, device, versions)", lx.run_json(rec, m, lx.versions()),
                       file_name=f"specdec-live-{int(time.time())}.json", mime="application/json", key="dl_json")
    e2.download_button("metrics as CSV", lx.metrics_csv(m), file_name="specdec-live-metrics.csv", mime="text/csv",
                       key="dl_csv")
