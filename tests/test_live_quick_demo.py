"""The live page's quick demo (issue 27): one click beside the prompt sets a short greedy reply, one repeat and
the device's paying pair, runs the race at once and shows a measured speedup; 'Full race' is one click too.
Time is printed (bench territory), never asserted."""

from __future__ import annotations

import time

from ui.live import controls as lc

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
    assert rec.status == "done" and rec.settings.repeats == lc.QUICK["repeats"] and rec.settings.greedy
    assert rec.settings.pair == lc.quick_pair("cpu") and rec.settings.max_new == lc.QUICK["maxnew"]
    metrics = {m.label: m.value for m in at.metric}
    print(f"quick demo on {rec.settings.pair}: measured {metrics['measured speedup']}, "
          f"predicted {metrics['predicted speedup']}")
    assert metrics["measured speedup"].endswith("x") and float(metrics["measured speedup"][:-1]) > 0
    assert at.query_params.get("repeats") in (["1"], "1")                  # the preset lives in the URL too


def test_full_race_is_one_click_and_runs_three_repeats(app_test):
    at = app_test(PAGE, timeout=240, maxnew="20")
    at.button(key="full_btn").click().run()
    assert not at.exception, at.exception
    rec = at.session_state["live_rec"]
    assert rec.status == "done" and rec.settings.repeats == lc.FULL["repeats"]
    assert rec.settings.max_new == lc.FULL["maxnew"]
