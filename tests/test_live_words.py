"""The live page's words about costs hold on this device (issue 14): the CPU note and the measured-v reading."""

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
