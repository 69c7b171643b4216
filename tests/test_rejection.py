"""The accept/resample rule: exact law == p, alpha == 1 - TV, edges, the sampled check with a stated
power, negative controls for every named mistake, and the two-position Markov enumeration."""

import numpy as np
import pytest
from scipy import stats

from specdec_core.mistakes import (
    all_rules,
    correct_rule,
    naive_normalisation_rule,
    raw_logits_rule,
    resample_from_p_rule,
    wrong_q_rule,
)
from specdec_core.multiposition import (
    joint_emitted_two_positions,
    markov_example,
    position_alphas,
    target_joint,
    two_position_check,
)
from specdec_core.proof_cases import (
    PRESETS,
    case_from_logits,
    case_from_pair,
    exhaustive_check,
    logits_pair,
    parse_vector,
    preset_pair,
    random_pairs,
)
from specdec_core.rejection import (
    acceptance_probability,
    acceptance_rate,
    emitted_distribution,
    empirical_law,
    match_acceptance,
    residual_distribution,
    speculative_sample,
    total_variation,
)
from specdec_core.stats import chi_square_gof

N_DRAWS = 20_000     # one sample size for the correct sampler and every negative control
LEVEL = 1e-3         # reject when p-value < LEVEL: a 0.1% false-alarm rate for the correct sampler
MIN_POWER = 0.999    # each negative control is sized so the test catches it with at least this power


# ------------------------------------------------------------------ exact law ----
def test_seed_exhaustive_check_in_one_batched_call():
    p, q, vocab = random_pairs(10_000, seed=0)
    assert p.shape == (10_000, 49) and vocab.min() == 2 and vocab.max() == 49
    result = exhaustive_check(p, q)
    assert result["max_law_error"] < 1e-15          # the seed reports about 3e-16
    assert result["max_alpha_error"] < 1e-15


def test_identical_draft_one_hot_gives_p_and_alpha_one_without_division_by_zero():
    with np.errstate(all="raise"):
        law, alpha = emitted_distribution([1.0, 0.0], [1.0, 0.0])
        r = residual_distribution([1.0, 0.0], [1.0, 0.0])
    np.testing.assert_array_equal(law, [1.0, 0.0])
    assert alpha == 1.0
    np.testing.assert_array_equal(r, [1.0, 0.0])


@pytest.mark.parametrize("seed", range(5))
def test_exact_law_on_random_pairs_including_equal_and_disjoint(seed):
    rng = np.random.default_rng(seed)
    v = int(rng.integers(2, 51))
    p = rng.dirichlet(np.ones(v))
    q = rng.dirichlet(np.full(v, 0.3))
    disjoint_p = np.r_[p[: v // 2] / p[: v // 2].sum(), np.zeros(v - v // 2)]
    disjoint_q = np.r_[np.zeros(v // 2), q[v // 2:] / q[v // 2:].sum()]
    for pp, qq, expected_alpha in [(p, q, None), (p, p, 1.0), (disjoint_p, disjoint_q, 0.0)]:
        with np.errstate(all="raise"):
            law, alpha = emitted_distribution(pp, qq)
        np.testing.assert_allclose(law, pp, atol=1e-15)
        assert alpha == pytest.approx(1.0 - total_variation(pp, qq), abs=1e-15)
        assert acceptance_rate(pp, qq) == pytest.approx(alpha, abs=1e-15)
        if expected_alpha is not None:
            assert alpha == pytest.approx(expected_alpha, abs=1e-15)
    # disjoint: nothing is ever accepted, so the residual is p itself
    np.testing.assert_allclose(residual_distribution(disjoint_p, disjoint_q), disjoint_p, atol=1e-16)


def test_batched_over_leading_axes_matches_row_by_row():
    rng = np.random.default_rng(3)
    p = rng.dirichlet(np.ones(7), size=(3, 4))          # (3, 4, 7)
    q = rng.dirichlet(np.full(7, 0.5), size=(3, 4))
    law, alpha = emitted_distribution(p, q)
    assert law.shape == (3, 4, 7) and alpha.shape == (3, 4)
    for idx in np.ndindex(3, 4):
        row_law, row_alpha = emitted_distribution(p[idx], q[idx])
        np.testing.assert_array_equal(law[idx], row_law)
        assert alpha[idx] == row_alpha
    # one q broadcast against a batch of p
    law_b, _ = emitted_distribution(p, q[0, 0])
    np.testing.assert_allclose(law_b, p, atol=1e-15)


def test_q_zero_where_p_positive_enters_only_through_the_residual():
    p = np.array([0.5, 0.3, 0.2])
    q = np.array([0.7, 0.0, 0.3])
    np.testing.assert_array_equal(acceptance_probability(p, q), [0.5 / 0.7, 0.0, 0.2 / 0.3])
    np.testing.assert_allclose(residual_distribution(p, q), [0.0, 1.0, 0.0])
    tokens, kept = speculative_sample(p, q, 50_000, seed=0)
    assert not np.any(kept & (tokens == 1))             # token 1 is never proposed, so never kept
    assert np.any(~kept & (tokens == 1))                # it arrives as the correction


@pytest.mark.parametrize(
    "p, q, message",
    [
        ([0.5, 0.5], [0.5, 0.25, 0.25], "same vocabulary"),
        ([1.2, -0.2], [0.5, 0.5], "p must be non-negative"),
        ([0.5, 0.4], [0.5, 0.5], "p must sum to 1"),
        ([0.5, 0.5], [0.7, 0.7], "q must sum to 1"),
        ([0.5, np.nan], [0.5, 0.5], "p must be finite"),
    ],
)
def test_bad_vectors_are_refused(p, q, message):
    with pytest.raises(ValueError, match=message):
        emitted_distribution(p, q)


def test_sampler_refuses_out_of_range_n_and_never_draws_zero_mass_tokens():
    with pytest.raises(ValueError, match=r"\[1, 1,000,000\]"):
        speculative_sample([0.5, 0.5], [0.5, 0.5], 0)
    with pytest.raises(ValueError, match=r"\[1, 1,000,000\]"):
        speculative_sample([0.5, 0.5], [0.5, 0.5], 1_000_001)
    tokens, _ = speculative_sample([0.0, 0.5, 0.0, 0.5], [0.0, 0.9, 0.1, 0.0], 100_000, seed=1)
    assert set(np.unique(tokens)) == {1, 3}


# ------------------------------------------------------------ sampled check ----
def _case():
    """A from-logits case where every mistake bites: target T 0.6 top-p 0.9, draft T 0.8 top-k 5."""
    z_p, z_q = logits_pair(8, seed=1, noise=1.0)
    return case_from_logits(z_p, z_q, (0.6, 0, 0.9), (0.8, 5, 1.0))


def _power(law, p, n=N_DRAWS, level=LEVEL):
    """Power of the level-`level` chi-square test with n draws from `law` when the null is p."""
    if np.any((p == 0) & (law > 0)):
        return 1.0 - (1.0 - law[p == 0].sum()) ** n       # any draw in a p = 0 cell rejects
    cells = p > 0
    dof = int(cells.sum()) - 1
    noncentrality = n * np.sum((law[cells] - p[cells]) ** 2 / p[cells])
    return stats.ncx2.sf(stats.chi2.isf(level, dof), dof, noncentrality)


def test_correct_sampler_passes_chi_square():
    case = _case()
    tokens, kept = speculative_sample(case.p, case.q, N_DRAWS, seed=11)
    stat, dof, pval = chi_square_gof(np.bincount(tokens, minlength=case.p.size), case.p)
    assert pval > LEVEL, (stat, dof, pval)
    # the kept fraction estimates alpha (binomial 5-sigma band)
    alpha = acceptance_rate(case.p, case.q)
    assert abs(kept.mean() - alpha) < 5 * np.sqrt(alpha * (1 - alpha) / N_DRAWS)


def test_correct_sampler_p_values_are_uniform_across_seeds():
    """Over 60 seeds the correct sampler's p-values are uniform (KS test): no bias hides in a lucky seed."""
    case = _case()
    pvals = [
        chi_square_gof(np.bincount(speculative_sample(case.p, case.q, 2_000, seed=s)[0], minlength=8), case.p)[2]
        for s in range(60)
    ]
    assert stats.kstest(pvals, "uniform").pvalue > LEVEL


@pytest.mark.parametrize("name", ["resample_p", "raw_logits", "wrong_q"])
def test_chi_square_rejects_each_biased_mistake_at_the_same_sample_size(name):
    case = _case()
    rule = {r.name: r for r in all_rules(case.p, case.q, case.p_raw, case.q_claimed)}[name]
    law = rule.law()
    assert np.abs(law - case.p).max() > 0.01                          # the bias is real
    assert _power(law, case.p) > MIN_POWER                            # the stated power at N_DRAWS
    tokens, _ = rule.sample(N_DRAWS, seed=11)
    counts = np.bincount(tokens, minlength=case.p.size)
    assert chi_square_gof(counts, case.p)[2] < LEVEL                  # ... and it is caught
    assert chi_square_gof(counts, law)[2] > LEVEL                     # while its own law fits


def test_naive_normalisation_is_fine_with_a_residual_and_nan_without_one():
    case = _case()
    np.testing.assert_allclose(naive_normalisation_rule(case.p, case.q).law(), case.p, atol=1e-15)
    p = preset_pair("identical", 6)[0]
    naive = naive_normalisation_rule(p, p)
    assert not naive.is_defined()
    assert np.all(np.isnan(naive.law()))                              # 0/0: the law is undefined
    with pytest.raises(ValueError, match="finite"):
        chi_square_gof(np.full(6, 10), naive.law())                   # the check refuses it
    assert correct_rule(p, p).is_defined()
    np.testing.assert_array_equal(correct_rule(p, p).law(), p)


def test_resample_from_p_law_and_where_it_over_weights():
    p, q = preset_pair("q_sharper", 10)
    alpha = acceptance_rate(p, q)
    law = resample_from_p_rule(p, q).law()
    np.testing.assert_allclose(law, np.minimum(p, q) + (1 - alpha) * p, atol=1e-15)
    ratio = law / p                                                   # = 2 - alpha exactly where q >= p
    np.testing.assert_allclose(ratio[q >= p], 2 - alpha, rtol=1e-12)
    assert np.all(ratio[q < p] < 2 - alpha)


def test_raw_logits_mistake_emits_the_raw_law_and_wrong_q_matches_its_formula():
    case = _case()
    np.testing.assert_allclose(raw_logits_rule(case.p_raw, case.q).law(), case.p_raw, atol=1e-15)
    rule = wrong_q_rule(case.p, case.q, case.q_claimed)
    assert np.any(case.q_claimed == 0)                                  # the target's top-p zeroes the wrong q
    with np.errstate(divide="ignore", invalid="ignore"):                # where it is 0: p/0 keeps if p > 0
        a = np.where(case.q_claimed > 0, np.minimum(1.0, case.p / case.q_claimed), case.p > 0)
    r = np.maximum(case.p - case.q_claimed, 0.0)
    expected = case.q * a + (1 - (case.q * a).sum()) * r / r.sum()
    np.testing.assert_allclose(rule.law(), expected, atol=1e-15)


@pytest.mark.parametrize("preset", list(PRESETS))
def test_every_preset_is_a_valid_pair_and_emits_p(preset):
    p, q = preset_pair(preset, 9, seed=2)
    case = case_from_pair(p, q)
    law, alpha = emitted_distribution(case.p, case.q)
    np.testing.assert_allclose(law, case.p, atol=1e-15)
    np.testing.assert_allclose(case.p_raw.sum(), 1.0)
    expected = {"identical": 1.0, "disjoint": 0.0}.get(preset)
    if expected is None:
        assert 0.05 < alpha < 0.95
    else:
        assert alpha == pytest.approx(expected, abs=1e-15)
    if preset == "q_zero":
        assert np.any((q == 0) & (p > 0))


def test_parse_vector_messages():
    np.testing.assert_array_equal(parse_vector("0.5, 0.25 0.25", "p"), [0.5, 0.25, 0.25])
    with pytest.raises(ValueError, match="numbers separated by commas"):
        parse_vector("0.5, abc", "p")
    with pytest.raises(ValueError, match="2 to 50 entries"):
        parse_vector("1", "q")


# ----------------------------------------------------------- two positions ----
@pytest.mark.parametrize("v, seed, conc", [(2, 0, 1.0), (3, 1, 0.3), (4, 2, 0.3), (5, 3, 3.0)])
def test_two_position_joint_law_equals_target_joint(v, seed, conc):
    p1, P2, q1, Q2 = markov_example(v, seed, conc)
    joint = joint_emitted_two_positions(p1, P2, q1, Q2)
    np.testing.assert_allclose(joint, target_joint(p1, P2), atol=1e-15)
    # not trivial: the draft's own joint law is far from the target's
    assert np.abs(target_joint(q1, Q2) - target_joint(p1, P2)).max() > 0.02
    a1, a2 = position_alphas(p1, P2, q1, Q2)
    assert a1 == pytest.approx(acceptance_rate(p1, q1)) and a2.shape == (v,)
    assert a2[0] == pytest.approx(acceptance_rate(P2[0], Q2[0]))


def test_two_position_check_bundles_the_page_numbers():
    r = two_position_check(3, 0, 0.5)
    assert r["max_error"] < 1e-15 and r["alpha_2"].shape == (3,)
    np.testing.assert_allclose(r["emitted"].sum(), 1.0)


def test_two_position_sampled_joint_matches_the_enumeration_and_rejects_a_wrong_rule():
    """Two positions sampled through the real rule fit the enumerated joint (chi-square, 9 cells); the same
    draws reject the joint a resample-from-p verifier would emit at position 1 (stated power > MIN_POWER)."""
    p1, P2, q1, Q2 = markov_example(3, 1, 0.3)
    rng = np.random.default_rng(5)
    t1 = speculative_sample(p1, q1, N_DRAWS, rng)[0]
    t2 = np.empty_like(t1)
    for x in range(3):
        idx = np.flatnonzero(t1 == x)
        t2[idx] = speculative_sample(P2[x], Q2[x], idx.size, rng)[0] if idx.size else t2[idx]
    counts = np.bincount(3 * t1 + t2, minlength=9)
    enumerated = joint_emitted_two_positions(p1, P2, q1, Q2).ravel()
    assert chi_square_gof(counts, enumerated)[2] > LEVEL
    # Negative control: position 1 resampled from p (then the correct position 2): a biased joint.
    first = resample_from_p_rule(p1, q1).law()
    assert np.abs(first - p1).max() > 0.01 and abs(first.sum() - 1.0) < 1e-15
    wrong = (first[:, None] * P2).ravel()
    assert _power(enumerated, wrong) > MIN_POWER
    assert chi_square_gof(counts, wrong)[2] < LEVEL


def test_empirical_law_counts():
    np.testing.assert_array_equal(empirical_law(np.array([0, 2, 2, 2]), 4), [0.25, 0, 0.75, 0])


# ---------------------------------------------------------- property test ----
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _law(weights: list[float]) -> np.ndarray:
    w = np.asarray(weights)
    return w / w.sum()


_entry = st.one_of(st.just(0.0), st.floats(1e-6, 1.0))


@settings(max_examples=200, deadline=None)
@given(st.lists(_entry, min_size=2, max_size=50).filter(lambda w: sum(w) > 0), st.booleans(), st.data())
def test_exact_law_identity_for_arbitrary_pairs(wp, same, data):
    """Any p, q over the same vocabulary (zeros, ties and p == q included): law == p, alpha == 1 - TV."""
    wq = wp if same else data.draw(st.lists(_entry, min_size=len(wp), max_size=len(wp)).filter(lambda w: sum(w) > 0))
    p, q = _law(wp), _law(wq)
    with np.errstate(all="raise", under="ignore"):
        law, alpha = emitted_distribution(p, q)
    np.testing.assert_allclose(law, p, atol=4e-16)
    assert abs(alpha - (1.0 - total_variation(p, q))) < 1e-15


# ------------------------------------------------ the seed's own loop, exactly ----
def _seed_emitted_distribution(p, q):
    """The seed document's function, verbatim in its arithmetic."""
    accept = np.minimum(p, q)
    alpha = accept.sum()
    resid = np.maximum(p - q, 0.0)
    if resid.sum() > 0:
        resid = resid / resid.sum()
    return accept + (1 - alpha) * resid, alpha


def test_seed_loop_reproduces_the_seeds_printed_number():
    """The seed's loop (its generator, its order of draws) run with the seed's own function and with the core's
    emitted_distribution meets the same worst pair: 3.3e-16, as the seed prints. The batched variant draws other
    pairs (gamma variates, padded) and meets 2.2e-16: the number depends on the pairs, not on the rule."""
    from specdec_core.proof_cases import seed_loop_check

    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(10_000):
        V = rng.integers(2, 50)
        p, q = rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V) * 0.3)
        out, alpha = _seed_emitted_distribution(p, q)
        assert abs(alpha - (1 - 0.5 * np.abs(p - q).sum())) < 1e-12
        worst = max(worst, np.abs(out - p).max())
    got = seed_loop_check(10_000, seed=0)
    assert got["max_law_error"] == worst
    assert f"{got['max_law_error']:.1e}" == "3.3e-16"
    assert got["max_alpha_error"] < 1e-12
    assert f"{exhaustive_check(*random_pairs(10_000, seed=0)[:2])['max_law_error']:.1e}" == "2.2e-16"


def test_per_prefix_alpha_2_combine_into_the_alpha_2_of_expected_tokens():
    """alpha_2 = sum_x1 min(p1, q1)(x1) alpha_2(x1) / alpha_1, and 1 + alpha_1 + alpha_1 alpha_2 equals E[N]
    enumerated over every draft path of the round, and a Monte Carlo of the real rule."""
    from specdec_core.proof_cases import two_position_tokens

    for seed in range(6):
        p1, P2, q1, Q2 = markov_example(3, seed, conc=0.5)
        _, per_prefix = position_alphas(p1, P2, q1, Q2)
        t = two_position_tokens(p1, P2, q1, Q2, per_prefix)
        assert t["tokens"] == pytest.approx(t["tokens_enumerated"], abs=1e-13)
        assert t["weights"].sum() == pytest.approx(1.0, abs=1e-13)
        # Monte Carlo: draft x1 ~ q1, keep w.p. min(1, p1/q1); then x2 ~ Q2[x1], keep w.p. min(1, P2/Q2)
        rng = np.random.default_rng(seed)
        n = 200_000
        x1 = (rng.random(n)[:, None] > np.cumsum(q1)[None, :]).sum(1)
        keep1 = rng.random(n) < np.minimum(1, p1[x1] / q1[x1])
        u = rng.random(n)[:, None] > np.cumsum(Q2[x1], axis=1)
        x2 = u.sum(1)
        keep2 = keep1 & (rng.random(n) < np.minimum(1, P2[x1, x2] / Q2[x1, x2]))
        tokens = 1 + keep1 + keep2
        assert abs(tokens.mean() - t["tokens"]) < 5 * tokens.std() / np.sqrt(n)
        assert abs(keep2.sum() / keep1.sum() - t["alpha_2"]) < 5 * np.sqrt(0.25 / keep1.sum())


# ------------------------------------------------------ sample-and-compare ----
def test_sample_and_compare_keeps_sum_pq_sampled_and_never_more_than_alpha():
    """Draw x ~ q and y ~ p apart, keep x iff y = x: the kept fraction estimates sum p q (within 4 sigma), and the
    negative control: it sits far below alpha = 1 - TV, which min(1, p/q) keeps on the same pair."""
    p, q = np.array([0.6, 0.1, 0.3]), np.array([0.2, 0.5, 0.3])
    assert match_acceptance(p, q) == pytest.approx(0.12 + 0.05 + 0.09, abs=1e-15)
    rng = np.random.default_rng(31)
    n = 200_000
    x, y = rng.choice(3, size=n, p=q), rng.choice(3, size=n, p=p)
    kept = float(np.mean(x == y))
    sigma = np.sqrt(0.26 * 0.74 / n)                                            # about 0.001
    assert abs(kept - 0.26) < 4 * sigma
    assert acceptance_rate(p, q) - kept > 100 * sigma                              # 0.6 against 0.26
    assert np.allclose(np.bincount(y, minlength=3) / n, p, atol=0.005)            # it emits y: exactly p


def test_sample_and_compare_equals_alpha_only_for_a_point_mass_or_disjoint_supports():
    rng = np.random.default_rng(5)
    p, q = rng.dirichlet(np.ones(6), size=500), rng.dirichlet(np.ones(6), size=500)
    assert np.all(match_acceptance(p, q) <= acceptance_rate(p, q) + 1e-15)
    assert np.all(match_acceptance(p, q) < acceptance_rate(p, q))                 # strictly, for full supports
    greedy = np.eye(6)[np.argmax(q, axis=-1)]                                      # a greedy draft: one-hot q
    assert np.allclose(match_acceptance(p, greedy), acceptance_rate(p, greedy), atol=1e-15)
    apart = ([0.5, 0.5, 0, 0], [0, 0, 0.5, 0.5])                                  # disjoint supports: both 0
    assert match_acceptance(*apart) == acceptance_rate(*apart) == 0
