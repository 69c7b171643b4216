"""The pure-numpy chi-square test against scipy (a test-only dependency), merging, edges and refusals."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import special, stats

from specdec_core.stats import chi2_sf, chi_square_gof, merge_low_expected, regularized_upper_gamma


@pytest.mark.parametrize("a", [0.5, 1.0, 2.5, 7.0, 24.5, 200.0])
@pytest.mark.parametrize("x_over_a", [0.0, 0.01, 0.3, 0.9, 1.0, 1.1, 2.0, 5.0, 20.0])
def test_regularized_upper_gamma_matches_scipy(a, x_over_a):
    x = a * x_over_a
    ours, ref = regularized_upper_gamma(a, x), special.gammaincc(a, x)
    assert ours == pytest.approx(ref, rel=1e-10, abs=1e-300)


def test_chi2_sf_matches_scipy_over_a_grid_including_far_tails():
    for dof in [1, 2, 3, 5, 10, 48, 100]:
        for stat in [0.0, 0.01, 0.5, dof - 0.5, float(dof), dof + 3.0, 3.0 * dof + 20.0, 500.0]:
            assert chi2_sf(stat, dof) == pytest.approx(stats.chi2.sf(stat, dof), rel=1e-9, abs=1e-300)


def test_gof_without_merging_matches_scipy_chisquare():
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.full(12, 20.0))     # every cell expects well over 5
    counts = rng.multinomial(5_000, probs)
    stat, dof, pval = chi_square_gof(counts, probs)
    ref = stats.chisquare(counts, 5_000 * probs)
    assert dof == 11
    assert stat == pytest.approx(ref.statistic, rel=1e-12)
    assert pval == pytest.approx(ref.pvalue, rel=1e-9)


def test_low_expected_cells_are_pooled_then_tested_like_scipy_on_the_pooled_table():
    probs = np.array([0.5, 0.3, 0.15, 0.03, 0.01, 0.006, 0.004])
    counts = np.array([52, 27, 14, 4, 2, 1, 0])           # n = 100: the last four cells expect < 5
    o, e = merge_low_expected(counts.astype(float), 100 * probs, 5.0)
    # pooled: 3 + 1 + 0.6 + 0.4 = 5.0 expected, observed 4 + 2 + 1 + 0 = 7
    np.testing.assert_allclose(sorted(e), sorted([5.0, 15.0, 30.0, 50.0]))
    assert o.sum() == counts.sum()
    stat, dof, pval = chi_square_gof(counts, probs)
    ref = stats.chisquare([7, 14, 27, 52], [5.0, 15.0, 30.0, 50.0])
    assert dof == 3
    assert stat == pytest.approx(ref.statistic, rel=1e-12)
    assert pval == pytest.approx(ref.pvalue, rel=1e-9)


def test_a_pool_still_below_the_minimum_absorbs_the_next_smallest_cell():
    o, e = merge_low_expected(np.array([1.0, 2.0, 10.0, 40.0]), np.array([1.0, 2.0, 9.0, 38.0]), 5.0)
    np.testing.assert_allclose(e, [12.0, 38.0])
    np.testing.assert_allclose(o, [13.0, 40.0])


def test_count_in_an_impossible_cell_gives_zero_p_value():
    stat, dof, pval = chi_square_gof([50, 49, 1], [0.5, 0.5, 0.0])
    assert stat == np.inf and pval == 0.0 and dof == 1


def test_zero_probability_cell_with_no_counts_is_ignored():
    assert chi_square_gof([50, 50, 0], [0.5, 0.5, 0.0]) == chi_square_gof([50, 50], [0.5, 0.5])


def test_single_cell_has_nothing_to_test():
    assert chi_square_gof([100, 0], [1.0, 0.0]) == (0.0, 0, 1.0)


def test_p_values_of_correct_samples_are_uniform():
    """Calibration: 400 multinomial samples from the null give uniform p-values (KS test, alpha 1e-3)."""
    rng = np.random.default_rng(7)
    probs = rng.dirichlet(np.ones(9))
    pvals = [chi_square_gof(c, probs)[2] for c in rng.multinomial(2_000, probs, size=400)]
    assert stats.kstest(pvals, "uniform").pvalue > 1e-3


@pytest.mark.parametrize(
    "counts, probs, message",
    [
        ([1, 2], [0.5, 0.25, 0.25], "same length"),
        ([-1, 2], [0.5, 0.5], "non-negative integers"),
        ([1.5, 2], [0.5, 0.5], "non-negative integers"),
        ([0, 0], [0.5, 0.5], "at least one observation"),
        ([1, 2], [0.5, np.nan], "expected_probs must be finite"),
        ([1, 2], [0.6, 0.6], "expected_probs must sum to 1"),
    ],
)
def test_bad_input_is_refused(counts, probs, message):
    with pytest.raises(ValueError, match=message):
        chi_square_gof(counts, probs)


def test_core_does_not_import_scipy():
    code = (
        "import sys; import specdec_core.stats, specdec_core.rejection, specdec_core.mistakes, "
        "specdec_core.sampling, specdec_core.proof_cases, specdec_core.multiposition; "
        "assert 'scipy' not in sys.modules, 'scipy imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[1])
