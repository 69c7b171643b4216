"""specdec_core.formatting: the one number policy of the pages and the command line."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specdec_core.formatting import MISSING, fixed, whole


@pytest.mark.parametrize("x", [math.nan, math.inf, -math.inf, None, "1.5", True])
def test_a_value_that_is_not_a_finite_number_prints_as_the_missing_word(x: object) -> None:
    assert fixed(x) == MISSING
    assert fixed(x, 2, missing="not reached") == "not reached"


def test_fixed_decimals_with_a_unit_for_python_and_numpy_numbers() -> None:
    assert fixed(2.346, 2, "x") == "2.35x"
    assert fixed(np.float32(0.5), 3) == "0.500"
    assert fixed(np.int64(7), 0, " tok") == "7 tok"
    assert fixed(1, 1) == "1.0"


def test_whole_keeps_two_significant_digits_below_one_instead_of_zero() -> None:
    assert whole(295.04) == "295" and whole(73.6) == "74"
    assert whole(0.043) == "0.043"
    assert whole(math.nan) == MISSING
