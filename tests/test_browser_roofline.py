"""Real-browser test: the roofline page renders its readouts, figures and the probe without error."""

import pytest
from browser_helpers import ARTIFACTS, assert_no_error, open_page, screenshot, wait_for_app

pytestmark = pytest.mark.browser


def test_roofline_page_renders(page, streamlit_url):
    open_page(page, streamlit_url, "roofline")
    page.wait_for_selector('[data-testid="stMetricValue"]')   # a cold server's first run imports torch
    wait_for_app(page)
    assert page.locator("h1").first.is_visible()
    assert_no_error(page)
    metrics = page.locator('[data-testid="stMetricValue"]').all_inner_texts()
    assert metrics[:4] == ["295", "16", "64", "74"], metrics
    page.wait_for_selector('[data-testid="stPlotlyChart"] .main-svg')
    assert page.locator('[data-testid="stPlotlyChart"]').count() == 4
    assert page.get_by_text("roofline model, not a measurement").first.is_visible()
    screenshot(page, "roofline-page")
    for i, name in enumerate(["roofline", "intensity", "speedup", "split"]):
        chart = page.locator('[data-testid="stPlotlyChart"]').nth(i)
        chart.scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        chart.screenshot(path=str(ARTIFACTS / f"roofline-fig-{name}.png"))


def test_roofline_unsupported_precision_and_probe(page, streamlit_url):
    open_page(page, streamlit_url, "roofline", "hw=A100+SXM+80GB&mode=fp8&probe=tiny+(d%3D64)")
    page.get_by_text("not supported by this hardware").first.wait_for()
    assert page.get_by_text("not supported by this hardware").first.is_visible()
    assert_no_error(page)
    page.get_by_role("button", name="Measure it here").click()
    page.wait_for_timeout(500)
    wait_for_app(page, timeout_ms=90_000)
    assert_no_error(page)
    page.get_by_text("Measured on CPU").first.wait_for()
    chart = page.locator('[data-testid="stPlotlyChart"]').last
    chart.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    assert page.get_by_text("Measured on CPU").first.is_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    chart.screenshot(path=str(ARTIFACTS / "roofline-probe-tiny.png"))
    screenshot(page, "roofline-a100-fp8-probe")
