"""Real browser: the live page runs SmolLM2 with the feature-level (EAGLE-style) draft at temperature 1.

The prompt is a plain question: the runner sends a chat model its prompt as one user turn in the chat
template, so the model answers it; the run is short (SmolLM2 decodes some 10-20 tokens/s here).
"""

from __future__ import annotations

from urllib.parse import quote

import pytest
from browser_helpers import assert_no_error, open_page, screenshot, wait_for_app

pytestmark = pytest.mark.browser

CHAT = "How do bees make honey?"


def test_live_page_runs_the_feature_level_draft_and_its_drafts_are_accepted(page, streamlit_url):
    open_page(page, streamlit_url, "live")  # the server is up; SmolLM2's first load can take minutes here
    page.goto(f"{streamlit_url}/live?pair=smollm2-eagle&gamma=3&maxnew=40&seed=3&repeats=1&prompt={quote(CHAT)}")
    wait_for_app(page, timeout_ms=300_000)
    assert_no_error(page)
    assert page.get_by_text("Feature reuse", exact=False).count() + page.get_by_text(
        "EAGLE-style", exact=False).count() > 0  # the pair's description is on the page
    page.locator(".st-key-run_btn button").first.click()
    page.wait_for_timeout(500)
    wait_for_app(page, timeout_ms=300_000)
    page.get_by_text("Predicted", exact=False).first.wait_for(timeout=300_000)
    assert_no_error(page)
    assert page.locator(".live-tokens .tok-accepted").count() > 0, "no accepted draft tokens on screen"
    assert page.locator(".live-tokens .tok-correction, .live-tokens .tok-bonus").count() > 0
    labels = " ".join(page.locator('[data-testid="stMetric"]').all_inner_texts())
    for label in ("c measured", "v measured", "measured speedup"):
        assert label in labels
    screenshot(page, "live-eagle")
