"""AppTest: the trees and multi-draft page. Every number checked here is recomputed from specdec_core; bad input
is a message, never a traceback."""

from __future__ import annotations

import numpy as np
import pytest

from specdec_core import proof_cases, roofline, steptime, trees
from specdec_core.multidraft import IID, RULES, WOR, acceptance_by_k
from specdec_core.tree_cost import tree_vs_chain
from specdec_core.typical import typical_distribution

PAGE = "views/trees.py"
FAST = "5000"


def _ok(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def _refused(at) -> str:
    return " ".join(w.value for w in at.warning if "Input refused" in w.value)


def test_defaults_show_the_core_numbers(app_test):
    at = app_test(PAGE, section="all")
    _ok(at)
    p, q = proof_cases.preset_pair("q_sharper", 10)
    assert _metric(at, "acceptance, k = 3 i.i.d.") == f"{acceptance_by_k(p, q, 3, IID)[-1]:.4f}"
    assert _metric(at, "acceptance, k = 3 without replacement") == f"{acceptance_by_k(p, q, 3, WOR)[-1]:.4f}"
    assert float(_metric(at, "max |emitted - p|, exact rules")) < 1e-15
    assert float(_metric(at, "max |emitted - p|, i.i.d., k = 4")) < 1e-15
    assert float(_metric(at, "max |emitted - p|, without replacement, k = 3")) < 1e-15
    assert _metric(at, "TV(typical law, p)") == f"{typical_distribution(p, q, 3).tv_to_p:.4f}"
    rates = trees.rank_rates(p, q, 4, WOR)
    tree = trees.greedy_tree(rates, 25)
    assert _metric(at, "E[N], tree") == f"{trees.expected_accepted_length(tree, rates):.3f}"
    assert _metric(at, "E[N], chain of 16") == f"{trees.expected_accepted_length(trees.chain(16), rates):.3f}"
    r = tree_vs_chain(tree, rates, steptime.SHAPES["Llama-3.1-8B"], steptime.SHAPES["Llama-3.2-1B (draft)"],
                      roofline.HARDWARE["H100 SXM"], "bf16", 256, [1.0])
    assert _metric(at, "speedup, tree") == f"{r.tree.speedup[0]:.2f}x"
    assert _metric(at, f"best chain: gamma {int(r.best_gamma[0])}") == f"{r.best_speedup[0]:.2f}x"
    assert len(at.get("plotly_chart")) == 8
    # the prose states what the model computes at the defaults: the tree loses at some batch, speculation goes off
    grid = tree_vs_chain(tree, rates, steptime.SHAPES["Llama-3.1-8B"], steptime.SHAPES["Llama-3.2-1B (draft)"],
                         roofline.HARDWARE["H100 SXM"], "bf16", 256, np.unique(np.round(np.geomspace(1, 1024, 121))))
    assert grid.tree_loses_from is not None and grid.off_from is not None
    prose = " ".join(m.value for m in at.markdown)
    assert f"catches up with the tree from about B = {grid.tree_loses_from:.0f}" in prose
    assert f"switched off (gamma = 0) from about B = {grid.off_from:.0f}" in prose


def test_sampled_tables_pass_the_exact_rules_and_reject_the_others(app_test):
    at = app_test(PAGE, section="all")
    _ok(at)
    md_table, typical_table = at.dataframe[0].value, at.dataframe[1].value
    verdict = dict(zip(md_table["rule"], md_table["verdict at 0.001"]))
    assert verdict[RULES["iid"]] == verdict[RULES["wor"]] == "consistent with p"
    assert verdict[RULES["no_update"]] == verdict[RULES["wor_ratio_q"]] == "rejects p"
    assert list(typical_table["verdict at 0.001"]) == ["consistent with p", "rejects p"]


def test_typical_acceptance_is_biased_even_for_a_perfect_draft(app_test):
    at = app_test(PAGE, case="identical", n=FAST, section="typical")
    _ok(at)
    p, _ = proof_cases.preset_pair("identical", 10)
    tv = typical_distribution(p, p, 3).tv_to_p
    assert tv > 0.01 and _metric(at, "TV(typical law, p)") == f"{tv:.4f}"
    assert _metric(at, "alpha, one candidate") == "1.0000"


def test_url_state_sets_pair_tree_and_cost(app_test):
    at = app_test(PAGE, case="dirichlet", seed="5", vocab="7", k="2", src="typed", rates="0.5, 0.2",
                  shape="branching", branching="2, 2, 1", hw="H200 SXM", batch="64", n=FAST)
    _ok(at)
    p, q = proof_cases.preset_pair("dirichlet", 7, 5)
    assert _metric(at, "acceptance, k = 2 i.i.d.") == f"{acceptance_by_k(p, q, 2, IID)[-1]:.4f}"
    assert _metric(at, "E[N], tree") == f"{trees.branching_expected_length((2, 2, 1), [0.5, 0.2]):.3f}"
    assert _metric(at, "draft nodes") == "10"
    assert _metric(at, "tokens in the verify pass") == "11"


def test_moving_the_budget_changes_expected_length(app_test):
    at = app_test(PAGE, n=FAST)
    before = _metric(at, "E[N], tree")
    at.number_input(key="trees.budget").set_value(4).run()
    _ok(at)
    p, q = proof_cases.preset_pair("q_sharper", 10)
    rates = trees.rank_rates(p, q, 4, WOR)
    after = _metric(at, "E[N], tree")
    assert after != before and after == f"{trees.expected_accepted_length(trees.greedy_tree(rates, 4), rates):.3f}"
    assert _metric(at, "tokens in the verify pass") == "5"


@pytest.mark.parametrize("query, message", [
    ({"src": "typed", "rates": "0.9, 0.5"}, "sum to at most 1"),
    ({"src": "typed", "rates": "0.5, x"}, "numbers separated by commas"),
    ({"shape": "branching", "branching": "8, 8, 8"}, "at most 128"),
    ({"shape": "branching", "branching": "2, 0"}, "integer in [1, 8]"),
    ({"hw": "A100 SXM 80GB", "mode": "fp8"}, "FP8 compute is not supported"),
])
def test_bad_input_is_refused_in_words(app_test, query, message):
    at = app_test(PAGE, n=FAST, **query)
    _ok(at)
    assert message in _refused(at).replace("\\", "")


def test_out_of_range_url_value_is_reported_and_the_default_used(app_test):
    at = app_test(PAGE, k="9", n=FAST)
    _ok(at)
    assert any("k=9" in w.value.replace("\\", "") for w in at.warning)
    p, q = proof_cases.preset_pair("q_sharper", 10)
    assert _metric(at, "acceptance, k = 3 i.i.d.") == f"{acceptance_by_k(p, q, 3, IID)[-1]:.4f}"
    assert np.isfinite(float(_metric(at, "E[N], tree")))


def test_a_url_asking_a_million_draws_is_capped_and_says_so(app_test):
    """/trees?case=dirichlet&vocab=16&k=5&n=1000000 kept the server busy for minutes; now k x n is at most 60,000
    candidate draws (12,000 positions at k = 5), and the page says what it drew."""
    at = app_test(PAGE, case="dirichlet", vocab="16", k="5", n="1000000", sseed="1", section="checks", timeout=120)
    _ok(at)
    capped = [c.value for c in at.caption if "asked" in c.value]
    assert capped and "n = 1,000,000 asked; 12,000 drawn" in capped[0], capped
    rows = at.dataframe[0].value                        # the multi-draft checks, one row per rule
    assert len(rows) == len(RULES)


def test_draws_within_the_budget_are_not_capped(app_test):
    at = app_test(PAGE, n="20000", k="3", section="checks")
    _ok(at)
    assert not [c.value for c in at.caption if "asked" in c.value]
    assert any("x 20,000 positions each" in c.value for c in at.caption)      # the check says what it drew


@pytest.mark.parametrize("section, charts, shown, hidden", [
    ("tree", 6, "E[N], tree", "random pairs"),                       # the default: key figure + the token tree
    ("checks", 2, "random pairs", "TV(typical law, p)"),
    ("typical", 4, "TV(typical law, p)", "E[N], tree"),
])
def test_the_section_chooser_shows_only_the_chosen_section(app_test, section, charts, shown, hidden):
    """A shared ?section= opens that view; the sections not shown are not drawn (nor computed)."""
    at = app_test(PAGE, n=FAST, **({} if section == "tree" else {"section": section}))
    _ok(at)
    assert at.radio(key="trees.section").value == section
    assert len(at.get("plotly_chart")) == charts
    labels = [m.label for m in at.metric]
    assert "alpha, one candidate" in labels and shown in labels and hidden not in labels
