"""The Monte Carlo of speculative steps against the exact law of N, by chi-square with fixed seeds.

Every goodness-of-fit test is paired with a negative control (the same sample against a nearby wrong
law) that must be rejected, and the power of that control is computed, not assumed: with 200,000
steps at level 1e-3, a shift of alpha by 0.004 (gamma 8) to 0.007 (gamma 4) is caught with power > 0.999.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from specdec_core.algebra import accepted_length_pmf, accepted_length_pmf_positional, expected_tokens
from specdec_core.simulate import (
    MAX_STEPS,
    acceptance_thresholds,
    empirical_pmf,
    percentile_of_counts,
    simulate_tokens_per_step,
    summarise,
)

N_STEPS = 200_000
LEVEL = 1e-3          # reject the simulator if p < LEVEL (false alarm rate 0.1% per fixed seed)


def chi_square_p(tokens: np.ndarray, pmf: np.ndarray) -> float:
    """p-value of Pearson's chi-square of observed counts of N = 1..len(pmf) against pmf (zero cells dropped)."""
    counts = np.bincount(tokens - 1, minlength=pmf.size)
    assert counts.size == pmf.size, "a step emitted more than gamma + 1 tokens"
    keep = pmf > 0
    assert counts[~keep].sum() == 0, "an impossible N was simulated"
    return float(stats.chisquare(counts[keep], tokens.size * pmf[keep]).pvalue)


def power(pmf_true: np.ndarray, pmf_null: np.ndarray, n: int, level: float = LEVEL) -> float:
    """Power of the chi-square test at `level` to reject pmf_null when the data follow pmf_true (noncentral chi2)."""
    keep = pmf_null > 0
    lam = n * float(np.sum((pmf_true[keep] - pmf_null[keep]) ** 2 / pmf_null[keep]))
    df = int(keep.sum()) - 1
    return float(stats.ncx2.sf(stats.chi2.isf(level, df), df, lam))


@pytest.mark.parametrize("alpha, gamma, wrong_alpha", [(0.8, 8, 0.796), (0.3, 4, 0.307), (0.95, 16, 0.948)])
def test_constant_alpha_matches_exact_pmf(alpha, gamma, wrong_alpha):
    tokens = simulate_tokens_per_step(np.full(gamma, alpha), N_STEPS, seed=1234)
    exact = accepted_length_pmf(alpha, gamma)
    assert chi_square_p(tokens, exact) > LEVEL
    # Negative control: the law of a slightly different alpha must be rejected, and the test had the power to.
    wrong = accepted_length_pmf(wrong_alpha, gamma)
    assert power(exact, wrong, N_STEPS) > 0.999
    assert chi_square_p(tokens, wrong) < LEVEL


def test_per_position_rates_match_and_order_matters():
    rates = np.array([0.9, 0.3, 0.9, 0.6])
    tokens = simulate_tokens_per_step(rates, N_STEPS, seed=7)
    exact = accepted_length_pmf_positional(rates)
    assert chi_square_p(tokens, exact) > LEVEL
    # Negative controls: the same rates in another order, and the constant rate with the same mean.
    for wrong in (accepted_length_pmf_positional(rates[::-1]), accepted_length_pmf(rates.mean(), rates.size)):
        assert power(exact, wrong, N_STEPS) > 0.999
        assert chi_square_p(tokens, wrong) < LEVEL


def test_mean_within_its_confidence_interval():
    alpha, gamma = 0.8, 8
    tokens = simulate_tokens_per_step(np.full(gamma, alpha), 1_000_000, seed=99)
    pmf = accepted_length_pmf(alpha, gamma)
    k = np.arange(1, gamma + 2)
    sd = np.sqrt(pmf @ k**2 - (pmf @ k) ** 2)
    assert abs(tokens.mean() - expected_tokens(alpha, gamma)) < 4 * sd / np.sqrt(tokens.size)


def test_chunking_keeps_the_law():
    rates = np.full(6, 0.7)
    tokens = simulate_tokens_per_step(rates, 50_000, seed=3, chunk=777)     # many uneven chunks
    assert tokens.size == 50_000
    assert chi_square_p(tokens, accepted_length_pmf(0.7, 6)) > LEVEL
    # Negative control at the same size: alpha 0.69 is caught with power > 0.9999, and is.
    wrong = accepted_length_pmf(0.69, 6)
    assert power(accepted_length_pmf(0.7, 6), wrong, tokens.size) > 0.9999
    assert chi_square_p(tokens, wrong) < LEVEL


def test_edges_are_exact():
    assert np.all(simulate_tokens_per_step([1.0, 1.0, 1.0], 10_000) == 4)
    assert np.all(simulate_tokens_per_step([0.0, 1.0, 1.0], 10_000) == 1)
    assert set(np.unique(simulate_tokens_per_step([0.5, 0.0, 1.0], 10_000))) == {1, 2}
    assert np.all(simulate_tokens_per_step([], 100) == 1)                   # gamma = 0
    assert simulate_tokens_per_step([0.5], 1).shape == (1,)


def test_thresholds_are_within_two_to_minus_33():
    a = np.array([0.0, 1e-12, 0.1, 0.5, 0.8, 1 - 1e-12, 1.0])
    t = acceptance_thresholds(a)
    assert t[0] == 0 and t[-1] == 2**32
    assert np.all(np.abs(t / 2**32 - a) <= 2.0**-33)


def test_seeding_is_reproducible():
    a = simulate_tokens_per_step([0.6] * 5, 1000, seed=5)
    assert np.array_equal(a, simulate_tokens_per_step([0.6] * 5, 1000, seed=5))
    assert not np.array_equal(a, simulate_tokens_per_step([0.6] * 5, 1000, seed=6))
    rng = np.random.default_rng(5)
    assert not np.array_equal(simulate_tokens_per_step([0.6] * 5, 1000, rng),
                              simulate_tokens_per_step([0.6] * 5, 1000, rng))   # a Generator advances


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        (dict(alphas=[0.5], n_steps=0), "n_steps must be an integer in [1,"),
        (dict(alphas=[0.5], n_steps=1.5), "n_steps"),
        (dict(alphas=[0.5], n_steps=True), "n_steps"),
        (dict(alphas=[0.5], n_steps=MAX_STEPS + 1), "n_steps"),
        (dict(alphas=[1.5], n_steps=10), "[0, 1]"),
        (dict(alphas=[[0.5]], n_steps=10), "1-D"),
        (dict(alphas=[0.5], n_steps=10, chunk=0), "chunk must be an integer >= 1"),
    ],
)
def test_bad_input(kwargs, fragment):
    with pytest.raises(ValueError) as err:
        simulate_tokens_per_step(**kwargs)
    assert fragment in str(err.value)


def test_empirical_pmf_and_summary():
    tokens = np.array([1, 1, 2, 4, 4, 4])
    np.testing.assert_allclose(empirical_pmf(tokens, 3), [2 / 6, 1 / 6, 0, 3 / 6])
    with pytest.raises(ValueError, match=r"\[1, 3\]"):
        empirical_pmf(tokens, 2)
    s = summarise(tokens)
    assert s == {"mean": pytest.approx(16 / 6), "p50": 3.0, "p99": 4.0}
    with pytest.raises(ValueError):
        summarise(np.array([], dtype=np.int64))


def test_percentile_of_counts_is_numpys_percentile_bit_for_bit():
    rng = np.random.default_rng(3)
    qs = [0, 1, 25, 33.3, 50, 62.5, 90, 99, 99.9, 100]
    for _ in range(300):
        x = rng.integers(0, rng.integers(1, 9), size=rng.integers(1, 60))
        for q in qs:
            assert percentile_of_counts(np.bincount(x), q) == float(np.percentile(x, q)), (x, q)
    assert percentile_of_counts(np.bincount([1, 2]), 50) == 1.5            # between two order statistics
    assert percentile_of_counts(np.bincount([1, 2]), 50) != 2.0            # not the nearest-rank answer
    with pytest.raises(ValueError):
        percentile_of_counts(np.zeros(3, dtype=np.int64), 50)
