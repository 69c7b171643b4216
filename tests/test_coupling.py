"""The subset bound for k i.i.d. drafts (Hu et al., ICLR 2025) against a linear programme over the joint law, against
brute force over every token set, and against recursive rejection (which is exact but accepts less)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from specdec_core import multidraft, proof_cases
from specdec_core.coupling import optimal_acceptance
from specdec_core.rejection import acceptance_rate


def lp_acceptance(p: np.ndarray, q: np.ndarray, k: int) -> float:
    """max P(Y in {X_1..X_k}) over joint laws of (X_1..X_k, Y) with X_i i.i.d. q and Y ~ p (scipy's LP)."""
    linprog = pytest.importorskip("scipy.optimize").linprog
    V = p.size
    draws = list(itertools.product(range(V), repeat=k))
    n = len(draws) * V                                     # variables: pi(x_1..x_k, y)
    gain = np.zeros(n)
    a_eq, b_eq = [], []
    for i, xs in enumerate(draws):
        row = np.zeros(n)
        row[i * V:(i + 1) * V] = 1.0                        # sum_y pi(xs, y) = prod q(x_i)
        a_eq.append(row)
        b_eq.append(float(np.prod(q[list(xs)])))
        for y in set(xs):
            gain[i * V + y] = 1.0
    for y in range(V):
        row = np.zeros(n)
        row[y::V] = 1.0                                    # sum_xs pi(xs, y) = p(y)
        a_eq.append(row)
        b_eq.append(float(p[y]))
    res = linprog(-gain, A_eq=np.array(a_eq), b_eq=np.array(b_eq), bounds=(0, None), method="highs")
    assert res.status == 0
    return float(-res.fun)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("k", [1, 2, 3])
def test_bound_equals_the_linear_programme(seed: int, k: int) -> None:
    rng = np.random.default_rng(seed)
    p, q = rng.dirichlet(np.ones(4)), rng.dirichlet(np.full(4, 0.5))
    assert optimal_acceptance(p, q, k) == pytest.approx(lp_acceptance(p, q, k), abs=1e-7)


def test_one_draft_bound_is_one_minus_tv() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        p, q = rng.dirichlet(np.ones(9)), rng.dirichlet(np.ones(9))
        assert optimal_acceptance(p, q, 1) == pytest.approx(acceptance_rate(p, q), abs=1e-12)


def test_recursive_rejection_is_exact_but_below_the_bound_on_the_trees_page_defaults() -> None:
    for case, want_rr, want_ot in (("q_sharper", 0.667, 0.720), ("q_flatter", 0.859, 0.979)):
        p, q = proof_cases.preset_pair(case, 10, 0)
        rr = float(multidraft.acceptance_by_k(p, q, 2, multidraft.IID)[1])
        ot = optimal_acceptance(p, q, 2)
        assert rr == pytest.approx(want_rr, abs=1.5e-3) and ot == pytest.approx(want_ot, abs=1e-3)
        assert rr < ot


def test_bound_is_never_below_recursive_rejection() -> None:
    rng = np.random.default_rng(11)
    for _ in range(30):
        p, q = rng.dirichlet(np.ones(6)), rng.dirichlet(np.full(6, 0.4))
        for k in (2, 3):
            assert (
                optimal_acceptance(p, q, k) >= float(multidraft.acceptance_by_k(p, q, k, multidraft.IID)[k - 1]) - 1e-12
            )


def brute_force_acceptance(p: np.ndarray, q: np.ndarray, k: int) -> float:
    """min over all 2^V token sets B of 2 - p(B) - (1 - q(B))^k (the reference on small V)."""
    pb, qb = np.zeros(1), np.zeros(1)
    for pi, qi in zip(p, q, strict=True):  # doubling: sets without token i, then with it
        pb, qb = np.concatenate([pb, pb + pi]), np.concatenate([qb, qb + qi])
    return float(np.clip(np.min(2.0 - pb - (1.0 - np.clip(qb, 0.0, 1.0)) ** k), 0.0, 1.0))


@pytest.mark.parametrize("seed", range(40))
def test_sorted_prefix_equals_brute_force_on_small_vocabularies(seed: int) -> None:
    rng = np.random.default_rng(seed)
    v = int(rng.integers(2, 13))
    p, q = rng.dirichlet(np.full(v, rng.uniform(0.2, 2.0))), rng.dirichlet(np.full(v, rng.uniform(0.2, 2.0)))
    if seed % 4 == 0:  # zeros and ties: q = 0 where p > 0, p = 0 where q > 0
        p[0], q[1] = 0.0, 0.0
        p, q = p / p.sum(), q / q.sum()
    if seed % 4 == 1:
        q = p.copy()  # every ratio tied
    for k in (1, 2, 3, 5):
        assert optimal_acceptance(p, q, k) == pytest.approx(brute_force_acceptance(p, q, k), abs=1e-12)


def test_bound_at_smollm2_vocabulary_is_computed_and_consistent() -> None:
    rng = np.random.default_rng(3)
    v = 49_152
    p, q = rng.dirichlet(np.full(v, 0.05)), rng.dirichlet(np.full(v, 0.05))
    one = optimal_acceptance(p, q, 1)
    assert one == pytest.approx(acceptance_rate(p, q), abs=1e-9)  # k = 1: 1 - TV
    ks = [optimal_acceptance(p, q, k) for k in (1, 2, 4, 8)]
    assert all(b >= a - 1e-12 for a, b in zip(ks, ks[1:], strict=False)) and ks[-1] <= 1.0
    assert ks[1] >= float(multidraft.acceptance_by_k(p, q, 2, multidraft.IID)[1]) - 1e-9
