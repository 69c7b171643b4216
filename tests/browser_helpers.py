"""Helpers for the real-browser tests (Playwright + headless Chromium against `streamlit run`)."""

from __future__ import annotations

from pathlib import Path

from harness.serving import SETTLED_JS, watch_runs

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"


RUN_TIMEOUT_MS = 120_000          # how long a run may take on a loaded machine before a test says so


def run_log(pg) -> list[tuple[float, str]]:
    """This page's log of ended runs (harness.serving.watch_runs), attached on first use (the page fixture does it
    before the app opens; attached later it sees only websockets opened after)."""
    if not hasattr(pg, "specdec_runs"):
        pg.specdec_runs = watch_runs(pg)
    return pg.specdec_runs


def wait_for_run(pg, seen: int, what: str, timeout_ms: int = RUN_TIMEOUT_MS) -> None:
    """Wait until a run (a full run or an st.fragment rerun) has ended since the log held `seen` entries."""
    runs = run_log(pg)
    waited = 0
    while len(runs) <= seen:
        if waited >= timeout_ms:
            raise AssertionError(f"no run of the app ended within {timeout_ms / 1000:.0f} s of {what}")
        pg.wait_for_timeout(50)                       # lets Playwright deliver the websocket frames
        waited += 50


def after_run(pg, action, what: str, timeout_ms: int = RUN_TIMEOUT_MS) -> None:
    """Do `action()`, wait for the run it starts to end (on the server's script_finished, so a fragment rerun
    counts and a slow machine makes it slow, not early), then for the app to settle."""
    seen = len(run_log(pg))
    action()
    wait_for_run(pg, seen, what, timeout_ms)
    wait_for_app(pg, timeout_ms)


def wait_for_app(pg, timeout_ms: int = RUN_TIMEOUT_MS, quiet_ms: int = 600) -> None:
    """Wait until the page is connected and the script run is over: not running, no stale elements, some
    content drawn, and still so after `quiet_ms` (a rerun queued by a widget or URL fix-up starts within it)."""
    pg.wait_for_selector('[data-testid="stApp"][data-test-connection-state="CONNECTED"]', timeout=timeout_ms)
    for _ in range(20):
        pg.wait_for_function(SETTLED_JS, timeout=timeout_ms)
        pg.wait_for_timeout(quiet_ms)
        if pg.evaluate(SETTLED_JS):
            return
    raise AssertionError("the app kept rerunning: it never stayed settled for "
                         f"{quiet_ms} ms in 20 tries")


def open_page(pg, base_url: str, path: str = "", query: str = "") -> None:
    """Navigate to base_url/path?query; wait for its first run to end and the app to settle."""
    url = f"{base_url}/{path}" + (f"?{query}" if query else "")
    after_run(pg, lambda: pg.goto(url), f"opening {url}")


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
    thumb.focus(timeout=RUN_TIMEOUT_MS)

    def press() -> None:
        for _ in range(abs(presses)):
            pg.keyboard.press("ArrowRight" if presses > 0 else "ArrowLeft")

    after_run(pg, press, f"a step of the slider {key}")


def type_number(pg, key: str, value: str) -> None:
    """Type `value` into the number box with widget key `key` and press Enter; waits for the rerun."""
    box = pg.locator(f'.st-key-{key} input')
    box.fill(value, timeout=RUN_TIMEOUT_MS)
    after_run(pg, lambda: box.press("Enter"), f"typing {value} into {key}")
