"""Real browser: the live page runs a short generation, shows coloured tokens and the measured panel."""

from __future__ import annotations

import pytest
from browser_helpers import assert_no_error, open_page, screenshot, wait_for_app

pytestmark = pytest.mark.browser

from ui.theme import KIND_STYLE  # noqa: E402


def rgb(hex_colour: str) -> str:
    """'#009E73' -> 'rgb(0, 158, 115)' as computed styles report it."""
    h = hex_colour.lstrip("#")
    return "rgb({}, {}, {})".format(*(int(h[i:i + 2], 16) for i in (0, 2, 4)))


def test_live_run_shows_coloured_tokens_and_measured_panel(page, streamlit_url):
    open_page(page, streamlit_url, "live", "maxnew=60&gamma=3&seed=1")
    assert_no_error(page)
    page.locator(".st-key-run_btn button").first.click()
    page.wait_for_timeout(500)
    wait_for_app(page, timeout_ms=120_000)
    page.get_by_text("Predicted", exact=False).first.wait_for(timeout=60_000)
    assert_no_error(page)
    tokens = page.locator(".live-tokens .tok-accepted")
    assert tokens.count() > 0, "no accepted draft tokens on screen"
    style = tokens.first.evaluate("e => [getComputedStyle(e).color, getComputedStyle(e).textDecorationLine]")
    assert style[0] == rgb(KIND_STYLE["accepted"]["colour"]) and "underline" in style[1]
    assert "p top-5:" in (tokens.first.get_attribute("title") or "")  # hover shows the p and q top-5
    assert "q top-5:" in (tokens.first.get_attribute("title") or "")
    ends = page.locator(".live-tokens .tok-correction, .live-tokens .tok-bonus")
    assert ends.count() > 0, "no target correction or bonus tokens on screen"
    metrics = page.locator('[data-testid="stMetric"]')
    assert metrics.count() >= 8
    labels = " ".join(metrics.all_inner_texts())
    for label in ("alpha (constant fit)", "c measured", "v measured", "predicted speedup", "measured speedup"):
        assert label in labels
    assert page.locator(".js-plotly-plot").count() >= 2, "the alpha_j and accepted-length charts are missing"
    assert page.locator(".live-legend").count() == 1
    assert page.locator('[data-testid="stDownloadButton"]').count() == 2  # JSON run and CSV metrics
    screenshot(page, "live-run")
    page.locator(".js-plotly-plot").first.scroll_into_view_if_needed()
    screenshot(page, "live-panel")
    page.get_by_text("Race against the autoregressive baseline").first.scroll_into_view_if_needed()
    screenshot(page, "live-race")


def test_stop_and_a_changed_setting_end_a_run_cleanly(page, streamlit_url):
    # SmolLM2-135M decodes about 10-20 tokens/s here, so a 200-token race lasts long enough to be
    # stopped; the built-in pair finishes 400 tokens in well under a second.
    open_page(page, streamlit_url, "live", "pair=smollm2-lookup&maxnew=200&gamma=2&seed=2")
    page.locator(".st-key-run_btn button").first.click()
    page.locator(".live-tokens").first.wait_for(timeout=60_000)  # streaming has started
    page.locator(".st-key-stop_btn button").first.click()
    try:
        page.get_by_text("Stopped by you").first.wait_for(timeout=60_000)
    except Exception:
        screenshot(page, "live-stop-failed")
        raise
    wait_for_app(page)
    assert_no_error(page)
    # A new run, interrupted by changing a setting: it stops cleanly and says why.
    page.locator(".st-key-run_btn button").first.click()
    page.locator(".live-tokens").first.wait_for(timeout=60_000)
    page.wait_for_timeout(300)
    box = page.locator(".st-key-live-gamma input").first
    box.fill("3")
    box.press("Enter")
    page.get_by_text("Stopped because a setting changed").first.wait_for(timeout=60_000)
    wait_for_app(page)
    assert_no_error(page)
    screenshot(page, "live-stopped")
    # The shared model is free again: a short run completes.
    page.locator(".st-key-live-maxnew input").first.fill("20")
    page.locator(".st-key-live-maxnew input").first.press("Enter")
    wait_for_app(page)
    page.locator(".st-key-run_btn button").first.click()
    page.get_by_text("Predicted", exact=False).first.wait_for(timeout=120_000)
    assert_no_error(page)


def test_step_mode_moves_one_round_per_click(page, streamlit_url):
    open_page(page, streamlit_url, "live", "maxnew=40&gamma=4&seed=3&step=true")
    page.locator(".st-key-run_btn button").first.click()
    page.get_by_text("Step through the rounds").first.wait_for(timeout=120_000)
    wait_for_app(page)
    assert page.get_by_text("Round 1 of").count() == 1
    page.locator(".st-key-next_btn button").first.click()
    page.get_by_text("Round 2 of").first.wait_for(timeout=60_000)
    wait_for_app(page)
    assert "round=2" in page.url  # the shown round is in the URL
    assert_no_error(page)
    page.get_by_text("Step through the rounds").first.scroll_into_view_if_needed()
    screenshot(page, "live-step")


def test_quick_demo_shows_a_speedup_in_seconds(page, streamlit_url):
    """One click beside the prompt; the time to a measured speedup is printed (reported, not asserted)."""
    import time

    open_page(page, streamlit_url, "live")
    assert_no_error(page)
    button = page.locator(".st-key-quick_btn button").first
    prompt_box = page.locator("textarea").first
    # Run sits next to the prompt: the button's top is within 250 px below the prompt box's bottom.
    assert button.bounding_box()["y"] - (prompt_box.bounding_box()["y"] + prompt_box.bounding_box()["height"]) < 250
    t0 = time.perf_counter()
    button.click()
    page.wait_for_timeout(300)
    wait_for_app(page, timeout_ms=120_000)
    page.get_by_text("Predicted", exact=False).first.wait_for(timeout=60_000)
    measured = page.locator('[data-testid="stMetric"]', has_text="measured speedup").first.inner_text()
    print(f"quick demo in the browser: {time.perf_counter() - t0:.1f} s to '{measured.splitlines()[-1]}'")
    assert_no_error(page)
    assert measured.strip().endswith("x") and "—" not in measured
    screenshot(page, "live-quick-demo")
