"""specdec_core.algebra against the reference numbers, exact rational arithmetic, and its own invariants."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec_core import algebra, presets

alphas01 = st.floats(0.0, 1.0, allow_nan=False)
gammas = st.integers(0, 40)
costs = st.floats(0.0, 2.0, allow_nan=False)
verifies = st.floats(0.05, 5.0, allow_nan=False)
rate_lists = st.lists(alphas01, min_size=0, max_size=20)
FAST = settings(max_examples=150, deadline=None)


def exact_tokens(alpha: Fraction, gamma: int) -> Fraction:
    """E[N] as the sum 1 + alpha + ... + alpha^gamma in exact rationals (an independent reference)."""
    return sum((alpha**i for i in range(gamma + 1)), Fraction(0))


# ------------------------------------------------------------------ reference numbers (REFERENCE.md) ----
def test_seed_headline_case():
    assert round(algebra.expected_tokens(0.7, 3), 3) == 2.533
    assert algebra.expected_tokens(0.7, 3) == pytest.approx((1 - 0.7**4) / 0.3, rel=1e-14)
    assert algebra.step_cost(3, 0.1, 1.0) == pytest.approx(1.30, abs=1e-15)
    assert round(algebra.speedup(0.7, 3, 0.1, 1.0), 2) == 1.95
    lo, hi = algebra.speedup_limits(3, 0.1, 1.0)
    assert (round(lo, 2), round(hi, 2)) == presets.SEED_LIMITS == (0.77, 3.08)
    assert lo == pytest.approx(1 / 1.3) and hi == pytest.approx(4 / 1.3)


def test_seed_slowdown_case():
    assert algebra.expected_tokens(0.8, 4) == pytest.approx(3.3616, abs=1e-12)
    assert round(algebra.speedup(0.8, 4, 0.05, 1.0), 2) == 2.80
    assert algebra.speedup(0.8, 4, 0.05, 1.0) == pytest.approx(3.3616 / 1.2, rel=1e-12)
    assert round(algebra.speedup(0.8, 4, 0.05, 3.5), 2) == 0.91
    assert algebra.speedup(0.8, 4, 0.05, 3.5) == pytest.approx(3.3616 / 3.7, rel=1e-12)


@pytest.mark.parametrize("case", presets.SEED_CASES, ids=lambda k: k.note)
def test_seed_cases_table(case):
    assert algebra.expected_tokens(case.alpha, case.gamma) == pytest.approx(case.tokens, abs=5e-4)
    assert algebra.step_cost(case.gamma, case.c, case.v) == pytest.approx(case.cost, abs=1e-12)
    assert round(algebra.speedup(case.alpha, case.gamma, case.c, case.v), 2) == case.speedup


def test_leviathan_formula_check():
    assert round(algebra.speedup(0.75, 7, presets.T5_SMALL_C), 2) == 3.26
    g, s = algebra.best_gamma(0.75, 0.015)
    assert (g, round(s, 2)) == (10, 3.33)
    assert s == pytest.approx(algebra.speedup(0.75, 10, 0.015))


def test_leviathan_rows_and_back_solved_c():
    by = {r.name: r for r in presets.LEVIATHAN_ROWS}
    small = by["EnDe, T5-small, temp 0"]
    pred = algebra.speedup(small.alpha, small.gamma, small.c)
    assert abs(small.reported_speedup / pred - 1) < 0.10            # T5-small EnDe: within 10%
    c_base = algebra.implied_c(0.80, 7, 2.8)
    c_large = algebra.implied_c(0.82, 7, 1.7)
    assert presets.T5_SMALL_C < c_base < c_large                           # larger drafts need a larger c
    assert algebra.speedup(0.80, 7, c_base) == pytest.approx(2.8, rel=1e-12)
    assert algebra.speedup(0.82, 7, c_large) == pytest.approx(1.7, rel=1e-12)
    # Reported above the c = 0 ceiling E[N] / v: no c >= 0 reproduces it.
    assert algebra.expected_tokens(0.62, 7) < 2.6 and algebra.implied_c(0.62, 7, 2.6) is None
    assert algebra.implied_c(0.65, 5, 3.1) is None


def test_chen_presets_and_implied_alpha():
    assert presets.CHEN_C == pytest.approx(1.8 / 14.1) and presets.CHEN_K == 4
    for row in presets.CHEN_ROWS:
        a = algebra.implied_alpha(row.reported_speedup, row.gamma, row.c)
        assert a is not None and 0 < a < 1
        assert algebra.speedup(a, row.gamma, row.c) == pytest.approx(row.reported_speedup, rel=1e-12)
    a = [algebra.implied_alpha(r.reported_speedup, 4, presets.CHEN_C) for r in presets.CHEN_ROWS]
    assert a[0] < a[1] < a[2]                                         # higher speedup needs higher alpha


def test_presets_carry_sources():
    for row in presets.LEVIATHAN_ROWS + presets.CHEN_ROWS:
        assert row.source and ("ICML 2023" in row.source or "2023" in row.source)
    assert [r.c for r in presets.LEVIATHAN_ROWS if r.draft != "T5-small"] == [None] * 8     # no invented c


# ------------------------------------------------------------------ exact edges ----
@pytest.mark.parametrize("gamma", [0, 1, 3, 16, 32])
def test_alpha_edges_exact(gamma):
    assert algebra.expected_tokens(1.0, gamma) == gamma + 1
    assert algebra.expected_tokens(0.0, gamma) == 1.0
    assert algebra.accepted_length_pmf(1.0, gamma).tolist() == [0.0] * gamma + [1.0]
    assert algebra.accepted_length_pmf(0.0, gamma).tolist() == [1.0] + [0.0] * gamma


def test_gamma_zero_and_c_zero_exact():
    assert algebra.expected_tokens(0.7, 0) == 1.0
    assert algebra.expected_tokens(0.2960752636018727, 0) == 1.0             # once 1 - 1 ulp (hypothesis found it)
    assert np.all(algebra.expected_tokens(np.linspace(0, 1, 1001), 0) == 1.0)
    assert algebra.speedup(0.7, 0, 0.3, 2.0) == 0.5                       # 1 / v
    assert algebra.speedup(0.7, 3, 0.0, 1.0) == algebra.expected_tokens(0.7, 3)
    assert algebra.speedup(1.0, 3, 0.0, 1.0) == 4.0
    assert algebra.best_gamma(0.0, 0.1) == (0, 1.0)                       # a useless draft: don't speculate
    assert algebra.best_gamma(0.5, 0.0, max_gamma=32)[0] == 32            # free drafts: the cap wins
    assert algebra.expected_tokens_positional([]) == 1.0
    assert algebra.accepted_length_pmf_positional([]).tolist() == [1.0]


def test_near_one_keeps_precision():
    for gamma in (1, 5, 32):
        a = Fraction(1) - Fraction(1, 10**9)
        assert algebra.expected_tokens(float(a), gamma) == pytest.approx(float(exact_tokens(a, gamma)), rel=1e-12)


def test_break_even():
    be = algebra.break_even_alpha(3, 0.1, 1.0)
    assert algebra.speedup(be, 3, 0.1, 1.0) == pytest.approx(1.0, abs=1e-12)
    assert algebra.break_even_alpha(4, 0.05, 3.5) is not None
    assert algebra.break_even_alpha(3, 1.01, 1.0) is None                 # cost 4.03 > 4: nothing pays
    assert algebra.break_even_alpha(0, 0.5, 1.0) == 0.0                   # cost 1: every alpha breaks even
    assert algebra.break_even_alpha(2, 0.1, 0.5) == 0.0                   # cost 0.7 <= 1


def test_break_even_at_alpha_one_boundary():
    # cost exactly gamma + 1: only alpha = 1 breaks even.
    assert algebra.break_even_alpha(3, 1.0, 1.0) == pytest.approx(1.0)


# ------------------------------------------------------------------ bad input ----
@pytest.mark.parametrize(
    "call, fragment",
    [
        (lambda: algebra.expected_tokens(-0.1, 3), "[0, 1]"),
        (lambda: algebra.expected_tokens(1.1, 3), "[0, 1]"),
        (lambda: algebra.expected_tokens(float("nan"), 3), "finite"),
        (lambda: algebra.expected_tokens(0.5, -1), ">= 0"),
        (lambda: algebra.expected_tokens(0.5, 2.5), "integer"),
        (lambda: algebra.expected_tokens(0.5, True), "integer"),
        (lambda: algebra.speedup(0.5, 3, -0.1), ">= 0"),
        (lambda: algebra.speedup(0.5, 3, 0.1, 0.0), "> 0"),
        (lambda: algebra.speedup(0.5, 3, 0.1, float("inf")), "finite"),
        (lambda: algebra.expected_tokens_positional([[0.5]]), "1-D"),
        (lambda: algebra.expected_tokens_positional([0.5, 1.5]), "[0, 1]"),
        (lambda: algebra.decay_alphas(0.5, 1.2, 3), "rho must be in [0, 1]"),
        (lambda: algebra.best_gamma(0.5, 0.1, max_gamma=-1), "max_gamma"),
        (lambda: algebra.implied_c(0.5, 3, 0.0), "speedup must be > 0"),
        (lambda: algebra.implied_alpha(-1.0, 3, 0.1), "speedup must be > 0"),
        (lambda: algebra.fit_alphas([0.5], 3, 2.0), "fill must be in [0, 1]"),
        (lambda: algebra.pmf_quantile([0.5, 0.4], 0.5), "sum"),
        (lambda: algebra.pmf_quantile([0.5, 0.5], 1.5), "(0, 1]"),
        (lambda: algebra.seed_table([(0.5, -1.0)]), ">= 0"),
    ],
)
def test_bad_input_names_the_range(call, fragment):
    with pytest.raises(ValueError) as err:
        call()
    assert fragment in str(err.value)


# ------------------------------------------------------------------ properties ----
@FAST
@given(alphas01, gammas)
def test_tokens_bounds_and_exact_sum(alpha, gamma):
    en = algebra.expected_tokens(alpha, gamma)
    assert 1.0 <= en <= gamma + 1
    assert en == pytest.approx(float(exact_tokens(Fraction(alpha), gamma)), rel=1e-10)


@FAST
@given(alphas01, alphas01, gammas)
def test_tokens_monotone_in_alpha(a, b, gamma):
    lo, hi = sorted((a, b))
    assert algebra.expected_tokens(lo, gamma) <= algebra.expected_tokens(hi, gamma) + 1e-12


@FAST
@given(alphas01, gammas)
def test_tokens_monotone_in_gamma(alpha, gamma):
    assert algebra.expected_tokens(alpha, gamma) <= algebra.expected_tokens(alpha, gamma + 1) + 1e-12


@FAST
@given(alphas01, gammas)
def test_pmf_sums_to_one_and_mean_is_tokens(alpha, gamma):
    pmf = algebra.accepted_length_pmf(alpha, gamma)
    assert pmf.shape == (gamma + 1,) and np.all(pmf >= 0)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    assert pmf @ np.arange(1, gamma + 2) == pytest.approx(algebra.expected_tokens(alpha, gamma), rel=1e-10)


@FAST
@given(rate_lists)
def test_positional_pmf_and_mean(rates):
    pmf = algebra.accepted_length_pmf_positional(rates)
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    assert pmf @ np.arange(1, len(rates) + 2) == pytest.approx(algebra.expected_tokens_positional(rates), rel=1e-10)
    exact = 1 + sum(np.prod([Fraction(r) for r in rates[: i + 1]]) for i in range(len(rates)))
    assert algebra.expected_tokens_positional(rates) == pytest.approx(float(exact), rel=1e-12)


@FAST
@given(alphas01, st.integers(0, 20), costs, verifies)
def test_positional_equal_rates_is_closed_form(alpha, gamma, c, v):
    same = np.full(gamma, alpha)
    assert algebra.expected_tokens_positional(same) == pytest.approx(algebra.expected_tokens(alpha, gamma), rel=1e-12)
    assert algebra.speedup_positional(same, c, v) == pytest.approx(algebra.speedup(alpha, gamma, c, v), rel=1e-12)
    np.testing.assert_allclose(algebra.accepted_length_pmf_positional(same), algebra.accepted_length_pmf(alpha, gamma),
                               atol=1e-15)
    gap = algebra.positional_gap(same, c, v)
    assert gap["rel_error"] == pytest.approx(0.0, abs=1e-12)
    g1, s1 = algebra.best_gamma_positional(same, c, v)
    g2, s2 = algebra.best_gamma(alpha, c, v, max_gamma=gamma)
    assert s1 == pytest.approx(s2, rel=1e-12)
    # The same draft length, unless two lengths tie to rounding (e.g. c = 0 once alpha^g is below one ulp).
    assert g1 == g2 or algebra.speedup(alpha, g1, c, v) == pytest.approx(algebra.speedup(alpha, g2, c, v), rel=1e-12)


@FAST
@given(alphas01, costs, verifies, st.integers(0, 24))
def test_best_gamma_is_brute_force_argmax(alpha, c, v, max_gamma):
    values = [algebra.speedup(alpha, g, c, v) for g in range(max_gamma + 1)]
    g, s = algebra.best_gamma(alpha, c, v, max_gamma)
    assert s == pytest.approx(max(values), rel=1e-12) and values[g] == pytest.approx(s, rel=1e-12)
    if len(set(values)) == 1:
        assert g == 0                                                  # an exact tie goes to the shortest draft


def test_exact_ties_go_to_the_shorter_draft():
    # alpha = 1, c = v = 1: (g + 1) / (g + 1) = 1 exactly for every g.
    assert algebra.best_gamma(1.0, 1.0, 1.0, 32) == (0, 1.0)
    g, s = algebra.best_gamma_grid(np.array([1.0, 0.0]), np.array([1.0, 0.0]), 1.0, 16)
    assert g.tolist() == [0, 0] and s.tolist() == [1.0, 1.0]
    g, s = algebra.best_gamma_map([1.0], [1.0], 1.0, 16)
    assert g.tolist() == [[0]] and s.tolist() == [[1.0]]


def test_best_gamma_grid_matches_scalar_search():
    a = np.linspace(0, 1, 23)[:, None]
    c = np.linspace(0, 0.6, 17)[None, :]
    g, s = algebra.best_gamma_grid(a, c, 1.3, 32)
    assert g.shape == s.shape == (23, 17)
    for i in range(23):
        for j in range(17):
            assert (g[i, j], s[i, j]) == pytest.approx(algebra.best_gamma(a[i, 0], c[0, j], 1.3, 32))


@FAST
@given(st.floats(0.5, 5.0), st.integers(1, 16), st.floats(0.0, 0.5), verifies)
def test_implied_alpha_and_c_round_trip(s, gamma, c, v):
    a = algebra.implied_alpha(s, gamma, c, v)
    lo, hi = algebra.speedup_limits(gamma, c, v)
    if lo <= s <= hi:
        assert a is not None and algebra.speedup(a, gamma, c, v) == pytest.approx(s, rel=1e-9)
    elif s < lo * (1 - 1e-9) or s > hi * (1 + 1e-9):                  # clearly outside (not a rounding tie)
        assert a is None
    alpha = 0.6
    ic = algebra.implied_c(alpha, gamma, s, v)
    if ic is None:
        assert algebra.expected_tokens(alpha, gamma) / s < v
    else:
        assert ic >= 0 and algebra.speedup(alpha, gamma, ic, v) == pytest.approx(s, rel=1e-9)


@FAST
@given(alphas01, st.integers(1, 12), costs, verifies)
def test_break_even_is_where_speedup_crosses_one(gamma_alpha, gamma, c, v):
    be = algebra.break_even_alpha(gamma, c, v)
    lo, hi = algebra.speedup_limits(gamma, c, v)
    if be is None:
        assert hi < 1.0
    elif be == 0.0:
        assert lo >= 1.0 - 1e-12
    else:
        assert algebra.speedup(be, gamma, c, v) == pytest.approx(1.0, abs=1e-9)
        assert (algebra.speedup(gamma_alpha, gamma, c, v) >= 1.0 - 1e-9) == (gamma_alpha >= be - 1e-9)


@FAST
@given(rate_lists)
def test_prefixes_and_survival(rates):
    pre = algebra.expected_tokens_prefixes(rates)
    assert pre.shape == (len(rates) + 1,)
    for g in range(len(rates) + 1):
        assert pre[g] == pytest.approx(algebra.expected_tokens_positional(rates[:g]), rel=1e-12)
    np.testing.assert_allclose(algebra.survival_probabilities(rates), np.cumprod(rates) if rates else [])
    sp = algebra.speedup_prefixes(rates, 0.1, 1.2)
    for g in range(len(rates) + 1):
        assert sp[g] == pytest.approx(algebra.speedup_positional(rates[:g], 0.1, 1.2), rel=1e-12)


def test_decay_and_fit():
    np.testing.assert_allclose(algebra.decay_alphas(0.9, 0.5, 4), [0.9, 0.45, 0.225, 0.1125])
    assert algebra.decay_alphas(0.9, 0.5, 0).size == 0
    np.testing.assert_array_equal(algebra.fit_alphas([0.9, 0.8, 0.7], 2, 0.1), [0.9, 0.8])
    np.testing.assert_array_equal(algebra.fit_alphas([0.9], 3, 0.1), [0.9, 0.1, 0.1])
    # the page's table mode: typed rates first, the decay model's own rate at each missing position
    np.testing.assert_array_equal(algebra.fit_alphas([0.9], 3, [0.5, 0.25, 0.125]), [0.9, 0.25, 0.125])
    np.testing.assert_array_equal(algebra.fit_alphas([0.9, 0.8, 0.7, 0.6], 2, [0.5, 0.25]), [0.9, 0.8])
    assert algebra.fit_alphas([], 0, np.array([])).size == 0
    with pytest.raises(ValueError, match="2 rates"):
        algebra.fit_alphas([0.9], 2, [0.5, 0.25, 0.125])


def test_positional_gap_decay_example():
    a = algebra.decay_alphas(0.9, 0.8, 6)
    gap = algebra.positional_gap(a, 0.05, 1.0)
    assert gap["alpha_bar"] == pytest.approx(a.mean())
    assert gap["en_positional"] == pytest.approx(algebra.expected_tokens_positional(a))
    assert gap["en_constant"] == pytest.approx(algebra.expected_tokens(a.mean(), 6))
    assert gap["rel_error"] == pytest.approx(gap["en_constant"] / gap["en_positional"] - 1)
    assert gap["rel_error"] != pytest.approx(0.0, abs=1e-3)          # the average does not fix the products


def test_pmf_quantile_brute_force():
    pmf = algebra.accepted_length_pmf(0.8, 8)
    cdf = np.cumsum(pmf)
    for q in (0.01, 0.2, 0.5, 0.9, 0.99, 1.0):
        assert algebra.pmf_quantile(pmf, q) == 1 + min(k for k in range(9) if cdf[k] >= q - 1e-12)
    assert algebra.pmf_quantile([1.0], 0.99) == 1
    assert algebra.pmf_quantile(algebra.accepted_length_pmf(1.0, 5), 0.5) == 6


def test_seed_table_rows():
    rows = algebra.seed_table(presets.SEED_TABLE_ROWS)
    assert len(rows) == len(presets.SEED_TABLE_ROWS)
    for r in rows:
        g, s = algebra.best_gamma(r["alpha"], r["c"], 1.0, 16)
        assert (r["gamma"], r["speedup"]) == (g, s)
        assert r["speedup"] == pytest.approx(r["tokens"] / r["cost"])
    assert rows[2]["alpha"] == 0.7 and rows[2]["gamma"] == 4 and round(rows[2]["speedup"], 2) == 1.98


# ------------------------------------------------------------------ heatmap helpers ----
@pytest.mark.parametrize("v", [0.5, 1.0, 1.3, 3.5])
def test_best_gamma_map_matches_the_generic_grid(v):
    a, c = np.linspace(0, 1, 61), np.linspace(0, 1, 47)
    g_map, s_map = algebra.best_gamma_map(a, c, v, 32)
    g_grid, s_grid = algebra.best_gamma_grid(a[:, None], c[None, :], v, 32)
    np.testing.assert_allclose(s_map, s_grid, rtol=1e-12)
    # Gammas agree except at rounding-level near-ties (c = 0, where alpha^g falls below one ulp of E[N]).
    differ = g_map != g_grid
    ii, jj = np.nonzero(differ)
    near_tie = np.abs(algebra.speedup(a[ii], g_map[differ], c[jj], v)
                      - algebra.speedup(a[ii], g_grid[differ], c[jj], v))
    assert np.all(near_tie < 1e-12)
    assert np.all(c[jj] == 0.0)


def test_best_gamma_map_edges():
    g, s = algebra.best_gamma_map([0.0, 1.0], [0.0, 0.5], 1.0, 8)
    assert g.tolist() == [[0, 0], [8, 8]]  # alpha 1: (g+1)/(g c + 1) increases
    assert s.tolist() == [[1.0, 1.0], [9.0, 9 / 5]]


@pytest.mark.parametrize("v", [0.5, 1.0, 1.3, 3.5])
def test_break_even_boundary_is_min_over_gamma(v):
    cs = np.linspace(0, 1, 41)
    got = algebra.break_even_boundary(cs, v, 32)
    for c, b in zip(cs, got):
        options = [x for x in (algebra.break_even_alpha(g, c, v) for g in range(1, 33)) if x is not None]
        if options:
            assert b == pytest.approx(min(options), abs=1e-13)
        else:
            assert b == np.inf
    if v == 1.0:
        np.testing.assert_allclose(got, cs, atol=1e-13)  # gamma = 1 pays iff alpha > c
    with pytest.raises(ValueError, match=">= 1"):
        algebra.break_even_boundary(cs, v, 0)


def test_reported_vs_predicted():
    out = algebra.reported_vs_predicted(0.75, 7, 0.015, 3.4)
    assert round(out["predicted"], 2) == 3.26 and round(out["ratio"], 2) == 1.04
    assert out["gap"] == pytest.approx(out["ratio"] - 1)
    assert algebra.speedup(0.75, 7, out["implied_c"]) == pytest.approx(3.4)
    assert algebra.reported_vs_predicted(0.65, 5, 0.015, 3.1)["implied_c"] is None
    with pytest.raises(ValueError, match="reported must be > 0"):
        algebra.reported_vs_predicted(0.75, 7, 0.015, 0.0)
