"""AppTest: the trees page states its assumptions and offers what the static greedy tree and a cheap draft hide:
the optimal tree, a depth decay, a fixed draft-pass cost, the HBM limit and the optimal-transport bound, each
number recomputed from specdec_core here."""

from __future__ import annotations

import numpy as np
import pytest

from specdec_core import proof_cases, roofline, steptime, trees
from specdec_core.coupling import optimal_acceptance
from specdec_core.multidraft import WOR
from specdec_core.tree_cost import tree_vs_chain
from specdec_core.tree_optimal import expected_length_with_depth_decay, optimal_tree

PAGE = "views/trees.py"
FAST = {"n": "5000"}


def _metric(at, label: str) -> str:
    return next(m.value for m in at.metric if m.label == label)


def _text(at) -> str:
    return " ".join(x.value for x in [*at.caption, *at.markdown, *at.warning])


def test_defaults_state_positional_acceptance_and_the_ot_bound(app_test) -> None:
    at = app_test(PAGE, section="all", **FAST)
    assert not at.exception
    p, q = proof_cases.preset_pair("q_sharper", 10)
    text = _text(at)
    assert "positional acceptance" in text and "hardware numerics" in text
    assert f"{optimal_acceptance(p, q, 3):.4f}" in text and "Hu et al., ICLR 2025" in text and "Sequoia" in text
    assert "(the optimal coupling, SpecTr" not in text


def test_the_optimal_tree_beats_greedy_on_rising_rates(app_test) -> None:
    rates = "0.5, 0, 0.4"
    greedy = app_test(PAGE, src="typed", rates=rates, budget="5", **FAST)
    assert not greedy.exception
    a = (0.5, 0, 0.4)
    assert _metric(greedy, "E[N], tree") == f"{trees.expected_accepted_length(trees.greedy_tree(a, 5), a):.3f}"
    assert "the best tree of 5 nodes gives 2.350" in _text(greedy)
    best = app_test(PAGE, src="typed", rates=rates, budget="5", shape="optimal", **FAST)
    assert not best.exception
    want = trees.expected_accepted_length(optimal_tree((0.5, 0, 0.4), 5), (0.5, 0, 0.4))
    assert _metric(best, "E[N], tree") == f"{want:.3f}" == "2.350"


def test_depth_decay_and_a_fixed_draft_pass_change_the_numbers_as_the_core_says(app_test) -> None:
    at = app_test(PAGE, decay="0.8", dcost="fixed", dpass="0.3", **FAST)
    assert not at.exception
    p, q = proof_cases.preset_pair("q_sharper", 10)
    rates = trees.rank_rates(p, q, 4, WOR)
    tree = trees.greedy_tree(rates, 25)
    assert _metric(at, "E[N] with acceptance x 0.80 per level") == \
        f"{expected_length_with_depth_decay(tree, rates, 0.8):.3f}"
    r = tree_vs_chain(tree, rates, steptime.SHAPES["Llama-3.1-8B"], steptime.SHAPES["Llama-3.2-1B (draft)"],
                      roofline.HARDWARE["H100 SXM"], "bf16", 256, np.array([1.0]), 0.3)
    assert _metric(at, "speedup, tree") == f"{r.tree.speedup[0]:.2f}x" == "1.28x"
    assert _metric(at, f"best chain: gamma {int(r.best_gamma[0])}") == f"{r.best_speedup[0]:.2f}x"


@pytest.mark.parametrize(("ctx", "batch", "fits"), [("16384", "64", False), ("256", "1", True)])
def test_hbm_warning_where_the_batch_does_not_fit(app_test, ctx: str, batch: str, fits: bool) -> None:
    at = app_test(PAGE, ctx=ctx, batch=batch, **FAST)
    assert not at.exception
    warned = [w.value for w in at.warning if "holds target, draft and their KV" in w.value]
    lim = steptime.max_batch_in_memory(roofline.HARDWARE["H100 SXM"], steptime.SHAPES["Llama-3.1-8B"],
                                  steptime.SHAPES["Llama-3.2-1B (draft)"], "bf16", int(ctx))
    assert bool(warned) == (lim < 1024)
    assert any(f"B = {batch} does not fit" in w for w in warned) == (not fits)


def test_depth_factor_goes_above_one_and_drift_is_qualified(app_test) -> None:
    at = app_test(PAGE, decay="1.2", **FAST)
    assert not at.exception
    p, q = proof_cases.preset_pair("q_sharper", 10)
    rates = trees.rank_rates(p, q, 4, WOR)
    tree = trees.greedy_tree(rates, 25)
    got = _metric(at, "E[N] with acceptance x 1.20 per level")
    assert got == f"{expected_length_with_depth_decay(tree, rates, 1.2):.3f}"
    assert float(got) > trees.expected_accepted_length(tree, rates)
    text = _text(at)
    assert "but not always" in text and "0.37 / 0.47 / 0.33" in text


def test_medusa_is_priced_one_pass_per_tree_on_the_page(app_test) -> None:
    from specdec_core import tree_cost

    at = app_test(PAGE, dcost="medusa", dpass="0.3", **FAST)
    assert not at.exception
    p, q = proof_cases.preset_pair("q_sharper", 10)
    rates = trees.rank_rates(p, q, 4, WOR)
    tree = trees.greedy_tree(rates, 25)
    args = (
        steptime.SHAPES["Llama-3.1-8B"],
        steptime.SHAPES["Llama-3.2-1B (draft)"],
        roofline.HARDWARE["H100 SXM"],
        "bf16",
        256,
        np.array([1.0]),
        0.3,
    )
    medusa = tree_vs_chain(tree, rates, *args, drafter=tree_cost.PER_TREE)
    assert _metric(at, "draft cost c_tree") == "0.300"
    assert _metric(at, "speedup, tree") == f"{medusa.tree.speedup[0]:.2f}x" != "1.28x"
    assert _metric(at, f"best chain: gamma {int(medusa.best_gamma[0])}") == f"{medusa.best_speedup[0]:.2f}x"
    assert "one draft pass of 0.30 target steps per round" in _text(at)


def test_the_tree_is_shown_with_a_roofline_draft_and_with_a_head(app_test) -> None:
    at = app_test(PAGE, **FAST)
    assert not at.exception
    text = _text(at)
    assert "this tree gives 1.80x against the best chain's 1.45x" in text
    assert "3.04x against 2.01x at 0.03 steps per pass" in text and "2.76x against 1.87x at 0.05" in text
