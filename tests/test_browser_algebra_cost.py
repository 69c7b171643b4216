"""Real-browser test of the algebra page's decoder-shape cost mode: typing a batch moves v(gamma) and the best gamma."""

import pytest
from browser_helpers import ARTIFACTS, assert_no_error, open_page, screenshot, type_number

from specdec_core import algebra, roofline, steptime

pytestmark = pytest.mark.browser

_METRICS_JS = """() => Object.fromEntries([...document.querySelectorAll('[data-testid="stMetric"]')].map(m => [
  m.querySelector('[data-testid="stMetricLabel"]').innerText.trim(),
  m.querySelector('[data-testid="stMetricValue"]').innerText.trim()]))"""


def _costs(batch: int) -> steptime.GammaCosts:
    return steptime.gamma_costs(
        steptime.SHAPES["Llama-3.1-8B"],
        steptime.SHAPES["Llama-3.2-1B (draft)"],
        roofline.HARDWARE["H100 SXM"],
        "bf16",
        256,
        batch,
        32,
    )


def _metrics_once(page, label: str, timeout_ms: int = 60_000) -> dict[str, str]:
    """All metrics by label, once a metric with `label` is drawn (the rerun may still be painting)."""
    page.get_by_text(label, exact=True).first.wait_for(timeout=timeout_ms)
    return page.evaluate(_METRICS_JS)


def test_batch_moves_v_and_the_best_gamma(page, streamlit_url):
    open_page(page, streamlit_url, "algebra", "cost=shape&ctx=256&alpha=0.8")
    small, large = _costs(16), _costs(512)
    before = _metrics_once(page, "v(gamma = 3) at B = 16")
    assert before["v(gamma = 3) at B = 16"] == f"{small.v[3]:.3f}", before
    assert before["Best integer gamma"] == str(algebra.best_gamma(0.8, small.c, small.v, 32)[0]) == "4", before
    assert_no_error(page)
    screenshot(page, "issue14-algebra-shape-b16")

    type_number(page, "algebra-batch", "512")
    after = _metrics_once(page, "v(gamma = 3) at B = 512")
    assert after["v(gamma = 3) at B = 512"] == f"{large.v[3]:.3f}" != before["v(gamma = 3) at B = 16"], after
    assert after["Best integer gamma"] == "0", after  # do not speculate at this batch
    assert "batch=512" in page.url, page.url
    page.get_by_text("do not speculate", exact=False).first.wait_for()
    assert_no_error(page)
    screenshot(page, "issue14-algebra-shape-b512")
    ARTIFACTS.mkdir(exist_ok=True)
    page.get_by_text("Priced by the decoder shape", exact=False).first.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    page.screenshot(path=str(ARTIFACTS / "issue14-algebra-why-b512.png"))  # the words and the table
    why = page.locator('[data-testid="stPlotlyChart"]').first  # "Why this gamma"
    why.scroll_into_view_if_needed()
    page.wait_for_timeout(300)
    why.screenshot(path=str(ARTIFACTS / "issue14-algebra-why-gamma.png"))
