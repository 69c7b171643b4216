"""Per-round statistics from the decoder's events: the one adapter from RoundEvent to specdec_core.measure.

The maths (alpha_j, pooled alpha, c, v, E[N], the predicted speedup) lives once, in numpy, in
``specdec_core.measure``; this module only reads the plain per-round values out of the events. The live
page, the bench and the CLI all call these functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from gpu_demo.decode import RoundEvent
from specdec_core import measure


def _counts(events: Sequence[RoundEvent]) -> tuple[list[int], list[int]]:
    """(drafted k, accepted n) per round."""
    return [e.k for e in events], [e.n_accepted for e in events]


def alpha_per_position(events: Sequence[RoundEvent], gamma: int) -> list[float]:
    """alpha_j = P(draft j accepted | drafts 1..j-1 accepted), j = 1..gamma; NaN where never reached."""
    return measure.alpha_by_position(*_counts(events), gamma).tolist()


def overall_alpha(events: Sequence[RoundEvent]) -> float:
    """Pooled acceptance: accepted drafts / drafted positions reached (NaN if none)."""
    if not any(e.k for e in events):
        return math.nan
    return measure.pooled_alpha(*_counts(events), max(e.k for e in events))


def mean_accepted_length(events: Sequence[RoundEvent]) -> float:
    """Mean tokens emitted per target forward (accepted drafts + the correction or bonus)."""
    return sum(len(e.emitted) for e in events) / max(1, len(events))


def measure_events(
    gamma: int, events: Sequence[RoundEvent], wall: Sequence[float],
    base: Sequence[RoundEvent], base_wall: Sequence[float],
) -> measure.Measured:
    """specdec_core.measure.summarise over the events: wall = per-event decode seconds of each run."""
    drafted, accepted = _counts(events)
    return measure.summarise(
        gamma, drafted, accepted, [len(e.emitted) for e in events],
        [e.draft_s for e in events], [e.verify_s for e in events], list(wall),
        [e.verify_s for e in base], list(base_wall),
    )
