"""specdec_core.repeats against hand computations: spread, interleaved order, the gap's exact split, the reading."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from specdec_core import measure, repeats


def test_spread_is_median_and_range_of_the_finite_values():
    s = repeats.spread([3.0, 1.0, math.nan, 2.0, math.inf])
    assert (s.median, s.lo, s.hi, s.n) == (2.0, 1.0, 3.0, 3)
    assert s.width == 2.0 and s.relative() == pytest.approx(1.0)
    even = repeats.spread([4.0, 1.0, 2.0, 3.0])
    assert even.median == 2.5 and even.relative() == pytest.approx(3 / 2.5)
    one = repeats.spread([1.7])
    assert (one.median, one.lo, one.hi, one.n, one.width) == (1.7, 1.7, 1.7, 1, 0.0)
    none = repeats.spread([math.nan])
    assert none.n == 0 and math.isnan(none.median) and math.isnan(none.relative())


@pytest.mark.parametrize("bad", [0, 10, -1, 2.5, True, "3"])
def test_repeats_out_of_range_name_the_range(bad):
    with pytest.raises(ValueError, match=r"repeats must be an integer in \[1, 9\]"):
        repeats.check_repeats(bad)


def test_race_order_is_abba_and_balances_a_linear_drift():
    assert repeats.race_order(3) == [False, True, False]  # S B | B S | S B
    for n_repeats in (2, 4, 6):
        slots = [side for base_first in repeats.race_order(n_repeats)
                 for side in (("base", "spec") if base_first else ("spec", "base"))]
        spec = [i for i, s in enumerate(slots) if s == "spec"]
        base = [i for i, s in enumerate(slots) if s == "base"]
        assert np.mean(spec) == np.mean(base)  # a clock slowing linearly in time costs both sides the same
    # Negative control: always speculative first (the old race) leaves the baseline later by one slot.
    assert np.mean([2 * r for r in range(4)]) + 1 == np.mean([2 * r + 1 for r in range(4)])


def test_sweep_order_alternates_sides_and_reverses_gammas():
    order = repeats.sweep_order([1, 2, 3], 2)
    assert order == [(0, 1, False), (0, 2, True), (0, 3, False), (1, 3, True), (1, 2, False), (1, 1, True)]
    for g in (1, 2, 3):  # every gamma gets one speculative-first and one baseline-first pair over two repeats
        assert sorted(bf for _, gg, bf in order if gg == g) == [False, True]


def _hand_run() -> measure.Measured:
    """gamma 2; rounds (k, n) = (2, 2), (2, 0); draft 0.01 s per token, verify 0.12 s, wall 0.6 + 0.7 s;
    baseline: 4 tokens, 0.1 s per target step in the events, 0.12 s per token on the wall clock."""
    return measure.summarise(2, [2, 2], [2, 0], [3, 1], [0.02, 0.02], [0.12, 0.12], [0.6, 0.7],
                        [0.1] * 4, [0.12] * 4)


def test_gap_parts_by_hand_and_their_product_is_the_ratio():
    m = _hand_run()
    # alpha_1 = 1/2, alpha_2 = 1/1, E[N] = 2; c = 0.01 / 0.1 = 0.1; v = 0.12 / 0.1 = 1.2.
    assert m.c == pytest.approx(0.1) and m.v == pytest.approx(1.2) and m.expected_tokens == pytest.approx(2.0)
    assert m.t_target_s == pytest.approx(0.1)
    assert m.predicted_speedup == pytest.approx(2.0 / 1.4)
    assert m.measured_speedup == pytest.approx((4 / 1.3) * 0.12)
    g = repeats.gap_parts(m)
    assert g.accept == pytest.approx(1.0)  # 4 tokens in 2 rounds = E[N]
    assert g.spec_round == pytest.approx(0.14 / 0.65)  # (2 x 0.1 + 1.2) x 0.1 s modelled, 0.65 s on the wall
    assert g.base_step == pytest.approx(1.2)  # 0.12 s per baseline token on the wall, 0.1 s in its events
    assert g.overhead_s_per_round == pytest.approx(0.51)
    assert g.ratio == pytest.approx(m.measured_speedup / m.predicted_speedup)
    assert g.accept * g.spec_round * g.base_step == pytest.approx(g.ratio, rel=1e-12)


def test_gap_parts_without_a_baseline_are_nan_not_errors():
    m = measure.summarise(2, [2, 2], [2, 0], [3, 1], [0.02, 0.02], [0.12, 0.12], [0.6, 0.7], [], [])
    g = repeats.gap_parts(m)
    assert all(math.isnan(x) for x in (g.ratio, g.spec_round, g.base_step))
    assert g.accept == pytest.approx(1.0)


def test_summary_medians_and_reading():
    base = _hand_run()
    runs = [dataclasses.replace(base, measured_speedup=x, predicted_speedup=1.4) for x in (1.2, 1.5, 1.3)]
    s = repeats.summarise_repeats(runs)
    assert s.repeats == 3 and s.measured == repeats.Spread(1.3, 1.2, 1.5, 3)
    assert s.ratio.median == pytest.approx(1.3 / 1.4)
    assert s.short()  # 2 rounds per repeat < MIN_ROUNDS
    assert s.noisy()  # (1.5 - 1.2) / 1.3 = 0.23 > 0.15
    r = repeats.read_gap(s)
    assert r.kind == "match" and not r.slowdown and r.noisy and r.short  # 1.3 / 1.4 = 0.93, within 10%
    slow = repeats.read_gap(repeats.summarise_repeats([base]))
    assert slow.kind == "below" and slow.slowdown and not slow.predicted_slowdown and not slow.noisy
    up = repeats.read_gap(repeats.summarise_repeats([dataclasses.replace(base, measured_speedup=2.0)]))
    assert up.kind == "above" and not up.slowdown
    both_slow = repeats.read_gap(repeats.summarise_repeats([dataclasses.replace(base, measured_speedup=0.5,
                                                                      predicted_speedup=0.52)]))
    assert both_slow.kind == "match" and both_slow.slowdown and both_slow.predicted_slowdown
    nothing = repeats.read_gap(repeats.summarise_repeats([dataclasses.replace(base, measured_speedup=math.nan)]))
    assert nothing.kind == "no-baseline"
    no_pred = repeats.read_gap(repeats.summarise_repeats([dataclasses.replace(base, predicted_speedup=math.nan)]))
    assert no_pred.kind == "no-prediction" and no_pred.slowdown
    assert repeats.read_gap(repeats.summarise_repeats([])).kind == "no-baseline"
