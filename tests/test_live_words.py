"""The live page's words about costs hold on this device: the CPU note and the measured-v reading."""

from __future__ import annotations

import re

from ui.live.panel import cpu_v_note

PAGE = "views/live.py"


def test_cpu_note_and_v_reading_on_a_cpu_race(app_test) -> None:
    at = app_test(PAGE, timeout=180, maxnew="40", gamma="3", seed="7", repeats="1")
    at.button(key="run_btn").click().run()
    assert not at.exception, at.exception
    text = " ".join(x.value for x in [*at.info, *at.caption, *at.markdown])
    assert "no memory-bound regime" not in text  # false in general: a multi-GB model on a CPU is memory-bound
    assert "does have a memory-bound regime" in text and "cache" in text
    rec = at.session_state["live_rec"]
    v = float(next(mm.value for mm in at.metric if mm.label == "v measured"))
    shown = re.search(r"(?:Why v|^v|\. v|\bv) = (\d+\.\d\d)(?: here| says)", text)
    assert shown and abs(float(shown.group(1)) - v) <= 0.006 and rec.device_name.startswith("cpu")


def test_v_note_states_the_measured_value() -> None:
    assert cpu_v_note(1.537).startswith("Why v = 1.54 here")
    assert "slowed by other load" in cpu_v_note(0.51)  # a v below 1 is read as noise, not explained as physics


def _measured(alpha_hits: int, draft_s: float, verify_s: float):
    """A synthetic race at gamma 4: 30 rounds, the first alpha_hits drafts of each round accepted."""
    from specdec_core.measure import summarise

    n = 30
    return summarise(4, [4] * n, [alpha_hits] * n, [alpha_hits + 1] * n, [draft_s] * n, [verify_s] * n,
                     [n * (draft_s + verify_s)], [0.01] * 100, [0.01] * 100)


def test_the_note_under_a_race_is_the_pairs_own_and_says_why_it_does_not_pay() -> None:
    from specdec_core.pays import pay_reading
    from ui.live.panel import cost_note

    slow = _measured(0, 0.004, 0.013)                                      # nothing accepted: c 0.1, v 1.3
    note = cost_note("smollm2-draft", slow, "cpu (2 threads)")
    assert "built-in target's weights" not in note and "16 MB" not in note   # not the toy pair's canned text
    assert "smollm2-draft does not pay here" in note
    r = pay_reading(slow.alphas, slow.c, slow.v)
    assert f"{r.speedup:.2f}x" in note and f"alpha = {r.break_even_alpha:.2f}" in note
    fast = _measured(4, 0.0001, 0.015)
    assert "smollm2-lookup pays here" in cost_note("smollm2-lookup", fast, "cpu (2 threads)")
    assert cost_note("builtin", fast, "cpu (2 threads)").startswith("Why v = 1.50 here")   # the built-in pair's note
