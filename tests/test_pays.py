"""specdec_core.pays: the speedup with rounds that drafted nothing, and the pays / does-not-pay reading."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specdec_core import algebra
from specdec_core.pays import empty_fraction, pay_reading, speedup_with_empty_rounds


def test_no_empty_rounds_is_the_positional_speedup() -> None:
    a = [0.8, 0.6, 0.5]
    assert speedup_with_empty_rounds(a, 0.1, 1.2, 0.0) == pytest.approx(algebra.speedup_positional(a, 0.1, 1.2))


def test_all_empty_rounds_is_plain_decoding() -> None:
    assert speedup_with_empty_rounds([0.9, 0.9], 0.0, 1.0, 1.0) == pytest.approx(1.0)


def test_empty_rounds_cost_a_plain_step_and_yield_one_token() -> None:
    # gamma 4, c = 0 (lookup), v = 1, alpha_j = 0.5: E[N] = 1.9375 per drafted round at cost 1.
    a, f0 = [0.5] * 4, 0.7
    en = 1 + 0.5 + 0.25 + 0.125 + 0.0625
    expected = (0.3 * en + 0.7 * 1) / (0.3 * 1.0 + 0.7 * 1)
    assert speedup_with_empty_rounds(a, 0.0, 1.0, f0) == pytest.approx(expected)
    # the old prediction ignored them and said E[N] / 1 = 1.94x; with 70 % empty rounds it is 1.28x
    assert algebra.speedup_positional(a, 0.0, 1.0) == pytest.approx(en)
    assert speedup_with_empty_rounds(a, 0.0, 1.0, f0) < 0.7 * algebra.speedup_positional(a, 0.0, 1.0)


def test_empty_fraction_counts_passes_without_a_draft() -> None:
    assert empty_fraction(100, 25) == pytest.approx(0.75)
    assert empty_fraction(0, 0) == 0.0
    assert empty_fraction(10, 12) == 0.0          # more drafts than passes (counter skew) clamps to 0


def test_empty_rounds_only_dilute_the_verdict() -> None:
    slow = pay_reading([0.3, 0.2, 0.1], 0.3, 1.2, 0.5)    # cost 2.1 > E[N] 1.366
    fast = pay_reading([0.9, 0.8, 0.7], 0.05, 1.1, 0.5)
    assert not slow.pays and fast.pays
    assert 1.0 < fast.speedup < pay_reading([0.9, 0.8, 0.7], 0.05, 1.1).speedup
    assert slow.round_cost == pytest.approx(3 * 0.3 + 1.2) and slow.break_even_alpha is not None
    assert algebra.speedup(slow.break_even_alpha, 3, 0.3, 1.2) == pytest.approx(1.0, abs=1e-9)


def test_unreached_positions_count_as_zero_and_bad_input_is_refused() -> None:
    r = pay_reading([0.5, math.nan], 0.0, 1.0)
    assert r.expected_tokens == pytest.approx(1.5) and r.gamma == 2
    assert pay_reading([0.9], 1.0, 1.5).break_even_alpha is None     # a round costs more than gamma + 1 steps
    for bad in (-0.1, 1.5, math.nan):
        with pytest.raises(ValueError, match="empty_fraction"):
            speedup_with_empty_rounds([0.5], 0.0, 1.0, bad)
    with pytest.raises(ValueError):
        pay_reading(np.array([0.5]), math.inf, 1.0)


def test_verdict_line_reads_the_run_through_the_speedup_formula() -> None:
    from ui.pays_text import verdict_line

    a = [0.3, 0.2, 0.1]
    s = pay_reading(a, 0.3, 1.2).speedup
    line = verdict_line("smollm2-draft", a, 0.2, 0.3, 1.2, 0.8)
    assert line.startswith("smollm2-draft does not pay here") and f"{s:.2f}x" in line
    assert f"alpha = {pay_reading(a, 0.3, 1.2).break_even_alpha:.2f}" in line
    assert verdict_line("x", [0.9, 0.9], 0.9, 0.01, 1.1, 1.7).startswith("x pays here: measured 1.70x")
    assert "per-round work" in verdict_line("x", [0.9, 0.9], 0.9, 0.01, 1.1, 0.9)   # predicted > 1, measured < 1
    assert "no alpha pays" in verdict_line("x", [0.9], 1.0, 1.0, 1.5, 0.5)
    assert "40% of target passes" in verdict_line("x", [0.5], 0.5, 0.0, 1.0, 0.9, 0.4)
    assert verdict_line("x", [0.5], 0.5, math.nan, 1.0, 0.9) == ""
