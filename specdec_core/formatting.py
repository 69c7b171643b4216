"""Numbers as the pages and the command line print them: one policy for values that are missing or not finite.

A value that is not a finite number (not measured yet, a position never reached, an empty run) prints as a word
or a dash, never as 'nan' or 'inf'.
"""

from __future__ import annotations

import math
from numbers import Real

MISSING = "—"


def fixed(x: object, d: int = 3, unit: str = "", missing: str = MISSING) -> str:
    """x with d decimals and its unit; `missing` where x is not a finite real number."""
    ok = isinstance(x, Real) and not isinstance(x, bool) and math.isfinite(x)
    return f"{x:.{d}f}{unit}" if ok else missing


def whole(x: float, missing: str = MISSING) -> str:
    """A ridge, intensity or batch as the seed writes them (295, 74); below 1, two significant digits, not 0."""
    if not isinstance(x, Real) or not math.isfinite(x):
        return missing
    return f"{x:.0f}" if x >= 1 else f"{x:.2g}"
