"""AppTest of the live page on the built-in pair on CPU (a tiny stand-in pair where the weights are absent).

Runs are short (40 tokens, gamma 3) so the file stays fast. Every number checked here is recomputed
independently from the run's own events with the engine's and the core's functions.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re

import pytest
from live_support import ALPHABET, BAD_CHARS

from gpu_demo.measure.stats import alpha_per_position, overall_alpha
from specdec_core import algebra
from ui.live import export
from ui.live.panel import measure_record, sweep_results
from ui.live.tokens import TARGET_STYLE
from ui.theme import KIND_STYLE

PAGE = "views/live.py"
SHORT = dict(maxnew="40", gamma="3", seed="7", repeats="1")  # one repeat: the checks below are per run


def run_page(app_test, **query):
    """Open the live page with query params, press Run, return the AppTest."""
    at = app_test(PAGE, timeout=180, **{**SHORT, **query})
    assert not at.exception, at.exception
    at.button(key="run_btn").click().run()
    assert not at.exception, at.exception
    return at


def test_short_run_shows_measured_panel_and_race(app_test):
    at = run_page(app_test)
    rec = at.session_state["live_rec"]
    assert rec.status == "done"
    assert len(rec.spec_tokens()) == 40 and len(rec.base_tokens()) == 40
    metrics = {mm.label: mm.value for mm in at.metric}
    for label in ("tokens per target pass", "alpha (constant fit)", "c measured", "v measured",
                  "tokens/s speculative", "tokens/s autoregressive", "predicted speedup", "measured speedup"):
        assert label in metrics and metrics[label] != "—", (label, metrics)
    # The panel's numbers are the algebra on the events' alpha_j, c and v (recomputed here independently).
    m = measure_record(rec)
    alphas = alpha_per_position(rec.events, 3)
    assert [a if not math.isnan(a) else -1 for a in alphas] == pytest.approx(
        [a if not math.isnan(a) else -1 for a in m.alphas])
    assert overall_alpha(rec.events) == pytest.approx(m.alpha_const)
    t_base = sum(e.verify_s for e in rec.base_events) / 40
    c = sum(e.draft_s for e in rec.events) / sum(e.k for e in rec.events) / t_base
    v = sum(e.verify_s for e in rec.events) / len(rec.events) / t_base
    filled = [0.0 if math.isnan(a) else a for a in alphas]
    assert m.c == pytest.approx(c) and m.v == pytest.approx(v)
    assert m.predicted_speedup == pytest.approx(algebra.speedup_positional(filled, c, v))
    assert metrics["predicted speedup"] == f"{m.predicted_speedup:.2f}x"
    assert metrics["tokens per target pass"] == f"{40 / len(rec.events):.2f}"
    measured = (sum(rec.base_wall) / 40) / (sum(rec.spec_wall) / 40)
    assert m.measured_speedup == pytest.approx(measured)
    race = [mk.value for mk in at.markdown if mk.value.startswith("**Predicted**")]
    assert race and f"{m.predicted_speedup:.2f}x" in race[0] and f"{m.measured_speedup:.2f}x" in race[0]
    # Tokens carry the app-wide colour and cue of their kind.
    html = next(h.value for h in at.html if 'class="live-tokens"' in h.value)            # st.html, not Markdown
    kinds = {k for e in rec.events for k in e.kinds}
    for kind in kinds:  # "target": a round that drafted nothing (the run's last token) is a plain target step
        style = TARGET_STYLE if kind == "target" else KIND_STYLE[kind]["colour"]
        assert f'tok-{kind}' in html and style in html
    assert "p top-5:" in html  # hover text
    assert "Unavailable here" in " ".join(i.value for i in at.info)  # batch view on CPU


def test_greedy_equals_baseline(app_test):
    at = run_page(app_test, greedy="true", gamma="4")
    rec = at.session_state["live_rec"]
    assert rec.settings.greedy
    assert rec.spec_tokens() == rec.base_tokens()
    codes = [c.value for c in at.code][:2]  # the race's two texts come first (the constrained section has its own)
    assert len(codes) == 2 and codes[0] == codes[1] and len(codes[0]) == 40
    assert any("equals the autoregressive text" in s.value for s in at.success)
    assert not at.error


def test_sampled_run_is_reproducible_from_its_seed(app_test):
    first = run_page(app_test).session_state["live_rec"].spec_tokens()
    again = run_page(app_test).session_state["live_rec"].spec_tokens()
    other = run_page(app_test, seed="8").session_state["live_rec"].spec_tokens()
    assert first == again and first != other


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [("", ["empty"]), (f"Hello {BAD_CHARS[0]} and {BAD_CHARS[1]}", [repr(BAD_CHARS[0]), repr(BAD_CHARS[1])]),
     ("a" * 2000, ["context"])],
    ids=["empty", "unknown-characters", "past-context"],
)
def test_bad_prompts_get_clear_messages(app_test, prompt, expected):
    at = app_test(PAGE, prompt=prompt, **SHORT)
    assert not at.exception
    errors = " ".join(re.sub(r"\\(.)", r"\1", e.value).replace("\u200b", "")  # as rendered: escapes and the
                      for e in at.error)                                     # zero-width autolink breaks unseen
    for word in expected:
        assert word in errors, errors
    assert at.button(key="run_btn").disabled


def frame_with(at, column: str):
    """The first dataframe on the page that has `column`."""
    return next(df.value for df in at.dataframe if column in df.value.columns)


def test_step_mode_shows_each_drafted_position(app_test):
    at = run_page(app_test, step="true")
    rec = at.session_state["live_rec"]
    table = frame_with(at, "verdict")
    assert list(table.columns) == ["position", "draft token", "q(x)", "p(x)", "min(1, p/q)", "uniform u", "verdict"]
    ev = rec.events[0]
    assert table["p(x)"].tolist() == pytest.approx(ev.p_x) and table["q(x)"].tolist() == pytest.approx(ev.q_x)
    assert table["min(1, p/q)"].tolist() == pytest.approx([min(1.0, p / q) for p, q in zip(ev.p_x, ev.q_x)])
    at.button(key="next_btn").click().run()
    assert at.number_input(key="live.round").value == 2
    table2 = frame_with(at, "verdict")
    assert table2["p(x)"].tolist() == pytest.approx(rec.events[1].p_x)
    top5 = frame_with(at, "q token")
    assert top5["p"].tolist() == pytest.approx([pr for _, pr in rec.events[1].p_top[0]])


def test_unavailable_pair_says_why_and_page_stays_usable(app_test):
    at = app_test(PAGE, pair="hf", **SHORT)
    assert not at.exception
    texts = " ".join(w.value for w in at.warning) + " ".join(e.value for e in at.error)
    assert "hf" in texts and ("not available" in texts or "could not be loaded" in texts)
    assert at.button(key="run_btn").disabled
    at.selectbox(key="live.pair").set_value("builtin").run()
    assert not at.exception and not at.button(key="run_btn").disabled


def test_export_json_and_csv(app_test):
    at = run_page(app_test)
    rec = at.session_state["live_rec"]
    m = measure_record(rec)
    doc = json.loads(export.run_json(rec, m, export.versions()))
    assert doc["settings"]["gamma"] == 3 and doc["settings"]["max_new"] == 40
    assert "cpu" in doc["device"] and doc["versions"]["torch"]
    assert len(doc["speculative"]["events"]) == len(rec.events)
    assert sum(len(e["emitted"]) for e in doc["autoregressive"]["events"]) == 40
    rows = list(csv.DictReader(io.StringIO(export.metrics_csv(m))))
    values = {r["metric"]: r["value"] for r in rows if not r["position"]}
    assert float(values["predicted_speedup"]) == pytest.approx(m.predicted_speedup)
    assert sum(1 for r in rows if r["metric"] == "alpha_j") == 3


def test_prompt_alphabet_covers_presets():
    from gpu_demo.live.prompts import CHAT_PRESETS
    from ui.live.controls import PRESETS

    for text in [*PRESETS.values(), *CHAT_PRESETS.values()]:
        assert set(text) <= set(ALPHABET), set(text) - set(ALPHABET)


def test_preset_in_the_url_sets_the_prompt_and_draft_settings_warn(app_test):
    from ui.live.controls import PRESETS

    at = app_test(PAGE, preset="copy-heavy", apart="true", dtemp="0.5", **SHORT)
    assert not at.exception
    assert at.text_area(key="live.prompt").value == PRESETS["copy-heavy"]
    assert any("break exactness" in w.value for w in at.warning)
    at.button(key="run_btn").click().run()
    rec = at.session_state["live_rec"]
    assert rec.settings.draft_sampling().temperature == 0.5 and rec.status == "done"


def test_sweep_runs_gamma_one_to_eight(app_test):
    at = app_test(PAGE, **{**SHORT, "maxnew": "24", "repeats": "2"})
    at.button(key="sweep_btn").click().run()
    assert not at.exception
    srec = at.session_state["live_sweep"]
    assert srec.status == "done" and srec.planned == 16
    # Interleaved: every gamma has its own baseline, once run first and once second; odd repeats reverse gamma.
    assert [r.gamma for r in srec.runs] == list(range(1, 9)) + list(range(8, 0, -1))
    assert [r.base_first for r in srec.runs] == [i % 2 == 1 for i in range(16)]
    results = sweep_results(srec)
    assert [g for g, *_ in results] == list(range(1, 9))
    for g, runs, summary, counts in results:
        assert len(runs) == 2
        for r in runs:
            assert r.tokens == 24 and math.isfinite(r.predicted_speedup) and math.isfinite(r.measured_speedup)
            assert r.predicted_speedup == pytest.approx(
                algebra.speedup_positional([0.0 if math.isnan(a) else a for a in r.alphas], r.c, r.v))
        measured = sorted(r.measured_speedup for r in runs)
        assert (summary.measured.lo, summary.measured.hi) == pytest.approx(measured)
        assert counts.num_draft_tokens == sum(e.k for rep in srec.by_gamma()[g] for e in rep.events)
    table = frame_with(at, "predicted")
    assert table["gamma"].tolist() == list(range(1, 9))
    assert table["measured min"].tolist() == pytest.approx([round(s.measured.lo, 3) for _, _, s, _ in results])
    assert table["measured max"].tolist() == pytest.approx([round(s.measured.hi, 3) for _, _, s, _ in results])
    assert table["vLLM acceptance rate"].tolist() == pytest.approx(
        [round(c.acceptance_rate(), 3) for *_, c in results])
    fig = json.loads(next(c.proto.spec for c in at.get("plotly_chart") if "gamma (median" in c.proto.spec))
    bars = {tr["name"].split(" ")[0]: tr["error_y"] for tr in fig["data"] if "error_y" in tr}
    assert set(bars) == {"measured", "predicted"}  # spread bars on both curves
    assert bars["measured"]["array"] == pytest.approx([s.measured.hi - s.measured.median for _, _, s, _ in results])


def test_reruns_and_sessions_load_the_model_once(app_test, monkeypatch):
    """Two sessions and several reruns call the loader once: one cached Pair, no per-rerun model copies."""
    from gpu_demo import pairs
    from ui.live import pairs as lpairs

    calls = []
    real_load = pairs.load_pair

    def counting_load(*args, **kwargs):
        calls.append(args)
        return real_load(*args, **kwargs)

    monkeypatch.setattr(pairs, "load_pair", counting_load)
    lpairs.shared_pair.clear()
    a = run_page(app_test)
    b = run_page(app_test, seed="3")
    b.button(key="run_btn").click().run()
    a.button(key="run_btn").click().run()
    assert len(calls) == 1, calls
    for at in (a, b):
        assert not at.exception and at.session_state["live_rec"].status == "done"
    assert lpairs.get_pair("builtin", "cpu").queue.length() == 0  # every run left the line
