"""The algebra page's inputs: the four sliders with exact boxes, the preset picker, the acceptance mode and the
per-position alphas (decay or a typed table, bound to the URL)."""

from __future__ import annotations

import numpy as np
import streamlit as st

from specdec_core import algebra
from ui import presenter
from ui.algebra.cost import ShapeCosts, shape_costs
from ui.algebra.papers import NO_PRESET, PRESET_LOADED, PRESETS, load_preset
from ui.controls import bound_radio, bound_select, bound_text, set_value, slider_input
from ui.safe_text import md

MAX_GAMMA = 32                     # the integer search range for the best gamma
V_MIN = 1.0                        # a verify pass runs the target over gamma + 1 tokens: at least one step of it
MODES = ["constant", "decay", "table"]


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
