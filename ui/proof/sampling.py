"""The proof page's sampling check: n draws through the real rule and through each tempting mistake, tested
against p by chi-square. A fragment: its own controls (draws, seed, the mistake shown) rerun only this section."""

from __future__ import annotations

import numpy as np
import streamlit as st

from specdec_core import mistakes, proof_cases
from specdec_core.mistakes import NAIVE_NORMALISATION, RuleCheck
from specdec_core.rejection import MAX_DRAWS
from ui.chart_wire import charts_last
from ui.controls import bound_radio, slider_input
from ui.presenter import show
from ui.proof import data as data


def check_rows(checks: dict[str, RuleCheck]) -> list[dict]:
    """One table row per rule: its exact distance from p, the kept rates and the sampled verdict."""
    return [
        {
            "rule": c.label,
            "max |law - p|": "undefined (0/0)" if not c.defined else f"{c.max_error:.2e}",
            "TV(law, p)": "undefined" if not c.defined else f"{c.tv_to_p:.4f}",
            "kept, exact": f"{c.kept_exact:.3f}",
            "kept, sampled": f"{c.kept:.3f}",
            "chi-square": data.chi2_text(c),
            "dof": c.dof,
            "p-value": data.p_value_text(c),
            "verdict at 0.001": "rejects p" if c.p_value < 1e-3 else "consistent with p",
        }
        for c in checks.values()
    ]


@st.fragment
@charts_last()
def sampling_section(case: proof_cases.ProofCase, src: str) -> None:
    """n draws through the real rule and through each mistake, tested against p."""
    c1, c2 = st.columns(2, gap="large")
    with c1:
        n = slider_input("draws n", "n", 1_000, MAX_DRAWS, 100_000, 1_000, help="Up to 10^6, vectorised.")
    with c2:
        seed = slider_input("sampling seed", "sseed", 0, 9999, 0, 1)
    shown = bound_radio(
        "Rule to show beside the correct one",
        data.MISTAKES,
        key="mistake",
        default="resample_p",
        format_func=data.MISTAKE_LABELS.get,
        help="; ".join(f"{data.MISTAKE_LABELS[k]}: {v}" for k, v in data.WHAT_IT_SHOWS.items()),
    )
    checks = {c.name: c for c in data.sampled_checks(case.p, case.q, case.p_raw, case.q_claimed, int(n), int(seed))}
    st.caption(f"{len(checks)} rules x {int(n):,} draws each (seed {int(seed)}), drawn once for these settings and "
               "reused by every later view of them.")
    st.dataframe(check_rows(checks), hide_index=True, key="checks")
    left, right = st.columns(2)
    for side, col, c in (("left", left, checks["correct"]), ("right", right, checks[shown])):
        with col:
            law = c.law if c.defined and c.max_error > 1e-12 else None
            show(data.sampled_figure(case.p, c.empirical, law, int(n), c.label), key=f"fig_sample_{side}")
            impossible = "" if np.isfinite(c.stat) else " (a draw landed on a token that p gives probability 0)"
            st.markdown(
                f"chi-square {data.chi2_text(c)} on {c.dof} dof{impossible}, **p-value {data.p_value_text(c)}**. "
                f"{data.WHAT_IT_SHOWS[c.name]} *Harmless {mistakes.HARMLESS_WHEN[c.name]}*"
            )
    kept_twist(checks)
    mistake_notes(case, src, checks[shown])


def mistake_notes(case: proof_cases.ProofCase, src: str, c: RuleCheck) -> None:
    """What the shown mistake's numbers hide: an undefined law, a coincidence with the correct rule, or how a
    preset stands in for logits."""
    if not c.defined:
        st.warning(
            "This rule's law is **undefined** here: the residual is empty and normalising it gives "
            "0/0 = NaN. The draws look fine only because no proposal is ever rejected when p == q; a "
            "batched sampler that draws a residual token for every position (the usual GPU code) is "
            "handed NaN probabilities and fails or emits garbage."
        )
    elif c.name == NAIVE_NORMALISATION:
        nan = int(np.isnan(mistakes.naive_normalisation_rule(case.p, case.p).residual).sum())
        st.caption(
            f"The residual is non-empty here, so this rule coincides with the correct one. Fed this same p as "
            f"q (p == q), it divides 0 by 0: its residual is NaN in {nan} of {case.p.size} entries. Pick the "
            "case 'identical' to see the draws."
        )
    if src not in ("logits", "custom") and c.name in ("raw_logits", "wrong_q"):
        st.caption(
            f"A preset's p is read as the target's law at temperature {proof_cases.TARGET_T} and q as the draft's at "
            f"{proof_cases.DRAFT_T}: the raw target logits are {proof_cases.TARGET_T} log p "
            f"(softmax p^{proof_cases.TARGET_T}), and the "
            "wrong q is the draft's logits at the target's temperature, "
            f"q^({proof_cases.DRAFT_T:g}/{proof_cases.TARGET_T}) "
            "renormalised. The from-logits case uses your own settings instead."
        )


def kept_twist(checks: dict[str, RuleCheck]) -> None:
    """A wrong verifier can keep more drafts than the right one: acceptance is no evidence of exactness."""
    ok, raw = checks["correct"].kept_exact, checks["raw_logits"].kept_exact
    d_ok, d_raw = data.default_kept()
    st.info(
        f"**A wrong verifier can look better.** Here the correct rule keeps {ok:.3f} of the drafts and the "
        f"raw-logits verifier {raw:.3f}. In the from-logits case at its defaults "
        f"(target T {proof_cases.TARGET_T}, draft "
        f"T {proof_cases.DRAFT_T:g}) it keeps {d_raw:.3f} against the correct {d_ok:.3f}: "
        "raw logits are flatter than the "
        "tempered p, closer to the draft. A higher acceptance rate says nothing about exactness; only the "
        "law does.",
        icon=":material/warning:",
    )
