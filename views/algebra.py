"""Algebra: alpha, gamma, c and v against E[N] and the speedup; every number comes from specdec_core."""

from __future__ import annotations

import numpy as np
import streamlit as st

from specdec_core import algebra
from specdec_core.formatting import fixed
from specdec_core.simulate import empirical_pmf, simulate_tokens_per_step, summarise
from ui import presenter
from ui.algebra.cost import ShapeCosts, cost_note, shape_costs, v_label
from ui.algebra.figures import alpha_figure, gamma_figure, heatmap_figure, pmf_figure
from ui.algebra.papers import (
    NO_PRESET,
    PRESET_LOADED,
    PRESETS,
    load_preset,
    paper_section,
    preset_check,
    seed_section,
)
from ui.algebra.temperature import temperature_section
from ui.algebra.vllm import paste_section, positional_comparison
from ui.chart_wire import charts_last
from ui.controls import bound_radio, bound_select, bound_text, get_value, set_value, slider_input
from ui.presenter import show
from ui.safe_text import md

MAX_GAMMA = 32                     # the integer search range for the best gamma
V_MIN = 1.0                        # a verify pass runs the target over gamma + 1 tokens: at least one step of it
MC_STEPS = 200_000                 # Monte Carlo steps shown on the page
MODES = ["constant", "decay", "table"]
BELOW = {"pmf": "tokens per step: exact and simulated", "heat": "best gamma over alpha and c (heat map)"}
SECTIONS = {  # the chooser under the model: ?section= opens the same view; only the chosen section is drawn
    "papers": "Published operating points",
    "seed": "The seed's numbers, recomputed",
    "temperature": "Why alpha changes with temperature",
    "all": "all three",
}


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


def controls() -> tuple[float, int, float, float, str, ShapeCosts | None]:
    """The four sliders (each with an exact box), the preset picker and the acceptance mode."""
    with presenter.secondary("Published operating points"):
        choice = bound_select("Load a published operating point", [NO_PRESET, *PRESETS], key="preset",
                              on_change=load_preset, help="Sets alpha, gamma, c and v; the comparison is further down.")
    if choice in PRESETS and st.session_state.get(PRESET_LOADED) != choice:   # ?preset= arrived by URL: load it
        load_preset()                                                       # (a URL alpha, gamma... still wins)
    left, right = st.columns(2, gap="large")
    with left:
        alpha = slider_input("acceptance alpha", "alpha", 0.0, 1.0, 0.7, 0.01, "%.4f",
                             help="Probability that a draft token is accepted, given the earlier ones were.")
        gamma = slider_input("draft length gamma", "gamma", 0, 16, 3, 1, help="Draft tokens proposed per step.")
    with right:
        shape = shape_costs(int(gamma), MAX_GAMMA)        # None: free c and v; else c and v(gamma) from a shape
        if shape is not None:
            c, v = shape.c, float(shape.v[gamma])
        else:
            c = slider_input("draft cost c", "c", 0.0, 1.0, 0.1, 0.005, "%.4f",
                             help="One draft token's cost, in target decode steps.")
            v = slider_input("verification cost v", "v", V_MIN, 5.0, 1.0, 0.05, "%.3f",
                             help="One verification pass, in target decode steps: at least 1 (it runs the target "
                                  "over gamma + 1 tokens, so it cannot cost less than one step of it), 1 at small "
                                  "batch.")
    with presenter.secondary("Acceptance by position"):
        mode = bound_radio(
            "Acceptance by position",
            MODES,
            key="mode",
            help="constant: one alpha everywhere. decay: alpha_j = alpha rho^(j-1). table: type each alpha_j.",
        )
    return float(alpha), int(gamma), float(c), float(v), mode, shape


def _table_edited(editor_key: str, base: list[float]) -> None:
    """Callback: write the edited table back into the URL-bound text box, which stays the one source of truth."""
    values = list(base)
    for row, change in st.session_state[editor_key].get("edited_rows", {}).items():
        if "alpha_j" in change:
            values[int(row)] = change["alpha_j"]
    set_value("aj", ", ".join("" if x is None else f"{x:g}" for x in values))


def position_alphas(alpha: float, gamma: int, mode: str) -> tuple[np.ndarray, np.ndarray | None]:
    """(alpha_1..alpha_gamma, the rates for the gamma search and curves: None in constant mode)."""
    if mode == "constant":
        return np.full(gamma, alpha), None
    rho = slider_input("decay rho", "rho", 0.0, 1.0, 0.9, 0.01, "%.3f", help="alpha_j = alpha rho^(j-1).")
    decayed = algebra.decay_alphas(alpha, rho, gamma)
    if mode == "decay":
        return decayed, algebra.decay_alphas(alpha, rho, MAX_GAMMA)
    text = bound_text(
        "alpha_j, comma-separated (missing positions use the decay model; or edit the table)",
        "aj",
        placeholder=", ".join(f"{a:.3f}" for a in decayed),
    )
    try:  # a blank entry (or a cleared table cell) keeps its position and takes the decay value there
        cells = [x.strip() for x in text.replace(";", ",").split(",")][:gamma] if text.strip() else []
        blank = [j + 1 for j, x in enumerate(cells) if not x]
        table = algebra.fit_alphas([float(x) if x else decayed[j] for j, x in enumerate(cells)], gamma, decayed)
        if blank:
            st.caption(f"Blank alpha_j at position {', '.join(map(str, blank))}: the decay value alpha rho^(j-1) "
                       "is used there; later positions keep their place.")
    except ValueError as exc:
        st.warning(f"Could not use those alpha_j ({md(exc, 120)}). Each must be a number in [0, 1]; using the decay "
                   "model at every position.")
        table = decayed
    base = [float(a) for a in table]
    editor_key = f"aj_table_{text}_{gamma}_{alpha}_{rho}"
    st.data_editor(
        {"position j": list(range(1, gamma + 1)), "alpha_j": base},
        key=editor_key,
        disabled=["position j"],
        hide_index=True,
        on_change=_table_edited,
        args=(editor_key, base),
    )
    return table, table


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


def render() -> None:
    st.title("Algebra: what speculation buys")
    presenter.intro(
        "A draft proposes gamma tokens, the target verifies them in one pass, and each step emits the "
        "accepted prefix plus one target token. Move the costs as well as the acceptance: both decide "
        "whether it pays."
    )
    model_section()
    reference_sections()


@st.fragment
def reference_sections() -> None:
    """The fixed tables and the temperature explanation under the model, one at a time unless all are asked for.

    A fragment of its own: choosing a section reruns this, not the model; a slider step does not rerun it."""
    shown = bound_radio(
        "Section shown below",
        list(SECTIONS),
        key="section",
        default="papers",
        format_func=SECTIONS.get,
        help="Each section is drawn only when it is shown; the address keeps the choice.",
    )
    every = shown == "all"
    if every or shown == "papers":
        paper_section()
    if every or shown == "seed":
        seed_section()
    if every or shown == "temperature":
        temperature_section()


@st.fragment
@charts_last()
def model_section() -> None:
    """Everything the four sliders drive: readouts, figures, the vLLM paste and the loaded preset's check.

    A fragment: a slider step reruns this, not the page's text, the seed check or the temperature section."""
    alpha, gamma, c, v, mode, shape = controls()
    aj, search = position_alphas(alpha, gamma, mode)
    slot = presenter.top()  # presenter mode: the two curves right below the sliders, the formulas after them
    readouts(alpha, gamma, c, v, aj, search, shape)
    with presenter.key_figure(slot):
        figures(alpha, gamma, c, v, aj, search, shape)
    paste_section(c, v, None if shape is None else shape.v)
    preset_check(get_value("preset", NO_PRESET), {"alpha": alpha, "gamma": gamma, "c": c, "v": v})


render()
