"""equivalent_alpha: the constant alpha with the same E[N] as per-position rates, against hand values."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specdec_core import algebra

FAST = settings(max_examples=150, deadline=None)
rates = st.lists(st.floats(0.0, 1.0, allow_nan=False), min_size=1, max_size=12)


def test_hand_example_and_why_the_mean_is_not_it():
    a = [0.9, 0.5, 0.2]
    en = 1 + 0.9 + 0.9 * 0.5 + 0.9 * 0.5 * 0.2                     # 2.44 by hand
    assert algebra.expected_tokens_positional(a) == pytest.approx(en, rel=1e-15)
    eq = algebra.equivalent_alpha(a)
    # 1 + x + x^2 + x^3 = 2.44: x = 0.67549... (checked with exact fractions at the bracket below)
    lo, hi = Fraction(67549, 100000), Fraction(67550, 100000)
    assert 1 + lo + lo**2 + lo**3 < Fraction(244, 100) < 1 + hi + hi**2 + hi**3
    assert float(lo) < eq < float(hi)
    assert algebra.expected_tokens(eq, 3) == pytest.approx(en, rel=1e-12)
    mean = np.mean(a)                                                # 0.5333: far below, E[N] 1.97 not 2.44
    assert algebra.expected_tokens(mean, 3) == pytest.approx(1 + mean + mean**2 + mean**3)
    assert algebra.expected_tokens(mean, 3) < en - 0.4
    gap = algebra.positional_gap(a, 0.1, 1.0)
    assert gap["alpha_equivalent"] == eq and gap["alpha_bar"] == pytest.approx(mean)


def test_edges_are_exact():
    assert algebra.equivalent_alpha([]) == 0.0                           # gamma = 0: any alpha gives E[N] = 1
    assert algebra.equivalent_alpha([0.0, 0.7, 1.0]) == 0.0              # E[N] = 1 exactly
    assert algebra.equivalent_alpha([1.0, 1.0, 1.0, 1.0]) == 1.0         # E[N] = gamma + 1 exactly
    assert algebra.equivalent_alpha([0.37]) == pytest.approx(0.37, abs=1e-15)   # gamma = 1: E[N] = 1 + alpha_1
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        algebra.equivalent_alpha([0.5, 1.2])


@FAST
@given(rates)
def test_gives_the_same_expected_tokens(a):
    eq = algebra.equivalent_alpha(a)
    assert 0.0 <= eq <= 1.0
    assert algebra.expected_tokens(eq, len(a)) == pytest.approx(
        algebra.expected_tokens_positional(a), rel=1e-12, abs=1e-12
    )


@FAST
@given(st.floats(0.0, 1.0, allow_nan=False), st.integers(1, 16))
def test_constant_rates_give_themselves_back(alpha, gamma):
    assert algebra.equivalent_alpha(np.full(gamma, alpha)) == pytest.approx(alpha, abs=1e-9)


def test_decaying_rates_sit_above_their_mean_rising_rates_below():
    """alpha_1 multiplies every term of E[N] and alpha_gamma only the last: early positions weigh more."""
    decay = algebra.decay_alphas(0.9, 0.7, 6)
    assert algebra.equivalent_alpha(decay) > decay.mean() + 0.05
    rising = decay[::-1]
    assert algebra.equivalent_alpha(rising) < rising.mean() - 0.05
