"""The live page's repeated race: medians with their spread, vLLM's quantities beside the measured
acceptance, the short-run flag, the sentence under the race in every case, and a stopped sweep's partial results.

Page numbers are recomputed here from the record's own events with gpu_demo.measure.stats (the one
events -> core adapter) and plain statistics.median, independently of ui.live.panel's summary.
"""

from __future__ import annotations

import dataclasses
import math
import statistics

import pytest

from gpu_demo.measure.stats import measure_events
from specdec_core import measure
from specdec_core.repeats import summarise_repeats
from ui.live import panel

PAGE = "views/live.py"


def run_page(app_test, **query):
    at = app_test(PAGE, timeout=240, **{"gamma": "3", "seed": "7", **query})
    assert not at.exception, at.exception
    at.button(key="run_btn").click().run()
    assert not at.exception, at.exception
    return at


def page_text(at) -> str:
    return " ".join(e.value for kind in ("markdown", "warning", "caption", "error", "info", "success")
                    for e in getattr(at, kind))


def test_race_with_three_repeats_shows_medians_and_spread(app_test):
    at = run_page(app_test, maxnew="40")  # repeats: the page's default, 3
    rec = at.session_state["live_rec"]
    assert rec.status == "done" and rec.settings.repeats == 3
    assert [r.base_first for r in rec.repeats] == [False, True, False] and [r.seed for r in rec.repeats] == [7, 8, 9]
    runs = [measure_events(3, r.events, r.spec_wall, r.base_events, r.base_wall) for r in rec.repeats]

    pooled = measure_events(3, *([x for r in rec.repeats for x in getattr(r, n)]
                                 for n in ("events", "spec_wall", "base_events", "base_wall")))
    # one statistic on screen: the pooled run, so the metrics, the race line and the chart agree
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["measured speedup"] == f"{pooled.measured_speedup:.2f}x"
    assert metrics["predicted speedup"] == f"{pooled.predicted_speedup:.2f}x"
    assert metrics["alpha (constant fit)"] == f"{pooled.alpha_const:.3f}"
    assert metrics["tokens/s speculative"] == f"{pooled.spec_tokens_per_s:.1f}"
    assert metrics["tokens/s autoregressive"] == f"{pooled.base_tokens_per_s:.1f}"
    assert metrics["c measured"] == f"{pooled.c:.4f}" and metrics["v measured"] == f"{pooled.v:.3f}"
    race = next(m.value for m in at.markdown if m.value.startswith("**Predicted**"))
    assert race.startswith(f"**Predicted** {pooled.predicted_speedup:.2f}x against **measured** "
                           f"{pooled.measured_speedup:.2f}x: every round and token of the 3 interleaved")
    for name in ("measured_speedup", "predicted_speedup"):
        xs = [getattr(m, name) for m in runs]
        assert f"{statistics.median(xs):.2f}x ({min(xs):.2f}–{max(xs):.2f}x)" in race
    ratio = pooled.measured_speedup / pooled.predicted_speedup
    said = {f"Measured is {ratio:.0%} of predicted", f"Measured is {1 - ratio:.0%} below predicted",
            f"Measured is {ratio - 1:.0%} above predicted"}
    assert any(x in page_text(at) for x in said), said          # the ratio of the two numbers shown, not another
    assert "constant fit instead of alpha_j" not in page_text(at)          # no second prediction
    table = next(d.value for d in at.dataframe if "quantity" in d.value.columns).set_index("quantity")
    for label, name in (("tokens/s speculative", "spec_tokens_per_s"), ("c", "c"), ("v", "v"),
                        ("measured speedup", "measured_speedup"), ("predicted speedup", "predicted_speedup")):
        xs = [getattr(m, name) for m in runs]
        assert table.loc[label, ["median", "min", "max"]].tolist() == pytest.approx(
            [round(statistics.median(xs), 4), round(min(xs), 4), round(max(xs), 4)], abs=1e-9)
    # vLLM's three quantities over the pooled rounds of the three repeats, with their definitions.
    evs = [e for r in rec.repeats for e in r.events]
    drafts = [e for e in evs if e.k > 0]
    accepted = sum(e.n_accepted for e in evs)
    assert metrics["vLLM acceptance rate"] == f"{accepted / sum(e.k for e in evs):.3f}"
    assert metrics["vLLM mean acceptance length"] == f"{1 + accepted / len(drafts):.3f}"
    per_pos = [sum(e.n_accepted >= j for e in evs) / len(drafts) for j in (1, 2, 3)]
    assert metrics["vLLM per-position rates"] == ", ".join(f"{x:.2f}" for x in per_pos)
    vllm = next(d.value for d in at.dataframe if "per-position rate (vLLM, unconditional)" in d.value.columns)
    assert vllm["per-position rate (vLLM, unconditional)"].tolist() == [f"{x:.3f}" for x in per_pos]
    assert "unconditional" in page_text(at) and "mean acceptance length** = 1 + accepted / drafts" in page_text(at)
    # The flag and the sentence follow the shortest repeat.
    shortest = min(m.rounds for m in runs)
    assert ("Too short for its numbers" in page_text(at)) == (shortest < 20)


def test_short_run_is_flagged_and_a_long_one_is_not(app_test):
    short = run_page(app_test, maxnew="12", repeats="1")
    assert short.session_state["live_rec"].first.done and len(short.session_state["live_rec"].events) < 20
    assert any("Too short for its numbers" in w.value for w in short.warning)
    long = run_page(app_test, maxnew="150", repeats="1", greedy="true")
    assert len(long.session_state["live_rec"].events) >= 20
    assert not any("Too short" in w.value for w in long.warning)


def test_one_token_race_says_why_there_is_no_prediction(app_test):
    at = run_page(app_test, maxnew="1", repeats="2")
    text = page_text(at)
    assert "nothing to predict from" in text and "Run the race to compare" not in text
    assert "nan" not in text.lower().replace("nanos", "")


def _hand(**kw) -> measure.Measured:
    """gamma 2, two rounds: E[N] 2, c 0.1, v 1.2, t_T 0.1 s; wall 0.65 s per round, baseline 0.12 s per token."""
    base_wall = kw.pop("base_wall", 0.12)
    return measure.summarise(2, [2, 2], [2, 0], [3, 1], [0.02, 0.02], [0.12, 0.12], [0.6, 0.7], [0.1] * 4,
                        [base_wall] * 4)


@pytest.mark.parametrize(("runs", "says", "never"), [
    ([dataclasses.replace(_hand(), measured_speedup=math.nan)], ["No measured speedup yet"],
     ["Run the race", "slowdown"]),
    ([dataclasses.replace(_hand(), predicted_speedup=math.nan, c=math.nan)],
     ["nothing to predict from", "a slowdown", "nothing was drafted", "timer noise"], []),
    ([_hand()], ["This is a slowdown", "0.37x", "The algebra predicted 1.43x", "74% below predicted",
                 "510.00 ms per round", "The largest is per-round overhead",
                 "One repeat gives no spread"], ["accounts for", "above"]),
    ([_hand(base_wall=1.0)], ["Measured 3.08x against predicted 1.43x", "115% above predicted",
                              "The largest is the baseline's own overhead"], ["slowdown", "accounts for"]),
    ([dataclasses.replace(_hand(), measured_speedup=0.5, predicted_speedup=0.52)],
     ["This is a slowdown", "predicted a slowdown too", "within 10%"], ["below predicted"]),
    ([dataclasses.replace(_hand(), measured_speedup=x, predicted_speedup=1.4) for x in (1.2, 1.5, 1.3)],
     ["Measured 1.30x against predicted 1.40x", "93% of predicted, within 10%", "spread over the 3 repeats is wide",
      "part of this gap is noise", "too short"], ["slowdown"]),
    ([dataclasses.replace(_hand(), measured_speedup=x, predicted_speedup=1.4) for x in (1.29, 1.3, 1.31)],
     ["The 3 repeats agree within"], ["noise"]),
    # Within 10% only because two overheads cancel: the sentence must still say what the gap is made of.
    ([_hand(base_wall=0.5)], ["108% of predicted, within 10%", "0.22 from per-round overhead",
                              "5.00 from the baseline's own overhead", "The largest is the baseline's own overhead"],
     ["slowdown"]),
], ids=["no-baseline", "no-prediction", "slowdown-unpredicted", "above", "slowdown-predicted", "noisy", "steady",
        "match-by-cancelling"])
def test_gap_sentence_is_right_in_every_case(runs, says, never):
    pooled = runs[0] if len(runs) == 1 else dataclasses.replace(_hand(), measured_speedup=1.3, predicted_speedup=1.4)
    text = panel.gap_sentence(pooled, summarise_repeats(runs))
    for phrase in says:
        assert phrase in text, (phrase, text)
    for phrase in never:
        assert phrase not in text, (phrase, text)
    assert "nan" not in text.lower() and "inf" not in text.replace("info", "")


def test_stopped_sweep_keeps_and_shows_its_partial_results(app_test):
    from gpu_demo.live import runner
    from ui.live import pairs as lpairs

    at = app_test(PAGE, timeout=240, maxnew="20", gamma="3", seed="7", repeats="2")
    settings = at.session_state["live_settings"]
    sp = lpairs.get_pair(settings.pair, settings.device)
    srec = runner.SweepRecord(settings, list(range(1, 9)))

    def stop_in_third_pair(r: runner.SweepRecord) -> None:
        if len(r.runs) == 3 and r.runs[2].events:
            raise KeyboardInterrupt("stand-in for Streamlit's stop")

    with pytest.raises(KeyboardInterrupt):
        runner.run_sweep(sp, srec, runner.validate(sp, settings), lambda _: None, lambda f, w: None, stop_in_third_pair)
    assert sp.queue.length() == 0 and srec.status == "stopped"
    at.session_state["live_sweep"] = srec
    at.run()
    assert not at.exception
    assert any("after 2 of 16 runs" in w.value and "released at once" in w.value for w in at.warning)
    table = next(d.value for d in at.dataframe if "predicted" in d.value.columns)
    assert table["gamma"].tolist() == [1, 2] and table["repeats"].tolist() == [1, 1]
