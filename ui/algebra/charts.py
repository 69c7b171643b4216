"""The algebra page's charts: speedup and E[N] against gamma and alpha, then the best-gamma heat map or the law of
tokens per step beside a Monte Carlo run (one of the two at a time)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from specdec_core import algebra
from specdec_core.formatting import fixed
from specdec_core.simulate import empirical_pmf, simulate_tokens_per_step, summarise
from ui.algebra.cost import ShapeCosts, v_label
from ui.algebra.figures import alpha_figure, gamma_figure, heatmap_figure, pmf_figure
from ui.algebra.inputs import MAX_GAMMA
from ui.controls import bound_radio
from ui.presenter import show

MC_STEPS = 200_000                 # Monte Carlo steps shown on the page
BELOW = {"pmf": "tokens per step: exact and simulated", "heat": "best gamma over alpha and c (heat map)"}


@st.cache_data(max_entries=16)
def heatmap_data(v: float | np.ndarray, c_max: float) -> tuple[np.ndarray, ...]:
    """Best gamma and speedup over a 201 x 201 (alpha, c) grid, and the break-even alpha for each c."""
    alphas, cs = np.linspace(0.0, 1.0, 201), np.linspace(0.0, c_max, 201)
    g, s = algebra.best_gamma_map(alphas, cs, v, MAX_GAMMA)                      # (A, C)
    return alphas, cs, s, g, algebra.break_even_boundary(cs, v, MAX_GAMMA)


@st.cache_data(max_entries=32)
def monte_carlo(alphas: tuple[float, ...], n_steps: int) -> tuple[np.ndarray, dict[str, float]]:
    """Simulated frequencies of N and their mean / P50 / P99 (fixed seed, so reruns agree)."""
    tokens = simulate_tokens_per_step(np.array(alphas), n_steps, seed=0)
    return empirical_pmf(tokens, len(alphas)), summarise(tokens)


def figures(
    alpha: float,
    gamma: int,
    c: float,
    v: float,
    aj: np.ndarray,
    search: np.ndarray | None,
    shape: ShapeCosts | None = None,
) -> None:
    """The two curves (against gamma, against alpha), then the heat map or the law of N, as chosen."""
    gammas = np.arange(17)
    vs = v if shape is None else shape.v  # v(gamma) for gamma = 0..32 in decoder-shape mode
    tokens, speeds = (
        algebra.expected_tokens(alpha, gammas),
        algebra.speedup(alpha, gammas, c, algebra.v_by_gamma(vs, 16)),
    )
    pos, best = None, algebra.best_gamma(alpha, c, vs, 16)
    if search is not None:
        curve = search[:16]
        pos = (algebra.expected_tokens_prefixes(curve), algebra.speedup_prefixes(curve, c, vs))
        best = algebra.best_gamma_positional(curve, c, vs)
    left, right = st.columns(2)
    show(gamma_figure(gammas, tokens, speeds, best, gamma, pos), key="fig_gamma", where=left)
    grid = np.linspace(0.0, 1.0, 101)
    curves = {
        g: algebra.speedup(grid, g, c, algebra.v_by_gamma(vs, 16)[g]) for g in sorted({1, 2, 4, 8, 16, max(gamma, 1)})
    }
    show(alpha_figure(grid, curves, (alpha, float(algebra.speedup(alpha, gamma, c, v)))), key="fig_alpha", where=right)
    below = bound_radio(
        "Below the curves",
        list(BELOW),
        key="fig",
        format_func=BELOW.get,
        help="One of the two larger figures at a time, so a slider step redraws only the one shown.",
    )
    if below == "heat":
        heat_section(alpha, c, vs)
    else:
        pmf_section(aj, gamma)


def heat_section(alpha: float, c: float, vs: float | np.ndarray) -> None:
    """The best-gamma heat map over (alpha, c), the current point marked."""
    heat = heatmap_data(vs, 0.5 if c <= 0.5 else 1.0)
    show(heatmap_figure(*heat, (alpha, c), v_label(vs)), key="fig_heat")
    st.caption(
        "Each cell searches gamma = 0..32 (hover a cell to read its best gamma and speedup). The white line "
        "is speedup = 1: below and right of it no draft length >= 1 pays. Colours saturate at 5x; the corner "
        f"alpha -> 1, c -> 0 reaches {heat[2][-1, 0]:.0f}x. In this model gamma = 0 still pays one pass v,"
        " so it scores 1 / v."
    )


def pmf_section(aj: np.ndarray, gamma: int) -> None:
    """The exact law of tokens per step beside a Monte Carlo run, and its mean, P50 and P99."""
    pmf = algebra.accepted_length_pmf_positional(aj)
    freq, mc = monte_carlo(tuple(float(a) for a in aj), MC_STEPS)
    marks = {"mean": mc["mean"], "P50": mc["p50"], "P99": mc["p99"]}
    show(pmf_figure(pmf, freq, MC_STEPS, marks), key="fig_pmf")
    spread = (
        f"The mean hides a spread: {pmf[0]:.1%} of steps emit a single token and {pmf[-1]:.1%} emit all {gamma + 1}."
        if gamma
        else "With gamma = 0 every step emits exactly one token."
    )
    st.markdown(
        f"Simulated: mean **{mc['mean']:.3f}**, P50 **{mc['p50']:g}**, P99 **{mc['p99']:g}** tokens per step "
        f"(exact: mean {fixed(algebra.expected_tokens_positional(aj))}, P50 {algebra.pmf_quantile(pmf, 0.5)}, "
        f"P99 {algebra.pmf_quantile(pmf, 0.99)}). {spread}"
    )
