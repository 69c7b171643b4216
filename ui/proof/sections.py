"""The proof page's sections besides the sampling check: the exact decomposition (the key figure), why it is exact,
the seed's exhaustive check, and two positions enumerated. Numbers from specdec_core through ui.proof.data."""

from __future__ import annotations

import streamlit as st

from specdec_core import proof_cases
from specdec_core.rejection import emitted_distribution
from ui.chart_wire import charts_last
from ui.controls import slider_input
from ui.presenter import show
from ui.proof import data as data


def exact_section(case: proof_cases.ProofCase) -> None:
    """p and q, the decomposition that fills p, and alpha and TV as areas."""
    d = data.exact_pieces(case.p, case.q)
    a, tv = float(d["alpha"]), float(d["tv"])
    st.latex(  # the identity the two bars below add up to, with this case's alpha
        r"\underbrace{q(x)\min\!\Big(1,\tfrac{p(x)}{q(x)}\Big)}_{\text{kept}}+\underbrace{(1-\alpha)\,"
        r"\frac{(p(x)-q(x))_+}{1-\alpha}}_{\text{resampled}}=\min(p,q)+(p-q)_+=p(x),\qquad"
        rf"\alpha=\textstyle\sum_x\min(p,q)={a:.4f}")
    cols = st.columns(4)
    cols[0].metric("alpha = sum min(p, q)", f"{a:.4f}")
    cols[1].metric("TV(p, q)", f"{tv:.4f}")
    cols[2].metric("alpha - (1 - TV)", f"{d['identity_gap']:.1e}", help="Zero up to floating-point rounding.")
    cols[3].metric("max |emitted - p|", f"{d['max_error']:.1e}")
    left, right = st.columns(2)
    show(data.pq_figure(case.p, case.q), key="fig_pq", where=left)
    show(data.decomposition_figure(d["accepted"], d["resampled"], case.p), key="fig_decomp", where=right)
    show(data.areas_figure(a, tv), key="fig_areas")
    if d["residual_empty"]:
        st.info(
            "p == q: every proposal is kept, the residual is empty and is never drawn. The core returns "
            "r = p there instead of 0/0, so nothing divides by zero."
        )
    elif a == 0.0:
        st.info("Disjoint supports: alpha = 0, every proposal is rejected, and the residual is p itself.")


def explanation() -> None:
    """Why it works, in a few lines, with the maths in st.latex."""
    st.latex(r"\alpha=\sum_x q(x)\min\!\Big(1,\frac{p(x)}{q(x)}\Big)=\sum_x\min\big(p(x),q(x)\big)")
    st.latex(r"\alpha=1-\tfrac12\sum_x|p(x)-q(x)|=1-\mathrm{TV}(p,q)")
    st.markdown("The rejected mass and the residual mass are the same number, because p and q both sum to 1:")
    st.latex(r"1-\alpha=\sum_x\big(q(x)-p(x)\big)_+=\sum_x\big(p(x)-q(x)\big)_+=\lVert(p-q)_+\rVert_1")
    st.latex(
        r"\begin{aligned}P(\text{emit }x)&=\min(p,q)(x)+(1-\alpha)\,"
        r"\frac{(p-q)_+(x)}{\lVert(p-q)_+\rVert_1}\\&=\min(p,q)(x)+(p-q)_+(x)=p(x)\end{aligned}"
    )
    st.markdown(
        "- **Every mass a rejection removes comes back through the residual, exactly where p exceeds q.** "
        "That is why the replacement must come from (p - q)+ and not from p.\n"
        "- **q = 0 < p:** such a token is never proposed, so it can only enter as a correction. The residual "
        "gives it all of its mass p(x).\n"
        "- **The bonus token:** when all gamma proposals are kept, the target's verification pass has already "
        "computed the next distribution. One more token is sampled from it for free, which is why the "
        "ceiling is gamma + 1 and not gamma.\n"
        "- **Greedy is the one-hot limit:** at temperature 0, p and q are one-hot. Then alpha is 1 when the "
        "two argmaxes agree and 0 otherwise, and the residual is the target's argmax. The same "
        "expected-length algebra applies.\n"
        "- **Use the laws actually sampled:** p after the requested temperature and truncation, and q the law "
        "the draft really drew from, over the same vocabulary. This preserves the target's *law*, not the "
        "tokens a given seed would have produced."
    )


def exhaustive_section() -> None:
    """The seed's 10,000-pair check (its own loop, then a batched variant) and the identical-draft edge case."""
    r, b = data.seed_loop(), data.exhaustive()
    law, alpha = emitted_distribution([1.0, 0.0], [1.0, 0.0])
    cols = st.columns(3)
    cols[0].metric("random pairs", f"{int(r['pairs']):,}")
    cols[1].metric("max |emitted - p|, seed's loop", f"{r['max_law_error']:.1e}", help="The seed prints 3.3e-16.")
    cols[2].metric("max |alpha - (1 - TV)|", f"{r['max_alpha_error']:.1e}")
    st.caption(
        "The seed's loop exactly: default_rng(0); for each pair V = integers(2, 50), then p ~ Dirichlet(1), then "
        "q ~ Dirichlet(0.3), each through emitted_distribution. The number is the largest rounding error met, "
        "about one unit in the last place (2.2e-16 near 1), so it depends on which pairs are drawn: another "
        f"seed, generator or order of draws gives another. Drawing 10,000 other pairs (gamma variates, "
        f"zero-padded to 49 tokens) in one batched call ({b['ms']:.0f} ms here) gives {b['max_law_error']:.1e}."
    )
    cols = st.columns(3)
    cols[0].metric("identical draft p = q = [1, 0]: emitted", f"[{law[0]:g}, {law[1]:g}]")
    cols[1].metric("identical draft: alpha", f"{alpha:g}")
    cols[2].caption(
        "The residual (p - q)+ is empty here. A naive normalisation divides 0 by 0; the core "
        "returns r = p instead, which is never drawn because 1 - alpha = 0."
    )


@st.fragment
@charts_last()
def multiposition_section() -> None:
    """Two positions of a Markov target and draft: the enumerated joint law equals the target's."""
    with st.columns(2)[0]:
        seed = slider_input("example seed", "mseed", 0, 999, 0, 1)
    r = data.two_positions(int(seed))
    cols = st.columns(3)
    show(data.joint_figure(r["target"], "target p(t1, t2)"), key="fig_joint_p", where=cols[0])
    show(data.joint_figure(r["emitted"], "emitted, enumerated"), key="fig_joint_e", where=cols[1])
    show(data.joint_figure(r["draft"], "draft q(t1, t2), for contrast"), key="fig_joint_q", where=cols[2])
    st.metric("max |emitted joint - target joint|", f"{r['max_error']:.1e}")
    st.caption(
        f"Acceptance differs by position and by prefix: alpha_1 = {r['alpha_1']:.3f}, and alpha_2 given "
        f"the first token 0, 1, 2 = {', '.join(f'{a:.3f}' for a in r['alpha_2'])}. A single average rate "
        "hides this."
    )
    t = r["combined"]
    st.markdown(
        "E[N] needs one alpha_2: the chance the second draft is kept *given the first was kept*. Weight each "
        "prefix's alpha_2(x1) by the chance that x1 was drafted and kept, min(p1, q1)(x1), out of alpha_1:"
    )
    terms = " + ".join(f"{w:.3f}\\times{a:.3f}" for w, a in zip(t["weights"], r["alpha_2"]))
    st.latex(
        r"\alpha_2=\sum_{x_1}\frac{\min(p_1,q_1)(x_1)}{\alpha_1}\,\alpha_2(x_1)=" + terms + f"={t['alpha_2']:.4f}"
    )
    st.latex(
        rf"\mathbb{{E}}[N]=1+\alpha_1+\alpha_1\alpha_2=1+{t['alpha_1']:.4f}+{t['alpha_1']:.4f}\times{t['alpha_2']:.4f}"
        rf"={t['tokens']:.4f}"
    )
    st.caption(
        f"Enumerating every draft path of the round gives E[N] = {t['tokens_enumerated']:.4f}. The plain mean of "
        f"the alpha_2(x1) ({t['plain_mean']:.4f}) or weighting them by p1 ({t['p1_weighted']:.4f}) would be wrong: "
        "the second draft is only tried after an accepted first token, whose law is min(p1, q1) / alpha_1."
    )
