"""Helpers for the real-browser tests (Playwright + headless Chromium against `streamlit run`)."""

from __future__ import annotations

from pathlib import Path

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


_SETTLED_JS = """() => {
  const a = document.querySelector('[data-testid="stApp"]');
  if (!a || a.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (document.querySelector('[data-stale="true"]')) return false;
  return document.querySelector('[data-testid="stMain"] [data-testid="stElementContainer"]') !== null;
}"""


def wait_for_app(pg, timeout_ms: int = 60_000, quiet_ms: int = 600) -> None:
    """Wait until the page is connected and the script run is over: not running, no stale elements, some
    content drawn, and still so after `quiet_ms` (a rerun queued by a widget or URL fix-up starts within it)."""
    pg.wait_for_selector('[data-testid="stApp"][data-test-connection-state="CONNECTED"]', timeout=timeout_ms)
    for _ in range(20):
        pg.wait_for_function(_SETTLED_JS, timeout=timeout_ms)
        pg.wait_for_timeout(quiet_ms)
        if pg.evaluate(_SETTLED_JS):
            return
    raise AssertionError("the app kept rerunning: it never stayed settled for "
                         f"{quiet_ms} ms in 20 tries")


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
    """No Streamlit exception, error element or KaTeX error (a formula or command KaTeX cannot render, red) is shown."""
    assert pg.locator('[data-testid="stException"]').count() == 0, "an exception is shown"
    assert pg.locator('[data-testid="stAlertContentError"]').count() == 0, "an error message is shown"
    # KaTeX (throwOnError off) shows a formula it cannot parse as .katex-error, and an unknown command such as
    # \\qquadr as its own name in the error colour #cc0000 inside the formula
    bad = pg.locator('.katex-error, .katex-html [style*="color: rgb(204, 0, 0)"]')
    assert bad.count() == 0, f"a formula KaTeX cannot render: {bad.first.text_content()}"


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
