"""The live page's measured panel, race readout and sweep: events -> gpu_demo.measure.stats -> specdec_core.

Numbers come from ``gpu_demo.measure.stats.measure_events`` (the one events -> specdec_core.measure
adapter), medians and spreads from ``specdec_core.repeats``, vLLM's quantities from
``specdec_core.vllm_metrics``; this module only lays them out and words them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np
import streamlit as st

from gpu_demo.live.runner import Repeat, RunRecord, SweepRecord
from gpu_demo.measure.stats import measure_events
from specdec_core.formatting import fixed
from specdec_core.measure import Measured
from specdec_core.repeats import CLOSE, MIN_ROUNDS, GapReading, RepeatSummary, Spread, read_gap, summarise_repeats
from specdec_core.vllm_metrics import SpecDecodeCounts, counts_from_rounds
from ui.live.figures import alpha_figure, length_figure, sweep_figure
from ui.pays_text import verdict_line
from ui.presenter import show

VLLM_DEFINITIONS = (
    "vLLM reports the same rounds under other names (its spec-decode metrics): **acceptance rate** = accepted / "
    "drafted tokens; **mean acceptance length** = 1 + accepted / drafts (it counts the correction or bonus token, "
    "so it is E[N], tokens per target pass); **per-position acceptance rate** j = drafts whose first j tokens were "
    "all accepted / drafts. vLLM's per-position rates are *unconditional* (r_j = alpha_1 x ... x alpha_j); this "
    "page's alpha_j are *conditional* (accepted at j among drafts that reached j). Feeding r_j into "
    "1 + sum_i prod_(j<=i) alpha_j as if they were alpha_j undercounts E[N]."
)
SHORT_TEXT = (f"fewer than {MIN_ROUNDS} speculative rounds per repeat: alpha_j, c and v rest on a handful of "
              "rounds and a few milliseconds of noise, so read them as rough, not as facts")


def fmt_spread(s: Spread, d: int = 2, unit: str = "") -> str:
    """'median (min-max)' for several values, the value alone for one, '—' for none."""
    if s.n == 0:
        return "—"
    if s.n == 1:
        return fixed(s.median, d, unit)
    return f"{fixed(s.median, d, unit)} ({fixed(s.lo, d)}–{fixed(s.hi, d, unit)})"


# ------------------------------------------------------------------------------------------ measuring


def measure_repeat(rep: Repeat) -> Measured:
    """The measured summary of one (speculative run, baseline) pair."""
    return measure_events(rep.gamma, rep.events, rep.spec_wall, rep.base_events, rep.base_wall)


def measure_record(rec: RunRecord) -> Measured:
    """Repeat 0's summary (baseline-dependent numbers are NaN until its baseline has run)."""
    return measure_repeat(rec.first)


def pooled(reps: Sequence[Repeat], gamma: int) -> Measured:
    """One summary over the rounds of every given repeat pooled (alpha_j from all of them)."""
    cat = [[x for r in reps for x in getattr(r, name)] for name in ("events", "spec_wall", "base_events", "base_wall")]
    return measure_events(gamma, *cat)


def vllm_counts(reps: Sequence[Repeat], gamma: int) -> SpecDecodeCounts:
    """vLLM's counters over the speculative rounds of the given repeats (counts add over repeats)."""
    evs = [e for r in reps for e in r.events]
    return counts_from_rounds([e.k for e in evs], [e.n_accepted for e in evs], gamma)


def race_runs(rec: RunRecord) -> list[Measured]:
    """One summary per finished repeat of the race (repeat 0 alone while the first is still running)."""
    done = rec.finished_repeats()
    return [measure_repeat(r) for r in (done or rec.repeats[:1])]


# ------------------------------------------------------------------------------------------ wording


FACTOR_NAMES = {"accept": "the acceptance draw", "spec_round": "per-round overhead the algebra does not model",
                "base_step": "the baseline's own overhead"}


def race_reading(m: Measured, s: RepeatSummary) -> tuple[RepeatSummary, GapReading]:
    """The race read from one statistic: every repeat's rounds and tokens pooled (m, so measured / predicted and
    its three factors are one run's exact numbers); the noise and the short-run flag from the repeats (s)."""
    one = summarise_repeats([m])
    return one, dataclasses.replace(read_gap(one), noisy=s.noisy(), short=s.short())


def _gap_factors(s: RepeatSummary) -> str:
    """measured / predicted as the product of its three factors (of the pooled run), the largest named."""
    f = {k: getattr(s, k).median for k in FACTOR_NAMES}
    ms = 1e3 * s.overhead_s_per_round.median
    text = (
        f"Measured / predicted = {fixed(f['accept'], 2)} x {fixed(f['spec_round'], 2)} x {fixed(f['base_step'], 2)} "
        f": {fixed(f['accept'], 2)} from the acceptance draw ({fixed(s.tokens_per_pass.median, 2)} "
        f"tokens per round against the E[N] of the measured alpha_j), {fixed(f['spec_round'], 2)} from per-round "
        f"overhead the algebra does not model ({fixed(ms, 2)} ms per round outside the draft and verify passes: "
        f"sampling, the acceptance test, cache rollback, Python), {fixed(f['base_step'], 2)} from the baseline's own "
        "overhead (its wall time per token over its forward pass, the unit of c and v)."
    )
    finite = {k: abs(math.log(v)) for k, v in f.items() if math.isfinite(v) and v > 0}
    if finite:
        text += f" The largest is {FACTOR_NAMES[max(finite, key=finite.get)]}."
    return text


def gap_sentence(m: Measured, spread_over: RepeatSummary) -> str:
    """What the race says, from the pooled run m: how far measured is from predicted, what the gap is made of,
    slowdowns named; the spread over the repeats (spread_over) says how much of it is noise."""
    s, r = race_reading(m, spread_over)
    if r.kind == "no-baseline":
        return ("No measured speedup yet: the baseline did not run to its end (the race stopped before it), so "
                "there is nothing to set the prediction against.")
    if r.kind == "no-prediction":
        if s.c.n == 0:
            return (f"Measured {fixed(r.measured, 2, 'x')}{' (a slowdown)' if r.slowdown else ''}, but the algebra has "
                    "nothing to predict from: nothing was drafted (a run this short may draft nothing), so c is "
                    "undefined; and with no drafts both sides ran the same target steps, so that measured number is "
                    "timer noise. Use more tokens.")
        return (f"Measured {fixed(r.measured, 2, 'x')}{' (a slowdown)' if r.slowdown else ''}, but the algebra has "
                "nothing to predict from: the measured costs are not usable (no baseline step was timed). Run again.")
    if r.slowdown:
        head = (f"This is a slowdown: speculative decoding ran at {fixed(r.measured, 2, 'x')} the baseline's speed. "
                + (f"The algebra predicted a slowdown too ({fixed(r.predicted, 2, 'x')}): at this acceptance the draft "
                   "and verify costs outweigh the tokens they save. " if r.predicted_slowdown else
                   f"The algebra predicted {fixed(r.predicted, 2, 'x')}. "))
    else:
        head = f"Measured {fixed(r.measured, 2, 'x')} against predicted {fixed(r.predicted, 2, 'x')}. "
    head = (f"Pooled over the {spread_over.repeats} repeats: " if spread_over.repeats > 1 else "") + head
    if r.kind == "match":
        gap = f"Measured is {r.ratio:.0%} of predicted, within {CLOSE:.0%}. " + _gap_factors(s) + " "
    elif r.kind == "below":
        gap = f"Measured is {1 - r.ratio:.0%} below predicted. " + _gap_factors(s) + " "
    else:
        gap = f"Measured is {r.ratio - 1:.0%} above predicted. " + _gap_factors(s) + " "
    sp = spread_over
    if sp.repeats < 2:
        tail = "One repeat gives no spread to judge the noise by; use 3 or more."
    elif r.noisy:
        tail = (f"The spread over the {sp.repeats} repeats is wide (per repeat, measured "
                f"{fmt_spread(sp.measured, 2, 'x')}, predicted {fmt_spread(sp.predicted, 2, 'x')}): part of this gap "
                "is noise; use more tokens or repeats, or a quieter machine.")
    else:
        tail = f"The {sp.repeats} repeats agree within {max(sp.measured.relative(), sp.predicted.relative()):.0%}."
    if r.short:
        tail += (f" And with {fixed(sp.rounds.lo, 0)} rounds in the shortest repeat, "
                 "the run is too short for its numbers.")
    return head + gap + tail


# ------------------------------------------------------------------------------------------ drawing


def metrics_row(m: Measured, s: RepeatSummary) -> None:
    """Tokens per pass, alpha, c, v, tokens/s and the two speedups as st.metric: the pooled run m (one statistic,
    so the alpha here is the chart's, and measured / predicted is the sentence's); each help gives the range over
    the repeats (s)."""
    n = f"pooled over {s.repeats} repeat{'s' if s.repeats != 1 else ''}"

    def rng(x: Spread, d: int) -> str:
        return f"{n}; per repeat {fixed(x.lo, d)} to {fixed(x.hi, d)}. " if x.n > 1 else f"{n}. "

    cols = st.columns(4)
    cols[0].metric("tokens per target pass", fixed(m.tokens_per_pass, 2),
                   help=rng(s.tokens_per_pass, 2) + "emitted tokens / verification rounds")
    cols[1].metric("alpha (constant fit)", fixed(m.alpha_const, 3),
                   help=rng(s.alpha, 3) + "accepted drafts / drafted positions reached")
    cols[2].metric("c measured", fixed(m.c, 4),
                   help=rng(s.c, 4) + "draft seconds per drafted token / baseline seconds per token")
    cols[3].metric("v measured", fixed(m.v, 3),
                   help=rng(s.v, 3) + "verify seconds per round / baseline seconds per token")
    cols = st.columns(4)
    cols[0].metric("tokens/s speculative", fixed(m.spec_tokens_per_s, 1), help=rng(s.spec_tokens_per_s, 1))
    cols[1].metric("tokens/s autoregressive", fixed(m.base_tokens_per_s, 1), help=rng(s.base_tokens_per_s, 1))
    cols[2].metric("predicted speedup", fixed(m.predicted_speedup, 2, "x"),
                   help=rng(s.predicted, 2) + "speedup_positional(alpha_j, c, v) from specdec_core.algebra")
    cols[3].metric("measured speedup", fixed(m.measured_speedup, 2, "x"),
                   help=rng(s.measured, 2) + "baseline seconds per token / speculative seconds per token "
                                             "(wall clock in the decoder)")


def spread_table(s: RepeatSummary, key: str = "spread_table") -> None:
    """Median, min, max and spread (as a share of the median) of every quantity the race shows."""
    rows = {"tokens/s speculative": s.spec_tokens_per_s, "tokens/s autoregressive": s.base_tokens_per_s,
            "c": s.c, "v": s.v, "alpha (constant fit)": s.alpha, "predicted speedup": s.predicted,
            "measured speedup": s.measured, "measured / predicted": s.ratio}

    def r(x: float) -> float | None:
        return round(x, 4) if math.isfinite(x) else None

    st.dataframe({
        "quantity": list(rows), "median": [r(x.median) for x in rows.values()],
        "min": [r(x.lo) for x in rows.values()], "max": [r(x.hi) for x in rows.values()],
        "spread (max-min)/median": [f"{x.relative():.0%}" if math.isfinite(x.relative()) else "—"
                                    for x in rows.values()],
    }, hide_index=True, key=key)


def vllm_block(counts: SpecDecodeCounts, alphas: np.ndarray, table: bool = True, key: str = "") -> None:
    """vLLM's three quantities for these rounds, with their definitions, beside the conditional alpha_j."""
    rate, length, per_pos = counts.acceptance_rate(), counts.mean_acceptance_length(), counts.per_position_rates()
    cols = st.columns(3)
    cols[0].metric("vLLM acceptance rate", fixed(rate, 3), help="accepted / drafted tokens")
    cols[1].metric("vLLM mean acceptance length", fixed(length, 3), help="1 + accepted / drafts (bonus counted)")
    cols[2].metric("vLLM per-position rates", ", ".join(fixed(x, 2) for x in per_pos) if counts.num_drafts else "—",
                   help="drafts with the first j tokens accepted / drafts (unconditional)")
    st.caption(VLLM_DEFINITIONS + f" Counted over {counts.num_drafts} drafts and {counts.num_draft_tokens} drafted "
               "tokens.")
    if table and len(per_pos):
        a = np.asarray(alphas, dtype=float)
        st.dataframe({
            "position j": list(range(1, len(per_pos) + 1)),
            "alpha_j (conditional, this page)": [fixed(x, 3) for x in a],
            "per-position rate (vLLM, unconditional)": [fixed(x, 3) for x in per_pos],
            "conditional from vLLM's counts": [fixed(x, 3) for x in counts.conditional_alphas()],
        }, hide_index=True, key=f"vllm_table{key}")
        if counts.drafts_shorter_than_gamma():
            st.caption("The last column is r_j / r_(j-1) from vLLM's counts. It is below alpha_j where some drafts "
                       "were shorter than gamma (the run's last rounds): vLLM counts those drafts at position j "
                       "though they never reached it, so its ratio is a lower bound there; E[N] is exact either way.")


def panel(m: Measured, s: RepeatSummary, counts: SpecDecodeCounts, figures: bool = True, key: str = "") -> None:
    """The measured panel: medians, vLLM's quantities, then alpha_j bars and the accepted-length histogram.

    ``m`` pools the repeats' rounds (for alpha_j and the histogram); ``key`` keeps chart keys unique when the
    panel is redrawn several times in one script run (live).
    """
    metrics_row(m, s)
    vllm_block(counts, m.alphas, table=figures, key=key)
    st.caption(f"{m.rounds} rounds, {m.tokens} tokens over {s.repeats} repeat(s), pooled. The prediction uses "
               f"alpha_j (E[N] = {fixed(m.expected_tokens, 3)}); the constant fit alpha is drawn for comparison only.")
    if figures and m.rounds:
        left, right = st.columns(2)
        show(alpha_figure(m.alphas, m.reached, m.alpha_const), key=f"fig_alpha{key}", where=left)
        show(length_figure(m.length_counts, m.pmf_const, m.pmf_positional), key=f"fig_len{key}", where=right)


def race_readout(m: Measured, s: RepeatSummary, device: str, pair: str = "builtin") -> None:
    """The race from the pooled run m (one statistic, named), the spread over the repeats s, where it was
    measured, the short-run flag, the gap sentence and the pair's own cost note and verdict."""
    spread = (f" Per repeat, measured ran {fmt_spread(s.measured, 2, 'x')} and predicted "
              f"{fmt_spread(s.predicted, 2, 'x')} (median, min–max)." if s.repeats > 1 else "")
    st.markdown(f"**Predicted** {fixed(m.predicted_speedup, 2, 'x')} against **measured** "
                f"{fixed(m.measured_speedup, 2, 'x')}: every round and token of the {s.repeats} interleaved "
                f"repeat(s) pooled, batch 1, this device ({device}).{spread}")
    if s.short():
        st.warning(f"Too short for its numbers: {SHORT_TEXT}. Use 200+ tokens.")
    st.markdown(gap_sentence(m, s))
    note = cost_note(pair, m, device)
    if note:
        st.caption(note)
    spread_table(s)


def cost_note(pair: str, m: Measured, device: str) -> str:
    """Under a race: the built-in pair's CPU note on v where it applies (or the note that a v below 1 is load), then
    one line from this pair's own alpha_j, c and v on whether it pays here and why."""
    parts = []
    if device.startswith("cpu") and math.isfinite(m.v) and (pair == "builtin" or m.v < 1.0):
        parts.append(cpu_v_note(m.v))
    elif math.isfinite(m.v) and math.isfinite(m.c):
        parts.append(f"{pair} on {device}: a draft token cost c = {m.c:.3f} target steps and a verify pass of up to "
                     f"gamma + 1 = {m.gamma + 1} tokens v = {m.v:.2f}, measured in this race.")
    parts.append(verdict_line(pair, m.alphas, m.alpha_const, m.c, m.v, m.measured_speedup))
    return " ".join(p for p in parts if p)


def cpu_v_note(v: float) -> str:
    """Why the measured v on this CPU is what it is: a per-pass cost plus per-token work, not a roofline."""
    if v < 1.0:
        return (
            f"v = {v:.2f} says a verify pass of gamma + 1 tokens took less time than one plain decode step, which "
            "the same work cannot do: the baseline's steps were slowed by other load on this machine. Read the "
            "spread table before trusting this run's c, v and speedup."
        )
    return (
        f"Why v = {v:.2f} here, not 1 and not gamma + 1: the built-in target's weights (about 16 MB) sit in this "
        "CPU's cache, so a step does not wait on memory and the roofline's 'v near 1 at small batch' does not "
        "apply; nor is a pass pure arithmetic. A forward costs a fixed part once per pass (dozens of small "
        "framework calls, the mask, the softmax of p: a floor of 0.3 to 0.5 ms on this CPU) plus each token's "
        "own arithmetic and attention, so v = (per-pass cost + (gamma + 1) x per-token work) / (per-pass cost + "
        "per-token work) climbs by roughly 0.1 to 0.2 per drafted token. Speculation pays here because the "
        "draft is cheap (small c), not because verification is free."
    )


# -------------------------------------------------------------------------------------------- sweep


def sweep_results(srec: SweepRecord) -> list[tuple[int, list[Measured], RepeatSummary, SpecDecodeCounts]]:
    """Per gamma with at least one finished pair: its runs, their medians and spread, and vLLM's counts."""
    out = []
    for g, reps in srec.by_gamma().items():
        runs = [measure_repeat(r) for r in reps]
        out.append((g, runs, summarise_repeats(runs), vllm_counts(reps, g)))
    return out


def sweep_panel(srec: SweepRecord) -> None:
    """Measured against predicted speedup over gamma with spread bars, and a table (partial sweeps included)."""
    results = sweep_results(srec)
    if srec.status == "stopped":
        st.warning(f"{srec.note or 'The sweep stopped'} after {sum(r.done for r in srec.runs)} of {srec.planned} "
                   "runs; the model was released at once. The results below are what finished.")
    if not results:
        st.caption("No gamma finished a speculative run and its baseline before the sweep stopped.")
        return
    gammas = [g for g, *_ in results]
    sums = [s for _, _, s, _ in results]
    show(sweep_figure(gammas, [s.measured for s in sums], [s.predicted for s in sums]), key="fig_sweep")
    short = [g for g, s in zip(gammas, sums) if s.short()]
    if short:
        st.warning(f"Too short for its numbers at gamma = {', '.join(map(str, short))}: {SHORT_TEXT}.")

    def r(x: float, d: int = 3) -> float | None:
        return round(x, d) if math.isfinite(x) else None

    st.dataframe({
        "gamma": gammas, "repeats": [s.repeats for s in sums],
        "alpha (fit)": [r(s.alpha.median) for s in sums],
        "vLLM acceptance rate": [r(c.acceptance_rate()) for *_, c in results],
        "vLLM mean acceptance length": [r(c.mean_acceptance_length()) for *_, c in results],
        "vLLM per-position rates": [", ".join(fixed(x, 2) for x in c.per_position_rates()) for *_, c in results],
        "c": [r(s.c.median, 4) for s in sums], "v": [r(s.v.median) for s in sums],
        "predicted": [r(s.predicted.median) for s in sums], "predicted min": [r(s.predicted.lo) for s in sums],
        "predicted max": [r(s.predicted.hi) for s in sums],
        "measured": [r(s.measured.median) for s in sums], "measured min": [r(s.measured.lo) for s in sums],
        "measured max": [r(s.measured.hi) for s in sums],
    }, hide_index=True, key="sweep_table")
    st.caption("Medians over the repeats, with min and max. Each gamma's speculative run is timed beside its own "
               "baseline, the side that runs first alternating, and the gammas reversed on every other repeat, so "
               "drift hits both sides; batch 1, this device. " + VLLM_DEFINITIONS)
