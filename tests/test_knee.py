"""The probe's knee fit says when it should not be trusted: few points, a knee at the edge, or a poor fit."""

from __future__ import annotations

import numpy as np
import pytest

from specdec_core.knee import knee_fit

TOKENS = 2.0 ** np.arange(10)                                          # 1 .. 512


def flat_then_linear(knee: float, noise: float = 0.03, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return 3e-3 * np.maximum(1.0, TOKENS / knee) * np.exp(rng.normal(0, noise, TOKENS.size))


def test_a_clean_knee_inside_the_range_is_reliable():
    fit = knee_fit(TOKENS, flat_then_linear(37.0))
    assert fit.reliable and fit.reason == "" and fit.reached
    assert fit.knee == pytest.approx(37.0, rel=0.15)
    assert fit.rms_log < 0.05 and fit.n_points == 10 and fit.below + fit.above == 10


def test_too_few_points_is_unreliable():
    fit = knee_fit(TOKENS[:3], flat_then_linear(37.0)[:3])
    assert not fit.reliable and "only 3 token counts" in fit.reason


def test_a_knee_with_one_point_past_it_is_unreliable():
    fit = knee_fit(TOKENS, flat_then_linear(300.0, noise=0.0))           # only T = 512 lies above
    assert fit.reached and fit.above == 1
    assert not fit.reliable and "only 1 measured point(s) lie above the knee" in fit.reason


def test_noise_that_hides_the_shape_is_a_poor_fit():
    rng = np.random.default_rng(1)
    fit = knee_fit(TOKENS, 1e-3 * np.exp(rng.normal(0, 0.6, TOKENS.size)))
    assert not fit.reliable and "poor fit" in fit.reason and fit.rms_log > 0.15


def test_flat_times_say_the_knee_is_beyond_the_range():
    fit = knee_fit(TOKENS, np.full(TOKENS.size, 1e-3))
    assert not fit.reached and fit.knee >= TOKENS.max()
    assert fit.reliable                                                 # a clean "not reached" is a finding
