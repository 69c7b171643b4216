"""Real browser: the guided tour from Home to its last step by its Next links, then one step back, each step's
bar saying 'step N of M' on the step's own page."""

from __future__ import annotations

import pytest
from browser_helpers import assert_no_error, open_page, screenshot, wait_for_app

from content import interview_content

pytestmark = pytest.mark.browser
M = len(interview_content.WALKTHROUGH)


def _control(page, text: str):
    """The bar's Back or Next: a page link to another page, a button on the open one."""
    return page.locator(".st-key-tour_bar a, .st-key-tour_bar button", has_text=text).first


def _bar_says(page, n: int) -> None:
    page.get_by_text(f"Guided tour: step {n} of {M}", exact=False).first.wait_for(timeout=60_000)
    assert_no_error(page)


def test_tour_walks_from_home_to_the_end_and_back(page, streamlit_url):
    open_page(page, streamlit_url, "", "")
    assert_no_error(page)
    page.locator('[data-testid="stMain"] a', has_text="Take the 15-minute guided tour").first.click()
    wait_for_app(page)
    _bar_says(page, 1)
    for n in range(2, M + 1):
        _control(page, "Next:").click()
        wait_for_app(page)
        _bar_says(page, n)
        page.wait_for_url(lambda u, n=n: f"tour={n}" in u, timeout=15_000)
        path = "/" + interview_content.WALKTHROUGH[n - 1].link.page.removeprefix("views/").removesuffix(".py")
        assert path.replace("/home", "/") in page.url, (n, page.url)
    page.get_by_text("Done: you have been through the whole app.").first.wait_for(timeout=30_000)
    screenshot(page, "tour-last-step")
    _control(page, "Back").click()
    wait_for_app(page)
    _bar_says(page, M - 1)
