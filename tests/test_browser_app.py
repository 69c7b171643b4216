"""Real-browser test: the home page shows its headline numbers and every page renders without error."""

import pytest
from browser_helpers import assert_no_error, nudge_slider, open_page, screenshot, wait_for_app

pytestmark = pytest.mark.browser

FORMULA_PAGES = {"Algebra", "Roofline", "Proof", "Trees and multi-draft"}
NAV_PAGES = ["Home", "Algebra", "Roofline", "Proof", "Trees and multi-draft", "Live decoding", "Interview prep"]


def test_home_headline_and_every_page(page, streamlit_url):
    open_page(page, streamlit_url)
    metrics = page.locator('[data-testid="stMetricValue"]').all_inner_texts()
    assert metrics[:4] == ["2.53", "1.95x", "0.77x", "3.08x"], metrics
    assert_no_error(page)
    screenshot(page, "home")

    nav = page.locator('[data-testid="stSidebarNav"]')
    for title in NAV_PAGES[1:]:
        nav.get_by_text(title, exact=True).click()
        page.wait_for_timeout(300)
        wait_for_app(page)
        assert page.locator("h1").first.is_visible(), f"{title}: no title rendered"
        if title in FORMULA_PAGES:                        # the KaTeX check below has formulas to look at
            assert page.locator(".katex").count() > 0, f"{title}: no formula rendered"
        assert_no_error(page)                             # also: no .katex-error (an unparsable formula, in red)
        screenshot(page, title.lower().replace(" ", "-"))


def test_the_app_asks_nothing_of_the_internet(page, streamlit_url):
    """A classroom may be offline: opening pages and moving a slider requests only the app's own server (a
    material-icon favicon made the browser fetch fonts.gstatic.com on every run)."""
    urls: list[str] = []
    page.on("request", lambda r: urls.append(r.url))
    open_page(page, streamlit_url, "algebra")
    nudge_slider(page, "algebra-alpha__slider")
    open_page(page, streamlit_url, "proof")
    assert urls, "no requests seen"
    outside = [u for u in urls if not (u.startswith(streamlit_url) or u.startswith(("data:", "blob:")))]
    assert outside == [], outside
