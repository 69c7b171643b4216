"""Real-browser test of the algebra page: a slider moved in Chromium changes the readouts."""

import pytest

from browser_helpers import assert_no_error, open_page, screenshot, wait_for_app
from specdec_core.algebra import speedup

pytestmark = pytest.mark.browser


def _metrics(page) -> list[str]:
    return page.locator('[data-testid="stMetricValue"]').all_inner_texts()


def test_slider_changes_readout(page, streamlit_url):
    open_page(page, streamlit_url, "algebra", "alpha=0.8&gamma=4&c=0.05&v=3.5")
    before = _metrics(page)
    assert before[2] == f"{speedup(0.8, 4, 0.05, 3.5):.2f}x" == "0.91x", before
    assert page.get_by_text("slowdown", exact=False).count() > 0
    assert_no_error(page)
    screenshot(page, "algebra-slowdown")

    # Move the gamma slider one step left with the keyboard: gamma 4 -> 3.
    slider = page.locator('[data-testid="stSlider"]').filter(has_text="draft length gamma").get_by_role("slider")
    slider.focus()
    page.keyboard.press("ArrowLeft")
    page.wait_for_timeout(300)
    wait_for_app(page)
    after = _metrics(page)
    assert after[2] == f"{speedup(0.8, 3, 0.05, 3.5):.2f}x", after
    assert after != before
    assert "gamma=3" in page.url, page.url            # the URL follows the widget
    assert_no_error(page)
    screenshot(page, "algebra")
