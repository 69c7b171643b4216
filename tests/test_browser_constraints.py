"""Real browser: the live page runs a JSON-schema request on SmolLM2 and shows valid JSON.

SmolLM2 decodes about 10-20 tokens/s on this CPU: the request is short (greedy, at most 32 tokens).
"""

from __future__ import annotations

import json

import pytest
from browser_helpers import assert_no_error, open_page, screenshot, wait_for_app

pytestmark = pytest.mark.browser


def test_json_schema_request_on_smollm2_shows_valid_json(page, streamlit_url):
    open_page(page, streamlit_url, "live")  # the server is up; SmolLM2's first load can take minutes here
    page.goto(f"{streamlit_url}/live?pair=smollm2-draft&greedy=true&cmaxnew=32")
    wait_for_app(page, timeout_ms=300_000)
    assert_no_error(page)
    button = page.locator(".st-key-constraint_btn button").first
    button.scroll_into_view_if_needed()
    button.click()
    page.wait_for_timeout(500)
    wait_for_app(page, timeout_ms=240_000)
    page.get_by_text("Valid JSON", exact=False).first.wait_for(timeout=240_000)
    assert_no_error(page)
    assert page.get_by_text("Constraint check: complete", exact=False).count() > 0
    shown = page.locator('[data-testid="stJson"]').first
    shown.scroll_into_view_if_needed()
    text = shown.inner_text()
    for key in ("name", "age", "city"):
        assert key in text
    tokens = page.locator(".live-tokens").last.inner_text()  # the reply as coloured tokens, JSON inside
    reply = tokens[tokens.index("{"): tokens.rindex("}") + 1]
    assert set(json.loads(reply)) == {"name", "age", "city"}
    screenshot(page, "live-constraint-json")
