"""optimal_tree against an exhaustive search over every tree, and where greedy placement is (and is not) optimal."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from specdec_core import trees
from specdec_core.tree_optimal import optimal_tree


@functools.cache
def forests(n: int, max_children: int) -> tuple[tuple, ...]:
    """Every ordered forest of exactly n nodes (a tuple of trees; a tree is the forest of its children),
    at most max_children trees in the forest and below every node: counted independently of the programme."""
    if n == 0:
        return ((),)
    out = []

    def grow(prefix: tuple, left: int) -> None:
        if left == 0:
            out.append(prefix)
            return
        if len(prefix) == max_children:
            return
        for size in range(1, left + 1):                 # the next tree takes `size` nodes: its root + size - 1
            for kids in forests(size - 1, max_children):
                grow(prefix + (kids,), left - size)

    grow((), n)
    return tuple(out)


def as_tree(forest: tuple) -> trees.Tree:
    """The nested forest as a trees.Tree (parents first, ranks 1..b in order)."""
    parent, rank = [], []

    def add(par: int, f: tuple) -> None:
        for r, kids in enumerate(f, start=1):
            j = len(parent)
            parent.append(par)
            rank.append(r)
            add(j, kids)

    add(-1, forest)
    return trees.Tree(tuple(parent), tuple(rank))


def best_by_search(rates, budget: int) -> float:
    """max E[N] over every tree of at most `budget` nodes, ranks up to len(rates)."""
    return max(trees.expected_accepted_length(as_tree(f), rates)
               for n in range(budget + 1) for f in forests(n, len(rates)))


def test_the_search_counts_ordered_forests_right() -> None:
    assert [len(forests(n, 99)) for n in range(7)] == [1, 1, 2, 5, 14, 42, 132]  # Catalan numbers


@pytest.mark.parametrize("seed", range(12))
def test_optimal_tree_matches_exhaustive_search(seed: int) -> None:
    rng = np.random.default_rng(seed)
    rates = rng.dirichlet(np.ones(4))[:3] * rng.uniform(0.6, 1.0)  # 3 ranks, any order, sum < 1
    for budget in (1, 3, 6):
        tree = optimal_tree(rates, budget)
        assert tree.n_nodes <= budget
        assert trees.expected_accepted_length(tree, rates) == pytest.approx(best_by_search(rates, budget), abs=1e-12)


def test_greedy_misses_a_later_rank_that_accepts_more() -> None:
    rates = (0.5, 0.0, 0.4)
    greedy = trees.expected_accepted_length(trees.greedy_tree(rates, 5), rates)
    best = trees.expected_accepted_length(optimal_tree(rates, 5), rates)
    assert greedy == pytest.approx(1.96875) and best == pytest.approx(2.35)
    assert best == pytest.approx(best_by_search(rates, 5))


@pytest.mark.parametrize("seed", range(8))
def test_greedy_is_optimal_when_rates_do_not_rise_with_rank(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    rates = np.sort(rng.dirichlet(np.ones(5))[:4] * 0.95)[::-1]
    for budget in (2, 7, 20, 40):
        g = trees.expected_accepted_length(trees.greedy_tree(rates, budget), rates)
        o = trees.expected_accepted_length(optimal_tree(rates, budget), rates)
        assert g == pytest.approx(o, abs=1e-12)


def test_depth_limit_and_bad_budget() -> None:
    tree = optimal_tree((0.9,), 10, max_depth=3)
    assert tree.n_nodes == 3 and int(tree.depth.max()) == 3
    assert optimal_tree((0.5, 0.3), 0).n_nodes == 0
    with pytest.raises(ValueError, match="node budget"):
        optimal_tree((0.5,), 1000)


def test_the_trees_win_rests_on_a_cheap_draft_pass() -> None:
    """Page defaults (q sharper, V = 10, 25 nodes, Llama-3.1-8B + 1B on an H100, L = 256, B = 1): the modelled
    draft gives 1.80x against the best chain's 1.45x; at 0.3 target steps per draft pass, 1.28x against 1.22x."""
    from specdec_core import proof_cases, roofline, steptime, tree_cost
    from specdec_core.algebra import speedup
    from specdec_core.multidraft import WOR

    p, q = proof_cases.preset_pair("q_sharper", 10, 0)
    rates = trees.rank_rates(p, q, 4, WOR)
    tree = trees.greedy_tree(rates, 25)
    args = (
        steptime.SHAPES["Llama-3.1-8B"],
        steptime.SHAPES["Llama-3.2-1B (draft)"],
        roofline.HARDWARE["H100 SXM"],
        "bf16",
        256,
        [1],
    )
    model = tree_cost.tree_vs_chain(tree, rates, *args)
    assert float(model.tree.speedup[0]) == pytest.approx(1.80, abs=0.005)
    assert float(model.best_speedup[0]) == pytest.approx(1.45, abs=0.005)
    costly = tree_cost.tree_vs_chain(tree, rates, *args, draft_pass=0.3)
    depth = int(tree.depth.max())
    by_hand = trees.expected_accepted_length(tree, rates) / (depth * 0.3 + float(costly.tree.v[0]))
    assert float(costly.tree.speedup[0]) == pytest.approx(by_hand) == pytest.approx(1.28, abs=0.005)
    v = steptime.gamma_costs(*args[:5], 1, 16).v
    chain_best = max(speedup(float(rates[0]), g, 0.3, float(v[g])) for g in range(1, 17))
    assert float(costly.best_speedup[0]) == pytest.approx(chain_best) == pytest.approx(1.22, abs=0.005)
    with pytest.raises(ValueError, match="draft pass"):
        tree_cost.tree_cost(tree, rates, *args, draft_pass=-1.0)


def test_depth_decay_is_positional_at_one_and_shrinks_deep_trees_more() -> None:
    from specdec_core.tree_optimal import expected_length_with_depth_decay

    rates = (0.6, 0.2, 0.1)
    deep, wide = trees.chain(8), trees.branching_tree((3, 2))
    for tree in (deep, wide):
        assert expected_length_with_depth_decay(tree, rates, 1.0) == pytest.approx(
            trees.expected_accepted_length(tree, rates), abs=1e-12
        )
    # a chain by hand: 1 + sum_d prod_{i<=d} 0.6 x 0.8^(i-1)
    want = 1 + sum(np.prod([0.6 * 0.8**i for i in range(d)]) for d in range(1, 9))
    assert expected_length_with_depth_decay(deep, rates, 0.8) == pytest.approx(want, abs=1e-12)
    loss = {
        name: 1 - expected_length_with_depth_decay(t, rates, 0.8) / trees.expected_accepted_length(t, rates)
        for name, t in (("deep", deep), ("wide", wide))
    }
    assert loss["deep"] > loss["wide"] > 0
    with pytest.raises(ValueError, match="depth decay"):
        expected_length_with_depth_decay(deep, rates, 2.5)


def test_depth_factor_above_one_raises_deep_acceptance_clipped_at_one() -> None:
    from specdec_core.tree_optimal import expected_length_with_depth_decay

    rates = (0.6, 0.2, 0.1)
    deep = trees.chain(5)
    # a chain by hand with each scaled rate clipped to 1: 0.6, 0.78, 1.0, 1.0, 1.0
    steps = [min(1.0, 0.6 * 1.3**i) for i in range(5)]
    want = 1 + sum(np.prod(steps[:d]) for d in range(1, 6))
    got = expected_length_with_depth_decay(deep, rates, 1.3)
    assert got == pytest.approx(want, abs=1e-12)
    assert got > trees.expected_accepted_length(deep, rates)
    assert expected_length_with_depth_decay(deep, (0.9,), 2.0) == pytest.approx(1 + 0.9 * 5, abs=1e-12)


def _page_default_tree():
    from specdec_core import proof_cases, roofline, steptime
    from specdec_core.multidraft import WOR

    p, q = proof_cases.preset_pair("q_sharper", 10, 0)
    rates = trees.rank_rates(p, q, 4, WOR)
    args = (
        steptime.SHAPES["Llama-3.1-8B"],
        steptime.SHAPES["Llama-3.2-1B (draft)"],
        roofline.HARDWARE["H100 SXM"],
        "bf16",
        256,
        [1],
    )
    return trees.greedy_tree(rates, 25), rates, args


def test_medusa_pays_one_draft_pass_per_tree_eagle_one_per_depth() -> None:
    from specdec_core import steptime, tree_cost
    from specdec_core.algebra import expected_tokens

    tree, rates, args = _page_default_tree()
    depth = int(tree.depth.max())
    assert (
        tree_cost.draft_passes(tree, tree_cost.PER_DEPTH) == depth == 6
        and tree_cost.draft_passes(tree, tree_cost.PER_TREE) == 1
    )
    eagle = tree_cost.tree_vs_chain(tree, rates, *args, draft_pass=0.3, drafter=tree_cost.PER_DEPTH)
    medusa = tree_cost.tree_vs_chain(tree, rates, *args, draft_pass=0.3, drafter=tree_cost.PER_TREE)
    e_n, v = trees.expected_accepted_length(tree, rates), float(medusa.tree.v[0])
    assert float(eagle.tree.c_tree[0]) == pytest.approx(depth * 0.3)
    assert float(medusa.tree.c_tree[0]) == pytest.approx(0.3)
    assert float(medusa.tree.speedup[0]) == pytest.approx(e_n / (0.3 + v))
    assert float(medusa.tree.speedup[0]) > float(eagle.tree.speedup[0])
    # Medusa's best chain: one pass for any gamma >= 1
    vg = steptime.gamma_costs(*args[:5], 1, 16).v
    by_hand = max([1.0] + [float(expected_tokens(float(rates[0]), g)) / (0.3 + float(vg[g])) for g in range(1, 17)])
    assert float(medusa.best_speedup[0]) == pytest.approx(by_hand)
    assert float(medusa.best_speedup[0]) > float(eagle.best_speedup[0])
    with pytest.raises(ValueError, match="Medusa heads are priced per pass"):
        tree_cost.tree_cost(tree, rates, *args, drafter=tree_cost.PER_TREE)
    with pytest.raises(ValueError, match="unknown drafter"):
        tree_cost.draft_passes(tree, "nope")


def test_the_drill_tree_with_a_head_gives_about_3x_against_2x() -> None:
    """The drill's 1.80x against 1.45x prices a 1B draft by the roofline; a head at 0.03-0.05 target steps per pass
    (one per depth) gives 2.76-3.04x against the best chain's 1.87-2.01x."""
    from specdec_core import tree_cost

    tree, rates, args = _page_default_tree()
    lo, hi = (tree_cost.tree_vs_chain(tree, rates, *args, draft_pass=c) for c in tree_cost.HEAD_PASS)
    assert float(lo.tree.speedup[0]) == pytest.approx(3.04, abs=0.005)
    assert float(lo.best_speedup[0]) == pytest.approx(2.01, abs=0.005)
    assert float(hi.tree.speedup[0]) == pytest.approx(2.76, abs=0.005)
    assert float(hi.best_speedup[0]) == pytest.approx(1.87, abs=0.005)


def test_the_trees_drill_states_both_pricings_as_the_core_computes() -> None:
    from content import interview_senior
    from specdec_core import tree_cost

    prompt = next(q[2] for q in interview_senior.SENIOR_QUESTIONS if q[0] == "trees_need_heads")
    tree, rates, args = _page_default_tree()
    roof = tree_cost.tree_vs_chain(tree, rates, *args)
    lo, hi = (tree_cost.tree_vs_chain(tree, rates, *args, draft_pass=c) for c in tree_cost.HEAD_PASS)
    assert f"{roof.tree.speedup[0]:.2f}x to {roof.best_speedup[0]:.2f}x" in prompt and "roofline" in prompt
    assert (
        f"{hi.tree.speedup[0]:.2f}-{lo.tree.speedup[0]:.2f}x to {hi.best_speedup[0]:.2f}-"
        f"{lo.best_speedup[0]:.2f}x" in prompt
    )
    assert f"{tree_cost.HEAD_PASS[0]:.2f}-{tree_cost.HEAD_PASS[1]:.2f} target steps per pass" in prompt
