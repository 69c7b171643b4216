"""Real browser: hop interview -> live -> proof -> algebra -> roofline through the sidebar, changing a setting
on each, then hop round again: no exception anywhere, and every page kept its own settings.

Before the settings were page-owned, the drills' text seed crashed the live page ('<' between str and float)
and live's gamma moved the algebra page's gamma.
"""

from __future__ import annotations

import pytest
from browser_helpers import assert_no_error, type_number, wait_for_app

pytestmark = pytest.mark.browser

# page -> (widget key class, value typed there); every page also has a setting named gamma or seed or mode
CHANGES = {
    "live": ("live-gamma", "7"),
    "proof": ("proof-vocab", "12"),
    "algebra": ("algebra-gamma", "6"),
    "roofline": ("roofline-batch", "64"),
}


def _hop(page, path: str) -> None:
    """Follow the sidebar's link to a page, as a visitor does (the app stays in one session)."""
    page.locator(f'[data-testid="stSidebarNav"] a[href$="/{path}"]').first.click()
    page.wait_for_url(f"**/{path}*")
    page.wait_for_timeout(400)
    wait_for_app(page)
    assert_no_error(page)


def _value(page, key_class: str) -> str:
    return page.locator(f".st-key-{key_class} input").first.input_value()


def test_hopping_keeps_each_pages_settings(page, streamlit_url):
    page.goto(f"{streamlit_url}/interview")
    wait_for_app(page)
    page.locator(".st-key-interview-part label").filter(has_text="Drills").first.click()
    wait_for_app(page)
    page.locator(".st-key-new_set button").first.click()       # a personal text seed: the old crash path
    page.wait_for_timeout(400)
    wait_for_app(page)
    seed = _value(page, "interview-seed")
    assert seed.isdigit(), seed
    for path, (key, typed) in CHANGES.items():
        _hop(page, path)
        type_number(page, key, typed)
        assert_no_error(page)
        assert _value(page, key) == typed
    for _ in range(2):                                          # round again, twice: nothing drifts
        _hop(page, "interview")
        assert _value(page, "interview-seed") == seed
        assert f"seed={seed}" in page.url                       # the URL is shareable again
        for path, (key, typed) in CHANGES.items():
            _hop(page, path)
            assert _value(page, key) == typed, f"{path} lost its setting {key}"
            name = key.split("-", 1)[1]
            assert f"{name}={typed}" in page.url, page.url
    # The shared names stayed apart: live's gamma 7 is not the algebra page's 6, nor roofline's default 3.
    assert _value(page, "roofline-gamma") == "3"
