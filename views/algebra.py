"""Algebra: alpha, gamma, c and v against E[N] and the speedup; every number comes from specdec_core."""

from __future__ import annotations

import streamlit as st

from ui import presenter
from ui.algebra.charts import figures
from ui.algebra.inputs import controls, position_alphas
from ui.algebra.papers import NO_PRESET, paper_section, preset_check, seed_section
from ui.algebra.readouts import readouts
from ui.algebra.temperature import temperature_section
from ui.algebra.vllm import paste_section
from ui.chart_wire import charts_last
from ui.controls import bound_radio, get_value

SECTIONS = {  # the chooser under the model: ?section= opens the same view; only the chosen section is drawn
    "papers": "Published operating points",
    "seed": "The seed's numbers, recomputed",
    "temperature": "Why alpha changes with temperature",
    "all": "all three",
}


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
