"""One line on whether a measured run pays and why, from its own alpha_j, c and v (specdec_core.pays); shared by
the live page's race and the Engines page's result."""

from __future__ import annotations

import math
from collections.abc import Sequence

from specdec_core.formatting import fixed
from specdec_core.pays import pay_reading


def verdict_line(who: str, alphas: Sequence[float], alpha: float, c: float, v: float, measured: float,
                 f0: float = 0.0) -> str:
    """'<who> pays here' or 'does not pay here', and why: the algebra's speedup from the run's alpha_j, c, v (with
    a share f0 of target passes that drafted nothing), the round's cost and yield, and the alpha it would need.
    Empty when c or v was not measured."""
    try:
        r = pay_reading(alphas, c, v, f0)
    except ValueError:
        return ""
    at = f"at alpha = {fixed(alpha, 2)}, c = {fixed(c, 3)} and v = {fixed(v, 2)}"
    rnd = (f"a round of gamma = {r.gamma} costs gamma c + v = {fixed(r.round_cost, 2)} target steps and yields "
           f"E[N] = {fixed(r.expected_tokens, 2)} tokens")
    empty = f", with {r.empty_fraction:.0%} of target passes drafting nothing (a plain step, one token each)" \
        if r.empty_fraction > 0 else ""
    algebra = f"the algebra gives {fixed(r.speedup, 2)}x{empty}"
    if math.isfinite(measured) and measured > 1.0:
        return f"{who} pays here: measured {fixed(measured, 2)}x; {at} {rnd}, and {algebra}."
    if r.pays:
        return (f"{who} does not pay here: {at} {rnd}, and {algebra}, but measured {fixed(measured, 2)}x: the rest is "
                "per-round work the algebra does not model.")
    need = (f"it pays only above alpha = {r.break_even_alpha:.2f} at this gamma, c and v" if r.break_even_alpha
            is not None else "no alpha pays at this c and v (a round costs more than gamma + 1 steps)")
    return f"{who} does not pay here: {at} {rnd}, so {algebra}; {need}."
