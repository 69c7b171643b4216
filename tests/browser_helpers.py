"""Helpers for the real-browser tests (Playwright + headless Chromium against `streamlit run`)."""

from __future__ import annotations

from pathlib import Path

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


def wait_for_app(pg, timeout_ms: int = 60_000) -> None:
    """Wait until the Streamlit script has finished its run and the page is connected."""
    pg.wait_for_selector('[data-testid="stApp"][data-test-connection-state="CONNECTED"]', timeout=timeout_ms)
    pg.wait_for_function(
        "() => { const a = document.querySelector('[data-testid=\"stApp\"]');"
        " return a && a.getAttribute('data-test-script-state') === 'notRunning'; }",
        timeout=timeout_ms,
    )
    pg.wait_for_timeout(300)  # let the last delta paint


def open_page(pg, base_url: str, path: str = "", query: str = "") -> None:
    """Navigate to base_url/path?query and wait for the app to settle."""
    url = f"{base_url}/{path}" + (f"?{query}" if query else "")
    pg.goto(url)
    wait_for_app(pg)


def screenshot(pg, name: str) -> Path:
    """Save a full-page PNG under artifacts/ and return its path."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    pg.screenshot(path=str(path), full_page=True)
    return path


def assert_no_error(pg) -> None:
    """No Streamlit exception or error element is on the page."""
    assert pg.locator('[data-testid="stException"]').count() == 0, "an exception is shown"
    assert pg.locator('[data-testid="stAlertContentError"]').count() == 0, "an error message is shown"


def nudge_slider(pg, key: str, presses: int = 1) -> None:
    """Move the slider with widget key `key` by `presses` keyboard steps (negative: left); waits for the rerun."""
    thumb = pg.locator(f'.st-key-{key} input[type="range"]')
    thumb.focus()
    for _ in range(abs(presses)):
        pg.keyboard.press("ArrowRight" if presses > 0 else "ArrowLeft")
    pg.wait_for_timeout(400)
    wait_for_app(pg)


def type_number(pg, key: str, value: str) -> None:
    """Type `value` into the number box with widget key `key` and press Enter; waits for the rerun."""
    box = pg.locator(f'.st-key-{key} input')
    box.fill(value)
    box.press("Enter")
    pg.wait_for_timeout(400)
    wait_for_app(pg)
