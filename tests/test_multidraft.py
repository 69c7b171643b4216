"""Multi-draft recursive rejection and Medusa's typical acceptance: each exact law against a brute-force
enumeration of candidate tuples, the exact rules equal p over 10,000 random pairs, and sampled chi-square
checks with a stated power, where the wrong variants and typical acceptance must fail and the exact rules pass."""

from itertools import product

import numpy as np
import pytest
from scipy import stats

from specdec_core import proof_cases
from specdec_core.multidraft import (
    IID,
    K_MAX,
    NO_UPDATE,
    RULES,
    WOR,
    WOR_RATIO_Q,
    acceptance_by_k,
    check_multidraft,
    exhaustive_multidraft_check,
    multidraft_distribution,
    sample_multidraft,
)
from specdec_core.rejection import acceptance_rate
from specdec_core.stats import chi_square_gof
from specdec_core.typical import (
    MEDUSA_DELTA,
    MEDUSA_EPSILON,
    SAMPLED,
    TOP,
    check_typical,
    entropy,
    sample_typical,
    tv_curve,
    typical_distribution,
    typical_threshold,
)

N_DRAWS = 20_000     # one sample size for the exact rules and every negative control
LEVEL = 1e-3         # reject when p-value < LEVEL: a 0.1% false-alarm rate for an exact rule
MIN_POWER = 0.999    # each negative control is sized so the test catches it with at least this power


# ------------------------------------------------------------ brute force ----
def _tuples(q, k, replace):
    """Every ordered candidate tuple with its probability: i.i.d. from q, or successive sampling without
    replacement (a tuple stops early, padded with None, once q's support is used up)."""
    v = len(q)
    if replace:
        for xs in product(range(v), repeat=k):
            yield xs, float(np.prod([q[x] for x in xs]))
        return

    def rec(prefix, prob):
        left = [x for x in range(v) if x not in prefix and q[x] > 0]
        if len(prefix) == k or not left:
            yield tuple(prefix) + (None,) * (k - len(prefix)), prob
            return
        mass = sum(q[x] for x in left)
        for x in left:
            yield from rec(prefix + [x], prob * q[x] / mass)
    yield from rec([], 1.0)


def _brute_force(p, q, k, rule):
    """The rule walked through candidate by candidate in plain Python, for every tuple: (law, rank probs)."""
    v = len(p)
    law, ranks = np.zeros(v), np.zeros(k)
    for xs, prob in _tuples(q, k, replace=rule in (IID, NO_UPDATE)):
        r, reach, drawn = np.array(p, dtype=float), 1.0, []
        for i, x in enumerate(xs):
            if x is None:
                break
            pool = [y for y in range(v) if y not in drawn] if rule == WOR else list(range(v))
            mass = sum(q[y] for y in pool)
            q_i = np.array([q[y] / mass if y in pool else 0.0 for y in range(v)])
            q_div = q_i if rule in (IID, WOR) else np.asarray(q, dtype=float)
            a = min(1.0, r[x] / q_div[x])
            law[x] += prob * reach * a
            ranks[i] += prob * reach * a
            reach *= 1.0 - a
            drawn.append(x)
            if rule != NO_UPDATE:
                resid = np.maximum(r - q_div, 0.0)
                r = resid / resid.sum() if resid.sum() > 0 else r
        final = r
        if rule == NO_UPDATE:
            resid = np.maximum(np.asarray(p) - np.asarray(q), 0.0)
            final = resid / resid.sum() if resid.sum() > 0 else np.asarray(p)
        law += prob * reach * final
    return law, ranks


def _pair(v, seed, conc_q=0.4):
    rng = np.random.default_rng(seed)
    return rng.dirichlet(np.ones(v)), rng.dirichlet(np.full(v, conc_q))


@pytest.mark.parametrize("rule", list(RULES))
@pytest.mark.parametrize("v, k, seed", [(3, 2, 0), (4, 3, 1), (5, 2, 2), (3, 4, 3), (7, 4, 4)])
def test_law_and_rank_probabilities_match_brute_force_enumeration(rule, v, k, seed):
    p, q = _pair(v, seed)
    law, ranks = multidraft_distribution(p, q, k, rule)
    bf_law, bf_ranks = _brute_force(p, q, k, rule)
    np.testing.assert_allclose(law, bf_law, atol=1e-14)
    np.testing.assert_allclose(ranks, bf_ranks, atol=1e-14)
    if rule in (IID, WOR):
        np.testing.assert_allclose(law, p, atol=1e-15)


def test_without_replacement_at_the_page_limit_is_exact_and_follows_only_reachable_branches():
    """V = 16, k = 5 (the trees page's limit): the enumeration skips the rejection paths of probability 0 (a token
    already drawn, or one always kept), so it is fast; the law is still p to rounding and the ranks a distribution."""
    p, q = proof_cases.preset_pair("dirichlet", 16, 0)
    law, ranks = multidraft_distribution(p, q, 5, WOR)
    np.testing.assert_allclose(law, p, atol=1e-15)
    assert np.all(ranks >= 0) and ranks.sum() < 1 and np.all(np.diff(np.cumsum(ranks)) >= 0)
    wrong = multidraft_distribution(p, q, 5, WOR_RATIO_Q)[0]
    assert abs(wrong.sum() - 1) < 1e-13 and np.abs(wrong - p).max() > 1e-3


def test_the_wrong_variants_are_really_wrong_and_still_laws():
    p, q = proof_cases.preset_pair("q_sharper", 10)
    for rule in (NO_UPDATE, WOR_RATIO_Q):
        law = multidraft_distribution(p, q, 3, rule)[0]
        assert abs(law.sum() - 1.0) < 1e-14 and law.min() >= 0
        assert np.abs(law - p).max() > 0.03, rule
    # with one candidate every variant is the single-draft rule: exact
    for rule in RULES:
        np.testing.assert_allclose(multidraft_distribution(p, q, 1, rule)[0], p, atol=1e-15)


def test_ten_thousand_random_pairs_at_machine_precision():
    p, q, _ = proof_cases.random_pairs(10_000, seed=0)                           # V in 2..49
    r = exhaustive_multidraft_check(p, q, 4, IID)
    assert r["pairs"] == 10_000 and r["max_law_error"] < 1e-15
    p, q, _ = proof_cases.random_pairs(10_000, seed=1, v_hi=10)                  # enumeration: V <= 10, k = 3
    r = exhaustive_multidraft_check(p, q, 3, WOR)
    assert r["max_law_error"] < 1e-15
    assert r["mean_acceptance"] > exhaustive_multidraft_check(p, q, 3, IID)["mean_acceptance"]


def test_acceptance_grows_with_k_and_without_replacement_accepts_more():
    p, q = proof_cases.preset_pair("q_sharper", 10)
    iid, wor = acceptance_by_k(p, q, 6, IID), acceptance_by_k(p, q, 6, WOR)
    assert iid[0] == pytest.approx(acceptance_rate(p, q), abs=1e-15) == wor[0]
    assert np.all(np.diff(iid) > 0) and np.all(np.diff(wor) > 0)
    assert np.all(wor[1:] > iid[1:])
    # i.i.d.: 1 - prod_i (1 - alpha_i), alpha_i the single-draft acceptance of the residual chain
    r, reject = p, 1.0
    for _ in range(6):
        reject *= 1.0 - acceptance_rate(r, q)
        resid = np.maximum(r - q, 0.0)
        r = resid / resid.sum()
    assert iid[-1] == pytest.approx(1.0 - reject, abs=1e-15)


def test_edges_identical_disjoint_one_hot_and_an_exhausted_pool():
    p, _ = proof_cases.preset_pair("identical", 6)
    with np.errstate(all="raise", under="ignore"):
        law, ranks = multidraft_distribution(p, p, 4, WOR)
    np.testing.assert_array_equal(ranks, [1.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(law, p, atol=1e-16)
    p, q = proof_cases.preset_pair("disjoint", 8)
    for rule in (IID, WOR):
        law, ranks = multidraft_distribution(p, q, 3, rule)
        np.testing.assert_allclose(law, p, atol=1e-16)
        assert ranks.sum() == 0.0
    # q one-hot: without replacement the pool is empty after one draw, so the rest is the residual
    p, q = np.array([0.2, 0.5, 0.3]), np.array([0.0, 1.0, 0.0])
    law, ranks = multidraft_distribution(p, q, 3, WOR)
    np.testing.assert_allclose(law, p, atol=1e-16)
    np.testing.assert_allclose(ranks, [0.5, 0.0, 0.0])
    tokens, rank = sample_multidraft(p, q, 3, 2_000, WOR, seed=0)
    assert set(np.unique(rank)) == {0, 1} and np.all(tokens[rank == 1] == 1)
    # greedy: p one-hot, argmax match is the only way to be kept and the output is the argmax
    g = np.array([0.0, 0.0, 1.0])
    law, ranks = multidraft_distribution(g, np.array([0.5, 0.25, 0.25]), 3, IID)
    np.testing.assert_array_equal(law, g)


def test_batched_over_leading_axes_matches_row_by_row():
    rng = np.random.default_rng(4)
    p, q = rng.dirichlet(np.ones(5), size=(2, 3)), rng.dirichlet(np.full(5, 0.5), size=(2, 3))
    for rule in RULES:
        law, ranks = multidraft_distribution(p, q, 3, rule)
        assert law.shape == (2, 3, 5) and ranks.shape == (2, 3, 3)
        for idx in np.ndindex(2, 3):
            row_law, row_ranks = multidraft_distribution(p[idx], q[idx], 3, rule)
            np.testing.assert_allclose(law[idx], row_law, atol=1e-16)
            np.testing.assert_allclose(ranks[idx], row_ranks, atol=1e-16)


@pytest.mark.parametrize("k, message",
                         [(0, r"\[1, 8\]"), (K_MAX + 1, r"\[1, 8\]"), (True, "integer"), (2.0, "integer")])
def test_bad_k_is_refused_naming_the_range(k, message):
    with pytest.raises(ValueError, match=message):
        multidraft_distribution([0.5, 0.5], [0.5, 0.5], k)


def test_bad_rule_and_too_large_enumeration_are_refused():
    with pytest.raises(ValueError, match="rule must be one of"):
        multidraft_distribution([0.5, 0.5], [0.5, 0.5], 2, "fast")
    p, q, _ = proof_cases.random_pairs(200, seed=0)
    with pytest.raises(ValueError, match="batch x V\\^k must be at most"):
        multidraft_distribution(p, q, 5, WOR)
    with pytest.raises(ValueError, match="1-D"):
        sample_multidraft(p[:2], q[:2], 2, 10)


# ------------------------------------------------------------ sampled check ----
def _power(law, p, n=N_DRAWS, level=LEVEL):
    """Power of the level-`level` chi-square test with n draws from `law` when the null is p."""
    if np.any((p == 0) & (law > 0)):
        return 1.0 - (1.0 - law[p == 0].sum()) ** n
    cells = p > 0
    dof = int(cells.sum()) - 1
    noncentrality = n * np.sum((law[cells] - p[cells]) ** 2 / p[cells])
    return stats.ncx2.sf(stats.chi2.isf(level, dof), dof, noncentrality)


CASE = proof_cases.preset_pair("q_sharper", 10)


@pytest.mark.parametrize("rule", [IID, WOR])
def test_exact_rules_pass_chi_square_and_their_ranks_fit(rule):
    p, q = CASE
    c = check_multidraft(p, q, 3, rule, N_DRAWS, seed=7)
    assert c.p_value > LEVEL and c.max_error < 1e-15
    # the kept rank (0 = all rejected) fits the exact rank probabilities
    ranks = multidraft_distribution(p, q, 3, rule)[1]
    expected = np.r_[1.0 - ranks.sum(), ranks]
    rank = sample_multidraft(p, q, 3, N_DRAWS, rule, seed=8)[1]
    assert chi_square_gof(np.bincount(rank, minlength=4), expected)[2] > LEVEL


def test_exact_rule_p_values_are_uniform_across_seeds():
    p, q = CASE
    pvals = [check_multidraft(p, q, 3, WOR, 2_000, seed=s).p_value for s in range(40)]
    assert stats.kstest(pvals, "uniform").pvalue > LEVEL


@pytest.mark.parametrize("rule", [NO_UPDATE, WOR_RATIO_Q])
def test_chi_square_rejects_each_wrong_variant_at_the_same_sample_size(rule):
    p, q = CASE
    law = multidraft_distribution(p, q, 3, rule)[0]
    assert _power(law, p) > MIN_POWER
    c = check_multidraft(p, q, 3, rule, N_DRAWS, seed=7)
    assert c.p_value < LEVEL
    tokens = sample_multidraft(p, q, 3, N_DRAWS, rule, seed=7)[0]
    assert chi_square_gof(np.bincount(tokens, minlength=p.size), law)[2] > LEVEL    # its own law fits


# ------------------------------------------------------------ typical acceptance ----
def _typical_brute_force(p, q, k, eps, delta, candidates):
    """Typical acceptance over every candidate tuple, in plain Python."""
    h = -sum(x * np.log(x) for x in p if x > 0)
    tau = min(eps, delta * np.exp(-h))
    fallback = np.array([x if x >= tau else 0.0 for x in p])
    fallback /= fallback.sum()
    if candidates == TOP:
        tuples = [(tuple(sorted(range(len(q)), key=lambda x: (-q[x], x))[:k]), 1.0)]
    else:
        tuples = list(_tuples(q, k, replace=True))
    law = np.zeros(len(p))
    for xs, prob in tuples:
        kept = next((x for x in xs if p[x] > tau), None)
        if kept is None:
            law += prob * fallback
        else:
            law[kept] += prob
    return law, tau


@pytest.mark.parametrize("candidates", [SAMPLED, TOP])
@pytest.mark.parametrize("k, eps, delta, seed", [(1, 0.09, 0.3, 0), (2, 0.2, 0.5, 1), (3, 0.05, 0.9, 2)])
def test_typical_law_matches_brute_force(candidates, k, eps, delta, seed):
    p, q = _pair(5, seed, conc_q=0.7)
    t = typical_distribution(p, q, k, eps, delta, candidates)
    law, tau = _typical_brute_force(p, q, k, eps, delta, candidates)
    assert t.tau == pytest.approx(tau, rel=1e-14)
    np.testing.assert_allclose(t.law, law, atol=1e-14)
    assert t.tv_to_p == pytest.approx(0.5 * np.abs(law - p).sum(), abs=1e-14)


def test_threshold_entropy_and_ranges():
    p, _ = CASE
    assert entropy(p) == pytest.approx(stats.entropy(p), rel=1e-14)
    assert typical_threshold(p) == pytest.approx(min(MEDUSA_EPSILON, MEDUSA_DELTA * np.exp(-stats.entropy(p))))
    assert np.exp(-entropy(p)) <= p.max()                       # so the argmax always clears tau for delta < 1
    for eps, delta in ((-0.1, 0.3), (0.09, 1.5), (float("nan"), 0.3), (True, 0.3)):
        with pytest.raises(ValueError, match=r"in \[0, 1\]"):
            typical_distribution(p, p, 1, eps, delta)
    with pytest.raises(ValueError, match="candidates must be one of"):
        typical_distribution(p, p, 1, candidates="beam")


def test_typical_is_biased_even_with_a_perfect_draft_and_exact_for_greedy():
    p, _ = CASE
    t = typical_distribution(p, p, 1)
    assert t.tv_to_p > 0.05                                     # the tail below tau is cut even when q == p
    tau = typical_threshold(p)
    assert np.all(t.law[p <= tau] < p[p <= tau])
    one_hot = np.eye(6)[2]                                      # temperature 0: argmax match is exact
    for candidates in (SAMPLED, TOP):
        assert typical_distribution(one_hot, np.full(6, 1 / 6), 3, candidates=candidates).tv_to_p == 0.0


def test_tv_curve_moves_with_delta_and_epsilon():
    p, q = CASE
    tv, acc = tv_curve(p, q, 2, np.linspace(0.0, 1.0, 11), vary="delta")
    assert tv.shape == acc.shape == (11,) and tv.max() - tv.min() > 0.01
    assert np.all(np.diff(acc) <= 1e-15)                        # a higher bar keeps fewer candidates
    tv_e, _ = tv_curve(p, q, 2, [0.0, 0.04, 0.5], vary="epsilon")
    assert tv_e[0] != tv_e[1]
    with pytest.raises(ValueError, match="vary"):
        tv_curve(p, q, 2, [0.1], vary="gamma")


def test_chi_square_rejects_typical_acceptance_and_passes_the_exact_rule_on_the_same_test():
    """Same pair, k and n: the exact multi-draft rule is consistent with p, typical acceptance is rejected
    (its exact bias gives power > MIN_POWER), and its draws fit its own computed law."""
    p, q = CASE
    law = typical_distribution(p, q, 2).law
    assert _power(law, p) > MIN_POWER
    typical = check_typical(p, q, 2, N_DRAWS, seed=3)
    exact = check_multidraft(p, q, 2, IID, N_DRAWS, seed=3)
    assert typical.p_value < LEVEL and exact.p_value > LEVEL
    assert typical.kept > exact.kept                            # it is faster: it keeps more candidates
    tokens, kept = sample_typical(p, q, 2, N_DRAWS, seed=4)
    assert chi_square_gof(np.bincount(tokens, minlength=p.size), law)[2] > LEVEL
    acc = typical_distribution(p, q, 2).acceptance
    assert abs(kept.mean() - acc) < 5 * np.sqrt(acc * (1 - acc) / N_DRAWS) + 1e-12
