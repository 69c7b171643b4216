"""Trees and multi-draft: exact multi-candidate verification, Medusa's typical acceptance, token trees, goodput."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ui import presenter
from ui.chart_wire import charts_last
from ui.controls import bound_radio
from ui.trees.cost import tree_section
from ui.trees.data import K_PAGE, V_PAGE
from ui.trees.measured import measured_section
from ui.trees.multidraft import check_section, draws_controls, multidraft_section, pair_controls, refuse
from ui.trees.typical import typical_section

SECTIONS = {  # the section chooser: ?section= opens the same view; only the chosen sections are computed
    "tree": "3. Token trees: length, cost, goodput",
    "checks": "Sampled checks of every rule",
    "typical": "2. Medusa's typical acceptance",
    "all": "all sections",
}


@st.fragment
@charts_last()
def sampled_sections(p: np.ndarray, q: np.ndarray, k: int, checks: bool, typical: bool) -> None:
    """The sampled checks and typical acceptance share the draws n and the seed; their controls rerun only this."""
    st.subheader("Sampled checks: every rule against p")
    n, seed = draws_controls(k)
    if checks:
        check_section(p, q, k, n, seed)
    if typical:
        st.subheader("2. Medusa's typical acceptance: faster, and not exact")
        typical_section(p, q, k, n, seed)


def render() -> None:
    st.title("Trees and multi-draft")
    presenter.intro(
        "One draft chain is where speculative decoding starts. SpecInfer verifies several candidates per "
        "position, Medusa and EAGLE verify whole token trees in one target pass. Which of their rules keep the "
        "target's law, and when does a tree pay?")
    body()


@st.fragment
@charts_last()
def body() -> None:
    """Everything the controls drive: a fragment, so a control step reruns this, not the app's navigation and
    the page's title (the sections below it that are fragments of their own rerun alone on their controls)."""
    st.subheader("1. Several candidates at one position, verified exactly")
    try:
        p, q, k = pair_controls()
    except ValueError as exc:
        refuse(exc, f"V from 2 to {V_PAGE}, k from 1 to {K_PAGE}.")
    multidraft_section(p, q, k)
    shown = bound_radio("Section shown below", list(SECTIONS), key="section", default="tree", format_func=SECTIONS.get,
                        help="Each section is computed only when it is shown; the address keeps the choice.")
    every = shown == "all"
    if every or shown in ("checks", "typical"):
        sampled_sections(p, q, k, every or shown == "checks", every or shown == "typical")
    if every or shown == "tree":
        st.subheader("3. Token trees: expected accepted length")
        tree_section(p, q)
        measured_section()


render()
