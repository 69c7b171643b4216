"""Real-browser test: the roofline page renders its readouts, figures and the probe without error."""

import pytest
from browser_helpers import ARTIFACTS, after_run, assert_no_error, open_page, screenshot, type_number, wait_for_app

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
    assert page.locator('[data-testid="stPlotlyChart"]').count() == 6   # five modelled, one measured on an H200
    assert page.get_by_text("roofline model, not a measurement").first.is_visible()
    assert page.get_by_text("Measured: a small model is launch-bound").first.is_visible()
    screenshot(page, "roofline-page")
    for i, name in enumerate(["roofline", "intensity", "speedup", "split", "best-gamma", "h200-small-model"]):
        chart = page.locator('[data-testid="stPlotlyChart"]').nth(i)
        chart.scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        chart.screenshot(path=str(ARTIFACTS / f"roofline-fig-{name}.png"))


def test_roofline_unsupported_precision_and_probe(page, streamlit_url):
    open_page(page, streamlit_url, "roofline", "hw=A100+SXM+80GB&mode=fp8&probe=tiny+(d%3D64)")
    page.get_by_text("not supported by this hardware").first.wait_for()
    assert page.get_by_text("not supported by this hardware").first.is_visible()
    assert_no_error(page)
    after_run(page, page.get_by_role("button", name="Measure it here").click, "pressing Measure it here")
    assert_no_error(page)
    page.get_by_text("Measured on CPU").first.wait_for()
    chart = page.locator('[data-testid="stPlotlyChart"]').last
    chart.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    assert page.get_by_text("Measured on CPU").first.is_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    chart.screenshot(path=str(ARTIFACTS / "roofline-probe-tiny.png"))
    screenshot(page, "roofline-a100-fp8-probe")


_METRICS_JS = """() => Object.fromEntries([...document.querySelectorAll('[data-testid="stMetric"]')].map(m => [
  m.querySelector('[data-testid="stMetricLabel"]').innerText.trim(),
  m.querySelector('[data-testid="stMetricValue"]').innerText.trim()]))"""


def test_roofline_batch_moves_v_and_the_best_gamma(page, streamlit_url):
    """Issue 14: past the verify pass's knee (B = 74) v leaves 1 and the v(gamma)-aware best gamma falls."""
    open_page(page, streamlit_url, "roofline")
    page.get_by_text("Best gamma at B = 16", exact=True).first.wait_for(timeout=60_000)
    before = page.evaluate(_METRICS_JS)
    assert before["v(B)"] == "1.00" and before["Best gamma at B = 16"] == "4", before
    type_number(page, "roofline-batch", "128")
    page.get_by_text("Best gamma at B = 128", exact=True).first.wait_for(timeout=60_000)
    after = page.evaluate(_METRICS_JS)
    assert after["v(B)"] == "1.23" and after["Speedup at B = 128"] == "1.55x", after
    assert after["Best gamma at B = 128"] == "2", after
    assert "batch=128" in page.url
    assert_no_error(page)
    ARTIFACTS.mkdir(exist_ok=True)
    page.get_by_text("Best gamma at B = 128", exact=True).first.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    page.screenshot(path=str(ARTIFACTS / "issue14-roofline-b128.png"))             # the metrics and the words
    for i, name in [(3, "split"), (4, "best-gamma")]:
        chart = page.locator('[data-testid="stPlotlyChart"]').nth(i)
        chart.scroll_into_view_if_needed()
        page.wait_for_timeout(400)
        chart.screenshot(path=str(ARTIFACTS / f"issue14-roofline-{name}-b128.png"))
