"""The algebra page's published operating points and the seed's worked cases: presets, tables, the comparison.

Every number comes from specdec_core (algebra and presets); this module lays them out.
"""

from __future__ import annotations

import streamlit as st

from specdec_core import algebra, presets
from specdec_core.formatting import fixed
from ui.algebra.cost import slowdown_note
from ui.controls import get_value, set_value

PRESETS = {f"Leviathan: {r.name}": r for r in presets.LEVIATHAN_ROWS} | {
    f"Chen: {r.name}": r for r in presets.CHEN_ROWS
}
NO_PRESET = "(none)"
PRESET_LOADED = "_algebra.preset_loaded"  # the preset last copied into the controls


def preset_values(row: presets.PaperRow) -> dict[str, float]:
    """alpha, gamma, c, v to load for a paper row; derived numbers come from the core."""
    alpha, c = row.alpha, row.c  # stated by the paper: loaded as is
    if alpha is None:  # derived: rounded to 4 digits for the exact box
        derived = algebra.implied_alpha(row.reported_speedup, row.gamma, row.c)
        alpha = round(derived, 4) if derived is not None else None
    if c is None:
        derived = algebra.implied_c(row.alpha, row.gamma, row.reported_speedup)
        c = round(derived, 4) if derived is not None else 0.0  # no c >= 0 reproduces it: the ceiling c = 0
    return {"alpha": alpha, "gamma": row.gamma, "c": c, "v": 1.0}


def load_preset() -> None:
    """Callback: copy the chosen preset into the bound controls."""
    row = PRESETS.get(get_value("preset"))
    st.session_state[PRESET_LOADED] = get_value("preset")
    if row is None:
        return
    for key, value in preset_values(row).items():
        if value is not None:
            set_value(key, value)


@st.cache_data
def paper_tables() -> tuple[list[dict], list[dict], dict[str, float]]:
    """Leviathan rows: prediction at c = 0.015, ratio, back-solved c; Chen rows: back-solved alpha (all core)."""
    lev, gaps = [], {}
    for r in presets.LEVIATHAN_ROWS:
        cmp = algebra.reported_vs_predicted(r.alpha, r.gamma, presets.T5_SMALL_C, r.reported_speedup)
        ic, gaps[r.name] = cmp["implied_c"], cmp["gap"]
        lev.append(
            {
                "row": r.name,
                "temp": f"{r.temperature:g} ({'argmax' if r.temperature == 0 else 'sampling'})",
                "gamma": r.gamma,
                "alpha": r.alpha,
                "reported": f"{r.reported_speedup:.1f}x",
                "predicted at c = 0.015": f"{cmp['predicted']:.2f}x",
                "reported / predicted": f"{cmp['ratio']:.2f}",
                "c that reproduces it (v = 1, back-solved)": fixed(ic, 4) if ic is not None else "none >= 0",
            }
        )
    chen = []
    for r in presets.CHEN_ROWS:
        a = algebra.implied_alpha(r.reported_speedup, r.gamma, r.c)
        chen.append(
            {
                "row": r.name,
                "K": r.gamma,
                "c = 1.8 / 14.1": fixed(r.c, 4),
                "reported": f"{r.reported_speedup:.2f}x",
                "alpha implied (v = 1, back-solved)": fixed(a, 3) if a is not None else "none in [0, 1]",
            }
        )
    return lev, chen, gaps


def paper_section() -> None:
    """Formula prediction beside the reported speedup for every paper row, and the derived c or alpha.

    Fixed tables: drawn once per page run, outside the sliders' fragment (three data frames were a fifth of a
    slider step's server time); the loaded preset's check against the sliders is preset_check."""
    st.subheader("Published operating points")
    lev, chen, gaps = paper_tables()
    st.dataframe(lev, hide_index=True)
    st.caption(f"Source: {presets.LEVIATHAN}. The paper gives c of about {presets.T5_SMALL_C} for T5-small only.")
    st.markdown(
        "For T5-small on EnDe the formula lands within "
        + " and ".join(f"{abs(g):.0%} ({name[-6:]})" for name, g in gaps.items() if name.startswith("EnDe, T5-small"))
        + " of the report. The larger drafts need a larger c: T5-base and T5-large run many more layers per"
        " draft token, so at "
        "T5-small's c the formula overpredicts them badly, and the c that reproduces their speedups "
        "(computed above, illustrative) grows with draft size. Where no c >= 0 reproduces a report, the paper "
        "beat even a free draft under v = 1. One honest reason: E[N] is convex in alpha, so a workload whose "
        "acceptance varies from request to request around the reported average emits more tokens than the "
        "formula at that average."
    )
    st.dataframe(chen, hide_index=True)
    st.caption(
        f"Source: {presets.CHEN}. The paper reports no alpha; the column is the alpha at which the formula "
        "reproduces the reported speedup, not a measurement."
    )
    with st.expander("Acceptance rates reported without a speedup (Leviathan et al.)"):
        st.dataframe(
            [{"target": t, "draft": d, "temp": tmp, "alpha": a} for t, d, tmp, a in presets.ALPHA_ONLY], hide_index=True
        )
        st.caption(f"Source: {presets.LEVIATHAN_ALPHA}.")


def preset_check(choice: str, current: dict[str, float]) -> None:
    """The loaded preset's formula prediction against its report, and a button back to it once the sliders moved."""
    if choice in PRESETS:
        r, vals = PRESETS[choice], preset_values(PRESETS[choice])
        cmp = algebra.reported_vs_predicted(vals["alpha"], r.gamma, vals["c"], r.reported_speedup)
        derived = [k for k, x in (("alpha", r.alpha), ("c", r.c)) if x is None]
        st.success(
            f"Preset **{choice}**: alpha = {vals['alpha']:g}, gamma = {r.gamma}, c = {vals['c']:g}, v = 1. "
            f"Formula: {cmp['predicted']:.2f}x against the reported {r.reported_speedup:.2f}x (ratio "
            f"{cmp['ratio']:.2f})."
            + (
                f" {' and '.join(derived)} back-solved from the reported speedup, so the match is by construction."
                if derived and not (r.c is None and cmp["implied_c"] is None)
                else " c back-solved: no c >= 0 reproduces the report, so c = 0 is loaded, the formula's ceiling."
                if derived
                else ""
            )
            + f" Source: {r.source}."
        )
        if any(current[k] != x for k, x in vals.items() if x is not None):
            st.button(
                f"Load {choice} into the controls",
                key="reload",
                on_click=load_preset,
                help="The controls above now hold other values.",
            )


def seed_section() -> None:
    """The seed's worked cases and the integer gamma search at v = 1."""
    st.subheader("The seed's numbers, recomputed")
    cases = [
        {
            "alpha": k.alpha,
            "gamma": k.gamma,
            "c": k.c,
            "v": k.v,
            "E[N]": fixed(float(algebra.expected_tokens(k.alpha, k.gamma)), 4),
            "cost": fixed(float(algebra.step_cost(k.gamma, k.c, k.v)), 2),
            "speedup": f"{float(algebra.speedup(k.alpha, k.gamma, k.c, k.v)):.2f}x",
            "note": k.note,
        }
        for k in presets.SEED_CASES
    ]
    st.dataframe(cases, hide_index=True)
    st.markdown("The same acceptance flips from a speedup to a slowdown when verification gets dearer:")
    st.page_link(
        "views/algebra.py",
        label="Open the slowdown case (alpha 0.8, gamma 4, c 0.05, v 3.5)",
        query_params={"alpha": "0.8", "gamma": "4", "c": "0.05", "v": "3.5"},
        icon=":material/trending_down:",
    )
    slowdown_note()
    table = [
        {
            "alpha": r["alpha"],
            "c": r["c"],
            "best gamma": r["gamma"],
            "E[N]": fixed(r["tokens"]),
            "cost": fixed(r["cost"]),
            "speedup": f"{r['speedup']:.2f}x",
        }
        for r in algebra.seed_table(presets.SEED_TABLE_ROWS)
    ]
    st.dataframe(table, hide_index=True)
    st.caption(f"Integer search over gamma = 0..16 at v = 1; the costs are illustrative. Source: {presets.SEED}.")
