"""optimal_tree against an exhaustive search over every tree, and where greedy placement is (and is not) optimal."""

from __future__ import annotations

import functools

import numpy as np
import pytest

from specdec_core import trees as tr
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


def as_tree(forest: tuple) -> tr.Tree:
    """The nested forest as a trees.Tree (parents first, ranks 1..b in order)."""
    parent, rank = [], []

    def add(par: int, f: tuple) -> None:
        for r, kids in enumerate(f, start=1):
            j = len(parent)
            parent.append(par)
            rank.append(r)
            add(j, kids)

    add(-1, forest)
    return tr.Tree(tuple(parent), tuple(rank))


def best_by_search(rates, budget: int) -> float:
    """max E[N] over every tree of at most `budget` nodes, ranks up to len(rates)."""
    return max(tr.expected_accepted_length(as_tree(f), rates)
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
        assert tr.expected_accepted_length(tree, rates) == pytest.approx(best_by_search(rates, budget), abs=1e-12)


def test_greedy_misses_a_later_rank_that_accepts_more() -> None:
    rates = (0.5, 0.0, 0.4)
    greedy = tr.expected_accepted_length(tr.greedy_tree(rates, 5), rates)
    best = tr.expected_accepted_length(optimal_tree(rates, 5), rates)
    assert greedy == pytest.approx(1.96875) and best == pytest.approx(2.35)
    assert best == pytest.approx(best_by_search(rates, 5))


@pytest.mark.parametrize("seed", range(8))
def test_greedy_is_optimal_when_rates_do_not_rise_with_rank(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    rates = np.sort(rng.dirichlet(np.ones(5))[:4] * 0.95)[::-1]
    for budget in (2, 7, 20, 40):
        g = tr.expected_accepted_length(tr.greedy_tree(rates, budget), rates)
        o = tr.expected_accepted_length(optimal_tree(rates, budget), rates)
        assert g == pytest.approx(o, abs=1e-12)


def test_depth_limit_and_bad_budget() -> None:
    tree = optimal_tree((0.9,), 10, max_depth=3)
    assert tree.n_nodes == 3 and int(tree.depth.max()) == 3
    assert optimal_tree((0.5, 0.3), 0).n_nodes == 0
    with pytest.raises(ValueError, match="node budget"):
        optimal_tree((0.5,), 1000)
