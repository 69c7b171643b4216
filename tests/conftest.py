"""Shared fixtures: AppTest factory, and one real Streamlit server + headless Chromium per session."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from browser_helpers import run_log
from doubles import streamlit_server

from harness.serving import CHROMIUM_ARGS

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"


# ------------------------------------------------------------------ torch ----
@pytest.fixture(scope="module")
def one_torch_thread() -> Iterator[None]:
    """Tiny tensors: one intra-op thread avoids OpenMP hand-offs (costly on a shared 2-core box).

    Use with ``pytestmark = pytest.mark.usefixtures("one_torch_thread")``; the old count is restored.
    """
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


# ---------------------------------------------------------------- AppTest ----
@pytest.fixture
def app_test():
    """Factory: app_test("views/algebra.py", alpha="0.8") -> an AppTest that has run that page."""
    from streamlit.testing.v1 import AppTest

    def make(page: str | None = None, timeout: float = 60, **query: str) -> AppTest:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=timeout)
        for k, v in query.items():
            at.query_params[k] = v
        at.run()
        if page is not None:
            at.switch_page(page).run()
        return at

    return make


# ---------------------------------------------------------------- browser ----
def _chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="session", autouse=True)
def builtin_assets() -> str:
    """The live page's built-in pair for every page run and for the session's server, set up before either starts:
    'real' when the trained pair ships, else a tiny untrained pair exported through its environment variable."""
    from live_support import ensure_builtin_assets

    return ensure_builtin_assets()


@pytest.fixture(scope="session")
def streamlit_url(builtin_assets: str) -> Iterator[str]:
    """Start `streamlit run app.py` on a free loopback port; yield its URL; stop it afterwards."""
    with streamlit_server("streamlit-server.log") as (url, _proc):
        yield url


@pytest.fixture(scope="session")
def browser():
    """Headless Debian Chromium driven by Playwright; skips with a clear message where it is missing."""
    exe = _chromium_path()
    if exe is None:
        pytest.skip("chromium is not installed: run `make test` as root, or `sudo apt-get install -y chromium`")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(
            executable_path=exe,
            headless=True,
            args=CHROMIUM_ARGS,
        )
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser, streamlit_url):
    """A fresh browser page (1400x1000) per test; closes afterwards."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    run_log(pg)                         # before the app opens: browser_helpers waits on its runs' ends
    pg.set_default_timeout(60_000)
    try:
        yield pg
    finally:
        context.close()
