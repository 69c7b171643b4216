"""Temperature, top-k and top-p maps against hand-computed cases, ties, batching and refusals."""

import numpy as np
import pytest

from specdec_core.sampling import (
    apply_temperature,
    sampling_distribution,
    softmax,
    top_k_filter,
    top_p_filter,
)

LN = np.log


def test_softmax_hand_case_and_banned_token():
    np.testing.assert_allclose(softmax(LN([1.0, 2.0, 3.0])), [1 / 6, 2 / 6, 3 / 6], rtol=1e-15)
    out = softmax([0.0, -np.inf, 0.0])
    assert out[1] == 0.0
    np.testing.assert_allclose(out, [0.5, 0.0, 0.5], rtol=1e-15)


@pytest.mark.parametrize(
    "temperature, expected",
    [
        (1.0, [1 / 3, 2 / 3]),
        (0.5, [1 / 5, 4 / 5]),                                   # 2^(1/0.5) = 4
        (2.0, [1 / (1 + 2**0.5), 2**0.5 / (1 + 2**0.5)]),        # 2^(1/2)
    ],
)
def test_temperature_hand_cases(temperature, expected):
    np.testing.assert_allclose(apply_temperature(LN([1.0, 2.0]), temperature), expected, rtol=1e-14)


def test_temperature_zero_is_one_hot_argmax_lowest_id_on_ties():
    np.testing.assert_array_equal(apply_temperature([0.2, 1.5, -3.0], 0.0), [0.0, 1.0, 0.0])
    np.testing.assert_array_equal(apply_temperature([1.0, 3.0, 3.0], 0.0), [0.0, 1.0, 0.0])
    # batched over leading axes
    batch = apply_temperature([[5.0, 1.0], [1.0, 5.0]], 0.0)
    np.testing.assert_array_equal(batch, [[1.0, 0.0], [0.0, 1.0]])


def test_tiny_temperature_approaches_greedy_without_overflow():
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        out = apply_temperature([0.0, 1.0, 0.5], 1e-3)
        huge = apply_temperature([1e300, -1e300, 0.0], 1e-3)
    np.testing.assert_allclose(out, [0.0, 1.0, 0.0], atol=1e-200)
    np.testing.assert_array_equal(huge, [1.0, 0.0, 0.0])


def test_top_k_hand_case_and_ties():
    np.testing.assert_allclose(top_k_filter([0.1, 0.4, 0.2, 0.3], 2), [0, 0.4 / 0.7, 0, 0.3 / 0.7], rtol=1e-15)
    # a tie at the k-th place is kept whole (Hugging Face's and vLLM's rule), never broken by token id
    np.testing.assert_array_equal(top_k_filter([0.25, 0.25, 0.25, 0.25], 2), [0.25, 0.25, 0.25, 0.25])
    np.testing.assert_allclose(top_k_filter([0.1, 0.3, 0.3, 0.3], 2), [0.0, 1 / 3, 1 / 3, 1 / 3], rtol=1e-15)
    # k >= V keeps everything; 0 is no truncation
    np.testing.assert_allclose(top_k_filter([0.1, 0.9], 5), [0.1, 0.9])
    np.testing.assert_allclose(top_k_filter([0.1, 0.9], 0), [0.1, 0.9])


@pytest.mark.parametrize(
    "top_p, expected",
    [
        (0.8, [0.5 / 0.8, 0.3 / 0.8, 0.0]),     # 0.5 + 0.3 reaches 0.8: the third token is dropped
        (0.81, [0.5, 0.3, 0.2]),                # needs the third token to reach 0.81
        (0.5, [1.0, 0.0, 0.0]),                 # the first token alone reaches 0.5
        (0.05, [1.0, 0.0, 0.0]),                # the top token is always kept
        (1.0, [0.5, 0.3, 0.2]),
    ],
)
def test_top_p_hand_cases(top_p, expected):
    np.testing.assert_allclose(top_p_filter([0.5, 0.3, 0.2], top_p), expected, rtol=1e-15)


def test_top_p_is_robust_to_rounding_in_the_running_sum():
    # 0.4 + 0.3 is 0.7000000000000001 in binary floating point; top_p = 0.7 must still stop after two
    np.testing.assert_allclose(top_p_filter([0.1, 0.2, 0.3, 0.4], 0.7), [0, 0, 3 / 7, 4 / 7], rtol=1e-15)


def test_top_p_keeps_every_token_tied_with_the_crossing_one():
    # 0.4 alone reaches 0.4; the other 0.4 has no strictly larger mass above it, so it stays too
    np.testing.assert_allclose(top_p_filter([0.2, 0.4, 0.4], 0.4), [0.0, 0.5, 0.5])
    # the law does not depend on token ids: relabelling the vocabulary permutes it
    np.testing.assert_allclose(top_p_filter([0.4, 0.4, 0.2], 0.4), [0.5, 0.5, 0.0])


def test_pipeline_order_temperature_then_top_k_then_top_p():
    # softmax(ln[1,2,3,4]) = [1,2,3,4]/10; top-3 -> [0,2,3,4]/9; top-p 0.7: 4/9 + 3/9 >= 0.7 -> [0,0,3,4]/7
    out = sampling_distribution(LN([1.0, 2.0, 3.0, 4.0]), temperature=1.0, top_k=3, top_p=0.7)
    np.testing.assert_allclose(out, [0, 0, 3 / 7, 4 / 7], rtol=1e-14)
    # at T = 0.5 the law is [1,4,9,16]/30; top-p 0.5 keeps 16/30 then 9/30 (16/30 < 0.5 is false: stop)
    out = sampling_distribution(LN([1.0, 2.0, 3.0, 4.0]), temperature=0.5, top_p=0.5)
    np.testing.assert_allclose(out, [0, 0, 0, 1.0], rtol=1e-14)
    out = sampling_distribution(LN([1.0, 2.0, 3.0, 4.0]), temperature=0.5, top_p=0.6)
    np.testing.assert_allclose(out, [0, 0, 9 / 25, 16 / 25], rtol=1e-14)


def test_batched_pipeline_matches_row_by_row():
    rng = np.random.default_rng(0)
    z = rng.standard_normal((3, 4, 11))
    out = sampling_distribution(z, temperature=0.8, top_k=6, top_p=0.85)
    assert out.shape == z.shape
    for idx in np.ndindex(3, 4):
        np.testing.assert_allclose(out[idx], sampling_distribution(z[idx], 0.8, 6, 0.85), rtol=1e-15)
    np.testing.assert_allclose(out.sum(-1), 1.0, rtol=1e-15)
    assert np.all((out > 0).sum(-1) <= 6)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"top_k": -1}, r"top_k must be an integer >= 0 \(0 = off\)"),
        ({"top_k": 2.5}, r"top_k must be an integer >= 0"),
        ({"top_k": None}, r"top_k must be an integer >= 0"),
        ({"top_p": 0.0}, r"top_p must be in \(0, 1\]"),
        ({"top_p": 1.5}, r"top_p must be in \(0, 1\]"),
        ({"temperature": -0.1}, r"temperature must be >= 0"),
        ({"temperature": float("nan")}, r"temperature must be finite"),
    ],
)
def test_out_of_range_settings_are_refused_with_the_range(kwargs, message):
    with pytest.raises(ValueError, match=message):
        sampling_distribution([0.0, 1.0, 2.0], **kwargs)


@pytest.mark.parametrize("logits", [[0.0, np.nan], [np.inf, 0.0], [-np.inf, -np.inf], []])
def test_bad_logits_are_refused(logits):
    with pytest.raises(ValueError, match="logits"):
        softmax(logits)
