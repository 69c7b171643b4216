"""Real-browser test of the interview page: answer a drill in Chromium and see it graded; classroom
mode hides the sidebar and enlarges the type."""

import pytest
from browser_helpers import assert_no_error, open_page, screenshot, type_number, wait_for_app

from content import drill_text
from specdec_core import drills
from specdec_core.drill_kinds import DRILL_KINDS, SENIOR_KINDS

pytestmark = pytest.mark.browser


def _answer(page, kind: str, text: str) -> None:
    """Type into the drill's answer box, then press its Check button; waits for the rerun."""
    type_number(page, f"ans_{kind}", text)          # a text box, but the same fill + Enter + wait
    page.locator(f".st-key-chk_{kind} button").click()
    page.wait_for_timeout(300)
    wait_for_app(page)


def _alerts(page, kind: str) -> list[str]:
    """The text of each alert of this kind, without its icon's ligature name."""
    return [t.strip().splitlines()[-1] for t in page.locator(f'[data-testid="stAlertContent{kind}"]').all_inner_texts()]


def test_answer_a_drill_right_then_wrong(page, streamlit_url):
    open_page(page, streamlit_url, "interview", "part=Drills&seed=classroom")
    drill = drills.make_drill("speedup", "classroom")
    assert page.get_by_text(drill_text.prompt(drill)).count() == 1
    assert_no_error(page)

    _answer(page, "speedup", f"{drill.answer():.2f}x")
    success = _alerts(page, "Success")
    assert success == [f"Right: {drill.answer():.4g}."], success
    assert page.locator('[data-testid="stMetricValue"]').first.inner_text() == f"1 / {len(DRILL_KINDS)}"
    assert page.get_by_text("Worked solution").count() == 1
    assert page.locator('[data-testid="stException"]').count() == 0
    screenshot(page, "interview-drill-right")

    _answer(page, "speedup", "9")
    errors = _alerts(page, "Error")
    assert errors == [f"Not quite: the answer is {drill.answer():.4g}."], errors
    # the solution was shown after the first answer, so the score keeps that first answer
    assert page.locator('[data-testid="stMetricValue"]').first.inner_text() == f"1 / {len(DRILL_KINDS)}"
    assert page.locator('[data-testid="stException"]').count() == 0


def test_a_crossover_drill_takes_the_rounded_batch(page, streamlit_url):
    """Seed 2: H100 PCIe, W8A16, gamma 7, crossover 23.62. A batch is whole requests: "24" is right."""
    open_page(page, streamlit_url, "interview", "part=Drills&seed=2")
    drill = drills.make_drill("crossover", "2")
    assert 23 < drill.answer() < 24
    assert page.get_by_text(drill_text.prompt(drill)).count() == 1
    _answer(page, "crossover", str(round(drill.answer())))
    success = _alerts(page, "Success")
    assert len(success) == 1 and "whole number of requests" in success[0] and "23 or 24" in success[0], success
    assert page.locator('[data-testid="stMetricValue"]').first.inner_text() == f"1 / {len(DRILL_KINDS)}"
    assert_no_error(page)
    screenshot(page, "interview-crossover-integer")


def test_classroom_mode_hides_sidebar_and_enlarges_type(page, streamlit_url):
    open_page(page, streamlit_url, "interview", "part=Drills")
    normal = page.locator(".st-key-ans_tokens label p").evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
    assert page.locator('[data-testid="stSidebar"]').is_visible()

    open_page(page, streamlit_url, "interview", "part=Drills&classroom=1")
    assert not page.locator('[data-testid="stSidebar"]').is_visible()
    big = page.locator(".st-key-ans_tokens label p").evaluate("e => parseFloat(getComputedStyle(e).fontSize)")
    assert big >= 1.4 * normal, (normal, big)
    assert page.get_by_text(drill_text.prompt(drills.make_drill("tokens", drills.CLASSROOM_SEED))).count() == 1
    assert page.locator(".st-key-lock_tokens button").is_visible()      # predict before the reveal
    assert_no_error(page)
    screenshot(page, "interview-classroom")


def test_thirty_second_countdown_ticks(page, streamlit_url):
    """The practice timer is a fragment that reruns every second: its text counts down on its own."""
    open_page(page, streamlit_url, "interview", "part=30-second")
    page.locator(".st-key-practice_start button").click()
    page.get_by_text("s left").first.wait_for()
    first = int(page.get_by_text("s left").first.inner_text().split()[0])
    page.wait_for_timeout(2500)
    later = int(page.get_by_text("s left").first.inner_text().split()[0])
    assert 30 >= first > later >= first - 4, (first, later)
    assert page.locator('[data-testid="stException"]').count() == 0


def test_the_senior_set_renders_its_prompts_verbatim_and_grades_a_mask(page, streamlit_url):
    """?level=Senior: the four senior prompts render as written (the '~' of 'y ~ p' is not strikethrough), and the
    tree-mask drill answered with a causal mask's count is named as that mistake."""
    open_page(page, streamlit_url, "interview", "part=Drills&seed=classroom&level=Senior")
    for kind in SENIOR_KINDS:
        assert page.get_by_text(drill_text.prompt(drills.make_drill(kind, "classroom"))).count() == 1, kind
    assert page.locator("del, s").count() == 0
    assert page.locator('[data-testid="stMetricValue"]').first.inner_text() == f"0 / {len(SENIOR_KINDS)}"
    drill = drills.make_drill("tree_mask", "classroom")                      # branching 3, 1, 1: 18 of 81; causal 45
    _answer(page, "tree_mask", "45")
    errors = _alerts(page, "Error")
    assert len(errors) == 1 and "a causal mask" in errors[0] and drills.RETRY_TEXT in errors[0], errors
    _answer(page, "tree_mask", str(drill.answer()))
    assert _alerts(page, "Success") == ["Right."]
    assert page.locator('[data-testid="stMetricValue"]').first.inner_text() == f"1 / {len(SENIOR_KINDS)}"
    assert_no_error(page)
    screenshot(page, "interview-senior-tree-mask")
