"""Real browser: the trees and multi-draft page opens with no error, and shaping the tree (its node budget typed
in the box, then a branching from the URL) changes E[N] to the value the core computes."""

import pytest
from browser_helpers import assert_no_error, open_page, screenshot, type_number, wait_for_app

from specdec_core import proof_cases, trees
from specdec_core.multidraft import WOR

pytestmark = pytest.mark.browser

ALL_CHARTS_DRAWN = ("() => Array.from(document.querySelectorAll('.js-plotly-plot'))"
                    ".filter(e => e.querySelector('.cartesianlayer .trace')).length >= 8")
RATES = trees.rank_rates(*proof_cases.preset_pair("q_sharper", 10), 4, WOR)  # the page's default per-rank acceptance


def _metric(pg, label: str) -> str:
    box = pg.locator('[data-testid="stMetric"]').filter(has_text=label).first
    return box.locator('[data-testid="stMetricValue"]').inner_text()


def test_shaping_the_tree_changes_expected_length(page, streamlit_url):
    page.set_viewport_size({"width": 1400, "height": 5600})  # tall: every chart is in view and drawn
    open_page(page, streamlit_url, "trees", "section=all")  # every section: all 8 charts
    assert_no_error(page)
    assert page.locator("h1").first.inner_text().startswith("Trees and multi-draft")
    page.locator('[data-testid="stMetricValue"]').filter(has_text="10,000").first.wait_for(timeout=90_000)
    page.wait_for_function(ALL_CHARTS_DRAWN, timeout=60_000)
    default = f"{trees.expected_accepted_length(trees.greedy_tree(RATES, 25), RATES):.3f}"
    assert _metric(page, "E[N], tree") == default
    screenshot(page, "issue20-trees-default")

    type_number(page, "trees-budget", "6")  # a smaller budget: a smaller tree
    expected = f"{trees.expected_accepted_length(trees.greedy_tree(RATES, 6), RATES):.3f}"
    page.wait_for_function(
        "(v) => Array.from(document.querySelectorAll('[data-testid=\"stMetric\"]')).some(m => "
        "m.innerText.includes('E[N], tree') && m.innerText.includes(v))",
        arg=expected,
        timeout=30_000,
    )
    assert expected != default and _metric(page, "tokens in the verify pass") == "7"
    assert "budget=6" in page.url  # the shaped tree is in the shareable address
    assert_no_error(page)

    open_page(page, streamlit_url, "trees", "shape=branching&branching=4,2,1&case=q_flatter&batch=256&section=all")
    wait_for_app(page)
    assert_no_error(page)
    rates = trees.rank_rates(*proof_cases.preset_pair("q_flatter", 10), 4, WOR)
    assert _metric(page, "E[N], tree") == f"{trees.branching_expected_length((4, 2, 1), rates):.3f}"
    assert _metric(page, "draft nodes") == "20"
    page.wait_for_function(ALL_CHARTS_DRAWN, timeout=60_000)
    screenshot(page, "issue20-trees-branching-b256")

    open_page(page, streamlit_url, "trees", "src=typed&rates=0.9,0.5")
    assert page.get_by_text("Input refused").count() == 1
    assert_no_error(page)
