"""Tree algebra: E[N] against Monte Carlo of the same tree (the positional model, and the real multi-draft
rule node by node), the closed forms, greedy placement against every tree of the same size, and the tree's
cost against the step-time model computed here from steptime.step_time."""

import numpy as np
import pytest

from specdec_core import proof_cases, steptime, trees
from specdec_core.algebra import expected_tokens
from specdec_core.multidraft import WOR, sample_multidraft
from specdec_core.roofline import HARDWARE
from specdec_core.tree_cost import best_chain_against_batch, first_batch_not_above, tree_cost
from specdec_core.trees import (
    MAX_NODES,
    Tree,
    ancestor_mask,
    branching_expected_length,
    branching_tree,
    chain,
    draft_widths,
    expected_accepted_length,
    greedy_tree,
    parse_ints,
    parse_rates,
    path_probabilities,
    rank_rates,
    simulate_accepted_length,
    verify_tokens,
)

RATES = np.array([0.6, 0.15, 0.06, 0.03])
N_SIM = 200_000


def _within(samples, expected, sigmas=5.0):
    """The sample mean is within `sigmas` standard errors of `expected`."""
    return abs(samples.mean() - expected) < sigmas * samples.std() / np.sqrt(samples.size)


@pytest.mark.parametrize("tree", [branching_tree((3, 2, 1)), greedy_tree(RATES, 25), chain(6), branching_tree((1,)),
                                  greedy_tree(RATES, 60)])
def test_expected_length_matches_a_monte_carlo_of_the_same_tree(tree):
    sims = simulate_accepted_length(tree, RATES, N_SIM, seed=1)
    e_n = expected_accepted_length(tree, RATES)
    assert _within(sims, e_n)
    assert sims.min() >= 1 and sims.max() <= tree.depth.max() + 1
    # the whole distribution: P(N > d) = sum of path probabilities at depth d
    pi, depth = path_probabilities(tree, RATES), tree.depth
    for d in range(1, int(depth.max()) + 1):
        p_reach = pi[depth == d].sum()
        assert abs((sims > d).mean() - p_reach) < 5 * np.sqrt(p_reach * (1 - p_reach) / N_SIM) + 1e-9


def test_expected_length_matches_the_real_multi_draft_rule_walked_through_the_tree():
    """Rates from the without-replacement rule on one (p, q) pair; a Monte Carlo that runs that rule at every
    node (k = the node's number of children) and walks to the kept child gives the same E[N]."""
    p, q = proof_cases.preset_pair("q_sharper", 8)
    rates = rank_rates(p, q, 4, WOR)
    tree = branching_tree((4, 2, 2, 1))
    table = tree.children()
    n = 40_000
    rng = np.random.default_rng(2)
    node, length, alive = np.zeros(n, dtype=np.int64), np.ones(n, dtype=np.int64), np.ones(n, dtype=bool)
    for _ in range(5):
        nxt = np.full(n, -1)
        for row in np.unique(node[alive]):
            kids = int((table[row] >= 0).sum())
            idx = np.flatnonzero(alive & (node == row))
            if kids == 0:
                continue
            rank = sample_multidraft(p, q, kids, idx.size, WOR, rng)[1]
            nxt[idx] = np.where(rank > 0, table[row, np.maximum(rank - 1, 0)], -1)
        alive &= nxt >= 0
        length += alive
        node = np.where(alive, nxt + 1, node)
    assert _within(length, expected_accepted_length(tree, rates))


def test_chain_is_the_algebra_and_branching_has_a_closed_form():
    for gamma in (0, 1, 5, 16):
        assert expected_accepted_length(chain(gamma), RATES) == pytest.approx(expected_tokens(0.6, gamma), abs=1e-14)
    for b in [(3, 2, 1), (1, 1, 1), (4,), (2, 3, 4, 1)]:
        tree = branching_tree(b)
        assert tree.n_nodes == int(np.cumprod(b).sum())
        assert expected_accepted_length(tree, RATES) == pytest.approx(branching_expected_length(b, RATES), abs=1e-14)
    # (3, 2, 1) by hand: S1 = 0.81, S2 = 0.75, S3 = 0.6
    assert branching_expected_length((3, 2, 1), RATES) == pytest.approx(1 + 0.81 + 0.81 * 0.75 + 0.81 * 0.75 * 0.6)


def _all_trees(n_nodes, max_rank):
    """Every valid tree (closed under parent and under lower sibling rank) with n_nodes nodes, as path sets."""
    frontier = {frozenset()}
    for _ in range(n_nodes):
        grown = set()
        for paths in frontier:
            slots = {(1,)} | {pth + (1,) for pth in paths} | {pth[:-1] + (pth[-1] + 1,) for pth in paths}
            for s in slots:
                ok = s[-1] <= max_rank and s not in paths and (len(s) == 1 or s[:-1] in paths)
                if ok and (s[-1] == 1 or s[:-1] + (s[-1] - 1,) in paths):
                    grown.add(paths | {s})
        frontier = grown
    return frontier


def _value(paths, rates):
    return 1.0 + sum(np.prod([rates[r - 1] for r in pth]) for pth in paths)


@pytest.mark.parametrize("budget", [1, 3, 5, 7])
def test_greedy_placement_is_the_best_tree_of_its_size(budget):
    rates = np.array([0.5, 0.25, 0.12])
    best = max(_value(t, rates) for t in _all_trees(budget, 3))
    tree = greedy_tree(rates, budget)
    assert tree.n_nodes == budget
    assert expected_accepted_length(tree, rates) == pytest.approx(best, abs=1e-14)


def test_greedy_tree_beats_chain_and_branching_of_the_same_size():
    tree = greedy_tree(RATES, 15)
    assert expected_accepted_length(tree, RATES) >= expected_accepted_length(branching_tree((3, 2, 1)), RATES)
    assert expected_accepted_length(tree, RATES) > expected_accepted_length(chain(15), RATES)
    # with a perfect first choice the greedy tree is the chain
    assert greedy_tree([1.0], 5) == chain(5)


def test_widths_and_verify_tokens():
    tree = branching_tree((3, 2, 1))
    assert verify_tokens(tree) == 16
    np.testing.assert_array_equal(draft_widths(tree), [1, 3, 6])
    np.testing.assert_array_equal(draft_widths(chain(4)), [1, 1, 1, 1])
    assert draft_widths(chain(0)).size == 0 and verify_tokens(chain(0)) == 1


def test_rates_and_tree_inputs_are_refused_with_their_ranges():
    with pytest.raises(ValueError, match="sum to at most 1"):
        expected_accepted_length(chain(2), [0.7, 0.5])
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        expected_accepted_length(chain(2), [1.2])
    with pytest.raises(ValueError, match="1 to 8"):
        expected_accepted_length(chain(2), [])
    with pytest.raises(ValueError, match=f"at most {MAX_NODES}"):
        branching_tree((8, 8, 8))
    with pytest.raises(ValueError, match=r"integer in \[1, 8\]"):
        branching_tree((3, 0))
    with pytest.raises(ValueError, match="ranks 1..b"):
        Tree((-1, -1), (1, 3))
    with pytest.raises(ValueError, match="earlier node"):
        Tree((1, -1), (1, 1))
    with pytest.raises(ValueError, match=r"\[0, 128\]"):
        greedy_tree(RATES, 129)
    with pytest.raises(ValueError, match=r"\[0, 16\]"):
        chain(17)
    assert parse_ints("3, 2 1", "branching") == (3, 2, 1)
    np.testing.assert_array_equal(parse_rates("0.5, 0.2"), [0.5, 0.2])
    with pytest.raises(ValueError, match="whole numbers"):
        parse_ints("3, x", "branching")
    with pytest.raises(ValueError, match="numbers separated by commas"):
        parse_rates("0.5, abc")


# ------------------------------------------------------------------ cost ----
T8, D1, H100 = steptime.SHAPES["Llama-3.1-8B"], steptime.SHAPES["Llama-3.2-1B (draft)"], HARDWARE["H100 SXM"]
BATCH = np.array([1.0, 8.0, 64.0, 256.0])


def test_a_chain_costs_what_spec_curve_says():
    for gamma in (1, 3, 7):
        cost = tree_cost(chain(gamma), RATES, T8, D1, H100, "bf16", 2048, BATCH)
        curve = steptime.spec_curve(T8, D1, H100, "bf16", gamma, 0.6, 2048, BATCH)
        np.testing.assert_allclose(cost.c_tree, gamma * curve.c, rtol=1e-12)
        np.testing.assert_allclose(cost.v, curve.v, rtol=1e-12)
        np.testing.assert_allclose(cost.speedup, curve.speedup, rtol=1e-12)


def test_tree_cost_from_pass_times_computed_here():
    tree = branching_tree((3, 2, 1))
    cost = tree_cost(tree, RATES, T8, D1, H100, "bf16", 2048, BATCH)

    def t(shape, tokens):
        return steptime.step_time(shape, H100, "bf16", BATCH, tokens, 2048).total_s

    draft = t(D1, 1) + t(D1, 3) + t(D1, 6)
    round_s = draft + t(T8, 16)
    e_n = 1 + 0.81 + 0.81 * 0.75 + 0.81 * 0.75 * 0.6
    np.testing.assert_allclose(cost.speedup, e_n * t(T8, 1) / round_s, rtol=1e-12)
    np.testing.assert_allclose(cost.goodput_tps, BATCH * e_n / round_s, rtol=1e-12)
    np.testing.assert_allclose(cost.goodput_tps / cost.plain_tps, cost.speedup, rtol=1e-12)
    np.testing.assert_allclose(cost.verified_tps, BATCH * 16 / round_s, rtol=1e-12)
    assert cost.wasted_fraction == pytest.approx(1 - e_n / 16)


def test_a_tree_beats_the_chain_at_small_batch_and_loses_at_large_batch():
    """The page's claim at its defaults (rates of the q_sharper pair, 25 nodes placed greedily): at B = 1 the
    tree beats both the 25-chain and the best chain; at B = 256 the best chain wins and the tree slows decoding."""
    p, q = proof_cases.preset_pair("q_sharper", 10)
    rates = rank_rates(p, q, 4, WOR)
    tree = tree_cost(greedy_tree(rates, 25), rates, T8, D1, H100, "bf16", 2048, BATCH)
    same = tree_cost(chain(16), rates, T8, D1, H100, "bf16", 2048, BATCH)
    gammas, best = best_chain_against_batch(float(rates[0]), T8, D1, H100, "bf16", 2048, BATCH)
    assert tree.speedup[0] > best[0] > 1 and tree.speedup[0] > same.speedup[0]
    assert tree.speedup[-1] < 1 < best[-1]
    assert gammas[-1] < gammas[0]                                  # engines shorten gamma at high batch
    assert first_batch_not_above(tree.speedup, best, BATCH) in (8.0, 64.0, 256.0)
    assert first_batch_not_above(np.array([2.0, 3.0]), np.array([1.0, 1.0]), np.array([1.0, 2.0])) is None


# ------------------------------------------------------------ interview drills ----
def test_tree_and_exact_rule_drills():
    from content import drill_text
    from specdec_core import drills
    from specdec_core.drill_kinds import EXACT_RULES, WRONG_RULES, rule_tv

    d = drills.Drill("tree_tokens", {"rates": [0.5, 0.2, 0.1], "branching": [1, 2, 1]})
    assert d.answer() == pytest.approx(1 + 0.5 + 0.5 * 0.7 + 0.5 * 0.7 * 0.5)          # 2.025, by hand
    assert drills.grade(d, "2.03").correct and not drills.grade(d, "1.875").correct       # 1.875: the chain of 3
    for seed in range(20):
        e = drills.make_drill("exact_rule", seed)
        wrong = e.params["B"] if e.answer() == "A" else e.params["A"]
        assert rule_tv(e.params[e.answer()], e.params["p"], e.params["q"], 2) < 1e-12
        assert rule_tv(wrong, e.params["p"], e.params["q"], 2) >= 0.02
        assert wrong in WRONG_RULES and e.params[e.answer()] in EXACT_RULES
        other = "B" if e.answer() == "A" else "A"
        msg = drills.grade(e, other).message  # the answer, then which tempting rule the wrong choice was
        assert msg.startswith(f"Not quite: {e.answer()} emits exactly p. Your answer looks like the tempting rule "
                              f"{other}, which "), msg
        assert drill_text.prompt(e).endswith("Which one emits exactly p? Answer A or B.")


def test_kids_is_the_one_children_table_and_depth_rates_reduce_to_the_pooled_sum():
    tree = trees.branching_tree([3, 2])
    assert tree.kids[-1] == (0, 1, 2) and tree.kids[0] == (3, 4) and tree.kids[8] == ()
    table = tree.children()
    for node, c in tree.kids.items():
        assert [x for x in table[node + 1] if x >= 0] == list(c)
    rates = np.array([0.5, 0.2, 0.1])
    assert trees.expected_length_by_depth(tree, np.stack([rates, rates])) == pytest.approx(
        trees.expected_accepted_length(tree, rates), abs=1e-15)
    # the root's rank-1 child kept in one round, nothing in the other: a_1(0) = 1/2, a_2(1) never offered twice
    kept, reached, pooled = trees.rank_counts([(tree, [0]), (tree, [])], max_rank=3, max_depth=2)
    assert kept.tolist() == [[1, 0, 0], [0, 0, 0]] and reached.tolist() == [[2, 2, 2], [1, 1, 0]]
    np.testing.assert_allclose(pooled, [1 / 3, 0.0, 0.0])


def test_ancestor_mask_against_parent_walks_and_its_counts():
    """Entry (i, j) iff j is on the walk from i up to the root; row sums are the depths; a chain is causal."""
    for tree in (branching_tree([3, 1, 1]), branching_tree([2, 2, 2]), greedy_tree([0.5, 0.3, 0.1], 20), chain(5)):
        m = ancestor_mask(tree)
        want = np.zeros((tree.n_nodes, tree.n_nodes), dtype=bool)
        for i in range(tree.n_nodes):
            j = i
            while j >= 0:
                want[i, j], j = True, tree.parent[j]
        assert (m == want).all() and (m.sum(axis=1) == tree.depth).all()
    assert (ancestor_mask(chain(5)) == np.tril(np.ones((5, 5), dtype=bool))).all()
    assert int(ancestor_mask(branching_tree([3, 1, 1])).sum()) == 18                   # 1 x 3 + 2 x 3 + 3 x 3
    assert ancestor_mask(chain(0)).shape == (0, 0)
