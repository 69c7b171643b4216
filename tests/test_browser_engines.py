"""Real browser: the Engines page runs a short workload on the embedded llama.cpp and shows its table and flags."""

from __future__ import annotations

import pytest
from browser_helpers import assert_no_error, open_page, screenshot, wait_for_app

pytest.importorskip("xllamacpp")
pytestmark = pytest.mark.browser


def test_engines_page_runs_a_workload(page, streamlit_url):
    open_page(page, streamlit_url, "engines", "kind=same+model+as+draft&gamma=3&prompts=1&tokens=16&repeats=1")
    assert_no_error(page)
    page.get_by_role("button", name="Run the workload").first.click()
    # wait on the result itself, not on a clock: the command block is drawn last in the result section, and a
    # slow start of llama.cpp can outlast any fixed pause before the run is seen as running
    done = page.locator('[data-testid="stCode"]').filter(has_text="--spec-draft-n-max")
    done.or_(page.locator('[data-testid="stAlertContentError"]')).first.wait_for(timeout=240_000)
    wait_for_app(page, timeout_ms=180_000)
    assert_no_error(page)
    assert page.locator('[data-testid="stDataFrame"]').count() >= 1
    text = " ".join(page.locator('[data-testid="stCode"] code').all_text_contents())   # textContent: no wrapping
    assert "--spec-draft-n-max 3" in text and '"method": "draft_model"' in text
    assert "--speculative-algorithm STANDALONE" in text
    assert page.get_by_role("link", name="These alpha_j on the Algebra page").count() == 1
    screenshot(page, "engines_workload")
