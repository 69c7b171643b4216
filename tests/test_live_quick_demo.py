"""The live page's quick demo: one click beside the prompt sets a greedy reply on a real LM (SmolLM2 with prompt
lookup, on the edit preset whose reply copies the prompt), long enough for the page's own rules, runs the race at
once and shows a measured speedup with the pair's own verdict; 'Full race' is one click too. Time is printed
(bench territory), never asserted."""

from __future__ import annotations

import time

from gpu_demo.live.prompts import CHAT_PRESETS, PRESETS
from specdec_core.repeats import MIN_ROUNDS
from ui.live import controls

PAGE = "views/live.py"


def test_quick_demo_runs_at_once_and_shows_a_speedup(app_test):
    at = app_test(PAGE, timeout=240)
    assert not at.exception, at.exception
    assert "live_rec" not in at.session_state
    t0 = time.perf_counter()
    at.button(key="quick_btn").click().run()
    print(f"quick demo: {time.perf_counter() - t0:.1f} s in AppTest")  # reported, not asserted
    assert not at.exception, at.exception
    rec = at.session_state["live_rec"]
    quick = controls.quick_settings(rec.settings.pair)
    assert rec.status == "done" and rec.settings.repeats == quick["repeats"] and rec.settings.greedy
    assert rec.settings.pair == controls.quick_pair("cpu") and rec.settings.max_new == quick["maxnew"]
    metrics = {m.label: m.value for m in at.metric}
    print(f"quick demo on {rec.settings.pair}: measured {metrics['measured speedup']}, "
          f"predicted {metrics['predicted speedup']}")
    assert metrics["measured speedup"].endswith("x") and float(metrics["measured speedup"][:-1]) > 0
    assert at.query_params.get("maxnew") in (["200"], "200")               # the preset lives in the URL too
    # long enough for the page's own rules: no "too short" warning, a spread from 3 repeats, every repeat's rounds
    assert quick["repeats"] >= 3 and not any("Too short" in w.value for w in at.warning)
    assert all(len(r.events) >= MIN_ROUNDS for r in rec.finished_repeats()), [len(r.events) for r in rec.repeats]


def test_quick_demo_leads_with_a_real_lm_on_the_edit_task(app_test):
    assert controls.quick_pair("cpu") == "smollm2-lookup"       # SmolLM2 is a test dependency (tests/test_smollm2.py)
    assert controls.quick_settings("smollm2-lookup")["preset"] == "copy-heavy"
    at = app_test(PAGE, timeout=240)
    at.button(key="quick_btn").click().run()
    assert not at.exception, at.exception
    rec = at.session_state["live_rec"]
    assert rec.settings.pair == "smollm2-lookup" and rec.settings.prompt == CHAT_PRESETS["copy-heavy"]
    assert CHAT_PRESETS["copy-heavy"].startswith("Correct the spelling in this paragraph and return it in full")
    caption = " ".join(c.value for c in at.caption)
    assert "SmolLM2-135M (a real chat LM)" in caption                        # labelled as what it is
    # the greedy reply copies the paragraph back (an edit task, not a question the model answers)
    from ui.live.pairs import get_pair

    reply = get_pair("smollm2-lookup", "cpu").pair.tokenizer.reply(rec.spec_tokens()).split()
    prompt_words = set(CHAT_PRESETS["copy-heavy"].split())
    assert len(reply) >= 60 and sum(w in prompt_words for w in reply) >= 0.8 * len(reply), " ".join(reply)
    m = float(next(x.value for x in at.metric if x.label == "alpha (constant fit)"))
    assert m >= 0.6
    # the explanation under the race is this pair's, not the built-in pair's canned note
    assert "built-in target's weights" not in caption and "smollm2-lookup" in caption


def test_full_race_is_one_click_and_runs_three_repeats(app_test):
    at = app_test(PAGE, timeout=240, maxnew="20")
    at.button(key="full_btn").click().run()
    assert not at.exception, at.exception
    rec = at.session_state["live_rec"]
    assert rec.status == "done" and rec.settings.repeats == controls.FULL["repeats"]
    assert rec.settings.max_new == controls.FULL["maxnew"]


def test_the_copy_heavy_preset_takes_the_form_for_the_pair(app_test):
    at = app_test(PAGE, pair="smollm2-lookup", preset="copy-heavy")
    assert not at.exception, at.exception
    assert at.text_area(key="live.prompt").value == CHAT_PRESETS["copy-heavy"]     # the edit task for a chat LM
    at.selectbox(key="live.pair").set_value("builtin").run()
    assert at.text_area(key="live.prompt").value == PRESETS["copy-heavy"]          # a repeating passage, fits 512
    assert len(PRESETS["copy-heavy"]) + 200 <= 512
