"""Real browser: presenter mode (?present=1) enlarges the computed size of body text on every page and of Plotly
tick labels on every chart page, and stays on through the sidebar's navigation and a page link, until the sidebar
switch turns it off."""

from __future__ import annotations

import pytest
from browser_helpers import assert_no_error, open_page, screenshot, wait_for_app

pytestmark = pytest.mark.browser

PATHS = ["", "algebra", "roofline", "proof", "trees", "live", "engines", "interview"]
CHARTS = {"algebra", "roofline", "proof", "trees"}
# the first paragraph of body text: Markdown not inside a metric's or a widget's label or a caption
TEXT_JS = """() => {
  const skip = '[data-testid="stMetricLabel"], [data-testid="stWidgetLabel"], [data-testid="stCaptionContainer"]';
  const p = [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stMarkdownContainer"] p')]
    .find(e => !e.closest(skip) && e.textContent.trim().length > 40);
  return p ? parseFloat(getComputedStyle(p).fontSize) : null;
}"""
TICK = '[data-testid="stMain"] .js-plotly-plot .xtick text'
PX = "e => parseFloat(getComputedStyle(e).fontSize)"
STYLE_JS = "() => [...document.querySelectorAll('style')].some(s => s.textContent.includes('1.35rem'))"


def _text_px(page) -> float:
    """The computed font size of the page's first paragraph of Markdown, px."""
    px = page.evaluate(TEXT_JS)
    assert px is not None, "no paragraph of body text on the page"
    return px


def _tick_px(page) -> float:
    """The computed font size of the first chart's first x tick label, px (the chart scrolled into view)."""
    page.locator('[data-testid="stMain"] .js-plotly-plot').first.scroll_into_view_if_needed()
    tick = page.locator(TICK).first
    tick.wait_for(timeout=30_000)
    return tick.evaluate(PX)


def _styled(page) -> None:
    """Wait until presenter mode's style element is in the page, and the next frame is laid out with it."""
    page.wait_for_function(STYLE_JS, timeout=30_000)
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


METRIC_JS = """() => { const e = document.querySelector('[data-testid="stMain"] [data-testid="stMetricValue"] p')
  || document.querySelector('[data-testid="stMain"] [data-testid="stMetricValue"]');
  return e ? parseFloat(getComputedStyle(e).fontSize) : null; }"""


def _sizes(page, url: str, path: str, query: str) -> tuple[float, float | None, float | None]:
    open_page(page, url, path, query)
    if query:
        _styled(page)
    assert_no_error(page)
    return _text_px(page), (_tick_px(page) if path in CHARTS else None), page.evaluate(METRIC_JS)


@pytest.mark.parametrize("path", PATHS)
def test_presenter_mode_enlarges_text_and_tick_labels(page, streamlit_url, path):
    text_off, tick_off, metric_off = _sizes(page, streamlit_url, path, "")
    text_on, tick_on, metric_on = _sizes(page, streamlit_url, path, "present=1")   # a fresh session: goto reloads
    assert text_on >= 1.25 * text_off, (path, text_off, text_on)
    if metric_off is not None:             # a metric's value grows too (the Markdown rule once shrank it)
        assert metric_on >= 1.2 * metric_off, (path, metric_off, metric_on)
    if path in CHARTS:
        assert tick_on >= 1.25 * tick_off, (path, tick_off, tick_on)
    assert page.locator('[data-testid="stSidebar"][data-collapsed="true"]').count() == 1   # starts collapsed


def test_presenter_mode_survives_navigation_until_switched_off(page, streamlit_url):
    open_page(page, streamlit_url, "algebra", "present=1")
    _styled(page)
    big = _text_px(page)
    # st.navigation's own links, in the (collapsed) sidebar
    page.locator('[data-testid="stExpandSidebarButton"]').first.click()
    page.locator('[data-testid="stSidebarNavLink"]', has_text="Roofline").first.click()
    page.wait_for_url(lambda u: "/roofline" in u and "present=1" in u, timeout=30_000)
    wait_for_app(page)
    _styled(page)
    assert _text_px(page) == big and _tick_px(page) > 12
    # a page link in the main area: Home's folded list of pages
    page.locator('[data-testid="stSidebarNavLink"]', has_text="Home").first.click()
    page.wait_for_url(lambda u: "present=1" in u and "/roofline" not in u, timeout=30_000)
    wait_for_app(page)
    page.locator('[data-testid="stExpander"] summary', has_text="Explore").first.click()
    page.locator('[data-testid="stMain"] a', has_text="Proof: the emitted law").first.click()
    page.wait_for_url(lambda u: "/proof" in u and "present=1" in u, timeout=30_000)
    wait_for_app(page)
    _styled(page)
    assert _text_px(page) == big
    assert_no_error(page)
    screenshot(page, "presenter-proof")
    # the switch turns it off, and the address says so
    page.locator('[data-testid="stSidebar"] label', has_text="Presenter mode").first.click()
    page.wait_for_url(lambda u: "present=" not in u, timeout=30_000)
    wait_for_app(page)
    assert _text_px(page) < big


INPUTS_JS = """() => { const px = e => parseFloat(getComputedStyle(e).fontSize);
  const all = sel => [...document.querySelectorAll('[data-testid="stMain"] ' + sel)];
  const df = all('[data-testid="stDataFrame"]').filter(d => d.offsetWidth);
  const num = all('[data-testid="stNumberInput"] input');
  return {area: all('[data-testid="stTextArea"] textarea').map(px),
          select: all('[data-testid="stSelectbox"] input').map(px), number: num.map(px),
          cut: num.filter(x => x.scrollWidth > x.clientWidth + 1).map(x => x.value),
          zoom: df.map(d => parseFloat(getComputedStyle(d).zoom)),
          overflow: df.filter(d => d.getBoundingClientRect().right > d.parentElement.getBoundingClientRect().right + 1)
                      .length}; }"""


@pytest.mark.parametrize("path", ["algebra", "live"])
def test_presenter_mode_enlarges_inputs_and_tables_without_cutting_them(page, streamlit_url, path):
    page.set_viewport_size({"width": 1280, "height": 900})
    open_page(page, streamlit_url, path, "")
    drawn = ['[data-testid="stMain"] [data-testid="stSelectbox"] input',
             '[data-testid="stMain"] [data-testid="stNumberInput"] input']

    def inputs() -> dict:
        """The page's input sizes once its run has ended and its selects and number boxes are drawn."""
        wait_for_app(page)
        for sel in drawn:
            page.locator(sel).first.wait_for(state="attached", timeout=30_000)
        return page.evaluate(INPUTS_JS)

    before = inputs()
    open_page(page, streamlit_url, path, "present=1")
    _styled(page)
    after = inputs()
    assert after["select"] and before["select"] and min(after["select"]) >= 18 > max(before["select"])   # 14 px
    assert after["number"] and min(after["number"]) > max(before["number"])
    assert not after["cut"], after["cut"]                                                    # 0.7000 still shows whole
    if path == "live":
        assert min(after["area"]) >= 18 > max(before["area"])
    if path == "algebra":                                       # its dataframes are on the page, not in an expander
        assert after["zoom"] and min(after["zoom"]) >= 1.25 and not after["overflow"]
