"""The algebra page's readouts: the formulas with the numbers substituted, the metrics, the limits and the
break-even alpha, each number from specdec_core.algebra."""

from __future__ import annotations

import numpy as np
import streamlit as st

from specdec_core import algebra
from specdec_core.formatting import fixed
from ui.algebra.cost import ShapeCosts, cost_note
from ui.algebra.inputs import MAX_GAMMA
from ui.algebra.vllm import positional_comparison


def readouts(alpha: float, gamma: int, c: float, v: float, aj: np.ndarray, search: np.ndarray | None,
             shape: ShapeCosts | None = None) -> float:
    """The formulas with numbers substituted, the metrics, the limits and the break-even alpha; returns speedup."""
    cost = float(algebra.step_cost(gamma, c, v))
    if search is None:
        tokens, s = float(algebra.expected_tokens(alpha, gamma)), float(algebra.speedup(alpha, gamma, c, v))
        if alpha == 1.0:
            st.latex(
                rf"\mathbb{{E}}[N] = \gamma + 1 = {gamma + 1}\quad(\alpha = 1:\ \text{{every draft token is kept}})"
            )
        else:
            st.latex(
                rf"\mathbb{{E}}[N] = \frac{{1-\alpha^{{\gamma+1}}}}{{1-\alpha}} = \frac{{1-{alpha:g}^{{{gamma + 1}}}}}"
                rf"{{1-{alpha:g}}} = {fixed(tokens)}"
            )
    else:
        terms = " + ".join(["1"] + [fixed(x) for x in algebra.survival_probabilities(aj)][:8]) + (
            r" + \cdots" if gamma > 8 else ""
        )
        tokens, s = algebra.expected_tokens_positional(aj), algebra.speedup_positional(aj, c, v)
        st.latex(rf"\mathbb{{E}}[N] = 1 + \sum_{{i=1}}^{{\gamma}}\prod_{{j\le i}}\alpha_j = {terms} = {fixed(tokens)}")
    st.latex(
        rf"\text{{cost}} = \gamma c + v = {gamma}\times{c:g} + {v:g} = {fixed(cost)}\qquad"
        rf"\text{{speedup}} = \frac{{\mathbb{{E}}[N]}}{{\gamma c + v}}"
        rf" = \frac{{{fixed(tokens)}}}{{{fixed(cost)}}} = {s:.2f}\times"
    )
    vs = v if shape is None else shape.v                     # the search's v: held fixed, or v(gamma)
    best = (algebra.best_gamma(alpha, c, vs, MAX_GAMMA) if search is None
            else algebra.best_gamma_positional(search, c, vs))
    cols = st.columns(4)
    cols[0].metric("Tokens per step E[N]", fixed(tokens))
    cols[1].metric("Step cost", fixed(cost), help="gamma c + v, in target decode steps")
    cols[2].metric("Speedup", f"{s:.2f}x")
    cols[3].metric(
        "Best integer gamma",
        f"{best[0]}",
        f"{best[1]:.2f}x at best",
        delta_color="off",
        help=f"Searched over gamma = 0..{MAX_GAMMA if search is None else search.size}.",
    )
    cost_note(alpha, c, vs, search, best, shape)  # fixed v said plainly, or why v(gamma) picks this gamma
    if best[0] == MAX_GAMMA:
        st.caption(
            f"The best gamma sits at the search cap {MAX_GAMMA}: with c = {c:g} a longer draft always adds tokens"
            " for little cost."
        )
    if s < 1.0:
        st.warning(
            f"**This is a slowdown:** at {s:.2f}x, speculating makes decoding slower than plain decoding. "
            "Acceptance alone does not decide it: the cost gamma c + v does too."
        )
    lo, hi = algebra.speedup_limits(gamma, c, v)
    st.latex(
        rf"\alpha\to0:\ \frac{{1}}{{\gamma c + v}} = \frac{{1}}{{{fixed(cost)}}} = {lo:.2f}\times\qquad"
        rf"\alpha\to1:\ \frac{{\gamma+1}}{{\gamma c + v}} = \frac{{{gamma + 1}}}{{{fixed(cost)}}} = {hi:.2f}\times"
    )
    be = algebra.break_even_alpha(gamma, c, v)
    label = "Break-even alpha (speedup = 1" + (", constant alpha)" if search is not None else ")")
    if be is None:
        st.markdown(f"**{label}:** none. No alpha in [0, 1] pays here: even alpha = 1 gives {hi:.2f}x.")
    elif be == 0.0:
        st.markdown(f"**{label}:** 0. Any alpha breaks even, since the step costs {fixed(cost)} <= 1 target step.")
    else:
        st.markdown(f"**{label}:** {fixed(be, 4)}. Below it speculation is a slowdown.")
    if search is not None:
        positional_comparison(aj, c, v)  # alpha_j against vLLM's r_j; the constant with the same E[N]
    return s
