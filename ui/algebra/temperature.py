"""The algebra page's note on temperature: the same draft has one alpha at T = 0 and another at T = 1.

Greedy alpha is argmax agreement, sampled alpha is 1 - TV(p, q): two different overlaps of the same pair of
models, so they need not move together. Numbers come from specdec_core and from the paper's own tables.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from specdec_core import presets
from specdec_core.rejection import acceptance_rate
from specdec_core.sampling import sampling_distribution

# Two single contexts (target p, draft q): argmaxes that differ on close laws, and that agree on far-apart laws.
CONTEXTS = (((0.40, 0.35, 0.25), (0.34, 0.40, 0.26)), ((0.6, 0.4, 0.0), (0.5, 0.0, 0.5)))


def alpha_at(p: tuple[float, ...], q: tuple[float, ...], temperature: float) -> float:
    """alpha of the laws p and q re-tempered to T (read as T = 1 laws): sum min(p_T, q_T); at T = 0 argmax agreement."""
    with np.errstate(divide="ignore"):
        z_p, z_q = np.log(p), np.log(q)                     # -inf where a law is 0: a banned token
    return float(acceptance_rate(sampling_distribution(z_p, temperature), sampling_distribution(z_q, temperature)))


def _direction(a0: float, a1: float) -> str:
    return "higher at T = 0" if a0 > a1 else "higher at T = 1" if a1 > a0 else "equal"


def temperature_section() -> None:
    """Why alpha changes with the sampling temperature, with two single contexts and the paper's measured pairs."""
    st.subheader("Why alpha changes with temperature")
    st.latex(r"\alpha_{T=0}=\Pr\big[\arg\max q=\arg\max p\big],\qquad"
             r"\alpha_{T=1}=\mathbb{E}\Big[\sum_x\min\big(p(x),q(x)\big)\Big]=1-\mathbb{E}\big[\mathrm{TV}(p,q)\big]")
    st.markdown(
        "At temperature 0 both laws are one-hot, so a draft token is kept exactly when the two argmaxes agree and "
        "the algebra runs with alpha the match rate. Sampled, alpha is the overlap of the whole laws. These are "
        "different measurements of the same two models, and one context can score high on one and low on the other:"
    )
    st.dataframe([{"target p": str(list(p)), "draft q": str(list(q)), "alpha at T = 0": f"{alpha_at(p, q, 0.0):.2f}",
                   "alpha at T = 1": f"{alpha_at(p, q, 1.0):.2f}"} for p, q in CONTEXTS], hide_index=True)
    pairs = presets.temperature_pairs()
    st.dataframe([{"target / draft": name, "alpha, temp 0": a0, "alpha, temp 1": a1, "": _direction(a0, a1)}
                  for name, a0, a1 in pairs], hide_index=True)
    rising = [name for name, a0, a1 in pairs if a1 > a0]
    st.markdown(
        "Every T5 draft in Leviathan et al.'s Table 2 keeps more at temperature 0, and so does its speedup. "
        + (f"Yet {', '.join(rising)} keeps slightly more when sampling: " if rising else "")
        + "the two rates can move in opposite directions, so quote alpha with the temperature it was measured at, "
        "and measure it at the temperature you serve."
    )
    st.caption(f"Source: {presets.LEVIATHAN}; {presets.LEVIATHAN_ALPHA}.")
