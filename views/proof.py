"""Proof: accept with min(1, p/q), resample from (p - q)+, and the emitted law is exactly p."""

from __future__ import annotations

import time

import numpy as np
import streamlit as st

from specdec_core import mistakes as mk
from specdec_core import proof_cases as pc
from specdec_core.mistakes import NAIVE_NORMALISATION, RuleCheck, all_rules, check_rule
from specdec_core.multiposition import markov_example, two_position_check
from specdec_core.rejection import MAX_DRAWS, check_pair, decomposition, emitted_distribution
from ui import proof_figures as figs
from ui.controls import bound_radio, bound_select, bound_text, slider_input
from ui.safe_text import md

SOURCES = {**pc.PRESETS, "logits": "from logits (temperature, top-k, top-p)", "custom": "type p and q"}
MISTAKES = ["correct", "resample_p", "raw_logits", "wrong_q", "naive_norm"]
SOURCE_HELP = "; ".join(f"{k}: {v}" for k, v in SOURCES.items())
WHAT_IT_SHOWS = {
    "correct": "The draws match p: the chi-square test finds nothing.",
    "resample_p": "Rejected mass is refilled in proportion to p, so a token where q >= p gets p from acceptance "
                  "and (1 - alpha) p again from the resample: exactly (2 - alpha) p. The other tokens fall short.",
    "raw_logits": "The ratio and the residual use softmax of the raw target logits, so the output follows "
                  "that law instead: the requested temperature and truncation are silently dropped.",
    "wrong_q": "The draft sampled from q with its own settings, but the verifier recomputes q from the draft's "
               "logits with the target's settings, so the accept probabilities and the residual no longer cancel.",
    "naive_norm": "(p - q)+ / sum (p - q)+ with no guard. With a non-empty residual it is the correct "
                  "rule; when p == q it computes 0/0 = NaN.",
}


def chi2_text(c: RuleCheck) -> str:
    """The chi-square statistic for the page; a draw on a token with p = 0 makes it infinite, said in words."""
    return f"{c.stat:.1f}" if np.isfinite(c.stat) else "infinite"


def p_value_text(c: RuleCheck) -> str:
    """The p-value for the page; one that underflows to 0 is shown as a bound, not as an exact 0."""
    return f"{c.p_value:.3g}" if c.p_value > 0 else "< 1e-300"


@st.cache_data(max_entries=64)
def sampled_checks(p: np.ndarray, q: np.ndarray, p_raw: np.ndarray, q_claimed: np.ndarray,
                   n: int, seed: int) -> list[RuleCheck]:
    """The correct rule and the four mistakes, each sampled n times and tested against p."""
    return [check_rule(rule, p, n, seed) for rule in all_rules(p, q, p_raw, q_claimed)]


@st.cache_data
def seed_loop() -> dict[str, float]:
    """The seed's own loop over 10,000 Dirichlet pairs, draw for draw."""
    return pc.seed_loop_check(10_000, seed=0)


@st.cache_data
def exhaustive(n_pairs: int = 10_000) -> dict[str, float]:
    """The same check over 10,000 other random pairs in one batched call, with its wall time."""
    p, q, _ = pc.random_pairs(n_pairs, seed=0)
    start = time.perf_counter()
    result = pc.exhaustive_check(p, q)
    return {**result, "ms": 1e3 * (time.perf_counter() - start)}


@st.cache_data
def two_positions(seed: int) -> dict:
    """Target joint, enumerated emitted joint, draft joint (V = 3), alpha_1, alpha_2 per prefix, max error,
    and the per-prefix alpha_2(x1) combined into the single alpha_2 of E[N]."""
    r = two_position_check(3, seed, conc=0.5)
    return {**r, "combined": pc.two_position_tokens(*markov_example(3, seed, conc=0.5), r["alpha_2"])}


def sampling_settings(who: str, prefix: str, default_t: float) -> tuple[float, int | None, float]:
    """Temperature, top-k and top-p controls for the target or the draft."""
    st.markdown(f"**{who}**")
    t = slider_input("temperature", f"{prefix}T", 0.0, 3.0, default_t, 0.05, "%.2f", help="0 = greedy (argmax).")
    k = slider_input("top-k", f"{prefix}k", 1, 50, 50, 1, help="Keep the k most probable tokens; k >= V keeps all.")
    top_p = slider_input(
        "top-p", f"{prefix}p", 0.01, 1.0, 1.0, 0.01, "%.2f", help="Keep the smallest set reaching this mass."
    )
    return float(t), int(k), float(top_p)


def controls() -> tuple[str, pc.ProofCase]:
    """Case picker and its parameters -> (source, case). Refused input shows a message and stops the page."""
    left, right = st.columns(2, gap="large")
    with left:
        src = bound_select("Case", list(SOURCES), key="preset", default="q_sharper", help=SOURCE_HELP)
        st.caption(SOURCES[src])
        v = slider_input("vocabulary size V", "vocab", pc.V_MIN, pc.V_MAX, pc.LOGITS_V, 1) if src != "custom" else None
    try:
        with right:
            if src == "dirichlet":
                seed = slider_input("seed", "seed", 0, 9999, 0, 1)
                cp = slider_input("concentration of p", "cp", 0.05, 10.0, 1.0, 0.05, "%.2f")
                cq = slider_input("concentration of q", "cq", 0.05, 10.0, 0.3, 0.05, "%.2f")
                return src, pc.case_from_pair(*pc.preset_pair(src, v, seed, cp, cq))
            if src == "custom":
                p = bound_text("p (target), comma-separated", "p", "0.5, 0.3, 0.2", max_len=4000)
                q = bound_text("q (draft), comma-separated", "q", "0.2, 0.3, 0.5", max_len=4000)
                return src, pc.case_from_pair(*check_pair(pc.parse_vector(p, "p"), pc.parse_vector(q, "q")))
            if src == "logits":
                seed = slider_input("seed", "seed", 0, 9999, pc.LOGITS_SEED, 1)
                noise = slider_input("draft noise (logit std)", "noise", 0.0, 5.0, pc.LOGITS_NOISE, 0.1, "%.1f",
                                     help="Draft logits = target logits + noise x N(0, 1).")
        if src == "logits":
            z_p, z_q = pc.logits_pair(v, seed, noise)
            tcol, dcol = st.columns(2, gap="large")
            with tcol:
                target = sampling_settings("Target (the requested law p)", "t", pc.TARGET_T)
            with dcol:
                draft = sampling_settings("Draft (the law q it samples from)", "d", pc.DRAFT_T)
            return src, pc.case_from_logits(z_p, z_q, target, draft)
        return src, pc.case_from_pair(*pc.preset_pair(src, v))
    except ValueError as exc:
        st.warning(
            f"**Input refused:** {md(exc, 200)}. Each vector needs {pc.V_MIN} to {pc.V_MAX} non-negative numbers "
            "that sum to 1, and p and q need the same length."
        )
        st.stop()


def exact_section(case: pc.ProofCase) -> None:
    """p and q, the decomposition that fills p, and alpha and TV as areas."""
    d = decomposition(case.p, case.q)
    a, tv = float(d["alpha"]), float(d["tv"])
    cols = st.columns(4)
    cols[0].metric("alpha = sum min(p, q)", f"{a:.4f}")
    cols[1].metric("TV(p, q)", f"{tv:.4f}")
    cols[2].metric("alpha - (1 - TV)", f"{d['identity_gap']:.1e}", help="Zero up to floating-point rounding.")
    cols[3].metric("max |emitted - p|", f"{d['max_error']:.1e}")
    left, right = st.columns(2)
    left.plotly_chart(figs.pq_figure(case.p, case.q), key="fig_pq")
    right.plotly_chart(figs.decomposition_figure(d["accepted"], d["resampled"], case.p), key="fig_decomp")
    st.plotly_chart(figs.areas_figure(a, tv), key="fig_areas")
    if d["residual_empty"]:
        st.info(
            "p == q: every proposal is kept, the residual is empty and is never drawn. The core returns "
            "r = p there instead of 0/0, so nothing divides by zero."
        )
    elif a == 0.0:
        st.info("Disjoint supports: alpha = 0, every proposal is rejected, and the residual is p itself.")


def sampling_section(case: pc.ProofCase, src: str) -> None:
    """n draws through the real rule and through each mistake, tested against p."""
    c1, c2 = st.columns(2, gap="large")
    with c1:
        n = slider_input("draws n", "n", 1_000, MAX_DRAWS, 100_000, 1_000, help="Up to 10^6, vectorised.")
    with c2:
        seed = slider_input("sampling seed", "sseed", 0, 9999, 0, 1)
    shown = bound_radio(
        "Rule to show beside the correct one",
        MISTAKES,
        key="mistake",
        default="resample_p",
        help="; ".join(f"{k}: {v}" for k, v in WHAT_IT_SHOWS.items()),
    )
    checks = {c.name: c for c in sampled_checks(case.p, case.q, case.p_raw, case.q_claimed, int(n), int(seed))}
    rows = [
        {
            "rule": c.label,
            "max |law - p|": "undefined (0/0)" if not c.defined else f"{c.max_error:.2e}",
            "TV(law, p)": "undefined" if not c.defined else f"{c.tv_to_p:.4f}",
            "kept, exact": f"{c.kept_exact:.3f}",
            "kept, sampled": f"{c.kept:.3f}",
            "chi-square": chi2_text(c),
            "dof": c.dof,
            "p-value": p_value_text(c),
            "verdict at 0.001": "rejects p" if c.p_value < 1e-3 else "consistent with p",
        }
        for c in checks.values()
    ]
    st.dataframe(rows, hide_index=True, key="checks")
    left, right = st.columns(2)
    for side, col, c in (("left", left, checks["correct"]), ("right", right, checks[shown])):
        with col:
            law = c.law if c.defined and c.max_error > 1e-12 else None
            st.plotly_chart(figs.sampled_figure(case.p, c.empirical, law, int(n), c.label), key=f"fig_sample_{side}")
            impossible = "" if np.isfinite(c.stat) else " (a draw landed on a token that p gives probability 0)"
            st.markdown(
                f"chi-square {chi2_text(c)} on {c.dof} dof{impossible}, **p-value {p_value_text(c)}**. "
                f"{WHAT_IT_SHOWS[c.name]} *Harmless {mk.HARMLESS_WHEN[c.name]}*"
            )
    kept_twist(checks)
    c = checks[shown]
    if not c.defined:
        st.warning(
            "This rule's law is **undefined** here: the residual is empty and normalising it gives "
            "0/0 = NaN. The draws look fine only because no proposal is ever rejected when p == q; a "
            "batched sampler that draws a residual token for every position (the usual GPU code) is "
            "handed NaN probabilities and fails or emits garbage."
        )
    elif c.name == NAIVE_NORMALISATION:
        nan = int(np.isnan(mk.naive_normalisation_rule(case.p, case.p).residual).sum())
        st.caption(
            f"The residual is non-empty here, so this rule coincides with the correct one. Fed this same p as "
            f"q (p == q), it divides 0 by 0: its residual is NaN in {nan} of {case.p.size} entries. Pick the "
            "case 'identical' to see the draws."
        )
    if src not in ("logits", "custom") and c.name in ("raw_logits", "wrong_q"):
        st.caption(
            f"A preset's p is read as the target's law at temperature {pc.TARGET_T} and q as the draft's at "
            f"{pc.DRAFT_T}: the raw target logits are {pc.TARGET_T} log p (softmax p^{pc.TARGET_T}), and the "
            f"wrong q is the draft's logits at the target's temperature, q^({pc.DRAFT_T:g}/{pc.TARGET_T}) "
            "renormalised. The from-logits case uses your own settings instead."
        )


@st.cache_data
def default_kept() -> tuple[float, float]:
    """Exact kept rates of the correct rule and of the raw-logits verifier at the from-logits defaults."""
    case = pc.default_logits_case()
    rules = {r.name: r for r in all_rules(case.p, case.q, case.p_raw, case.q_claimed)}
    return rules["correct"].kept_rate(), rules["raw_logits"].kept_rate()


def kept_twist(checks: dict[str, RuleCheck]) -> None:
    """A wrong verifier can keep more drafts than the right one: acceptance is no evidence of exactness."""
    ok, raw = checks["correct"].kept_exact, checks["raw_logits"].kept_exact
    d_ok, d_raw = default_kept()
    st.info(
        f"**A wrong verifier can look better.** Here the correct rule keeps {ok:.3f} of the drafts and the "
        f"raw-logits verifier {raw:.3f}. In the from-logits case at its defaults (target T {pc.TARGET_T}, draft "
        f"T {pc.DRAFT_T:g}) it keeps {d_raw:.3f} against the correct {d_ok:.3f}: raw logits are flatter than the "
        "tempered p, closer to the draft. A higher acceptance rate says nothing about exactness; only the "
        "law does.", icon=":material/warning:"
    )


def exhaustive_section() -> None:
    """The seed's 10,000-pair check (its own loop, then a batched variant) and the identical-draft edge case."""
    r, b = seed_loop(), exhaustive()
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


def multiposition_section() -> None:
    """Two positions of a Markov target and draft: the enumerated joint law equals the target's."""
    with st.columns(2)[0]:
        seed = slider_input("example seed", "mseed", 0, 999, 0, 1)
    r = two_positions(int(seed))
    cols = st.columns(3)
    cols[0].plotly_chart(figs.joint_figure(r["target"], "target p(t1, t2)"), key="fig_joint_p")
    cols[1].plotly_chart(figs.joint_figure(r["emitted"], "emitted, enumerated"), key="fig_joint_e")
    cols[2].plotly_chart(figs.joint_figure(r["draft"], "draft q(t1, t2), for contrast"), key="fig_joint_q")
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


def render() -> None:
    st.title("Proof: the emitted law is exactly p")
    st.markdown(
        "The draft proposes x ~ q. The target keeps x with probability min(1, p(x)/q(x)); otherwise it "
        "draws a replacement from (p - q)+, normalised. Pick a case and watch the two pieces fill p."
    )
    st.caption(
        "The rule is speculative sampling, introduced by Leviathan, Kalman & Matias, \"Fast Inference from "
        "Transformers via Speculative Decoding\" (ICML 2023), and independently by Chen et al., \"Accelerating "
        "Large Language Model Decoding with Speculative Sampling\" (2023)."
    )
    src, case = controls()
    st.subheader("1. p, q, and the two pieces of the emitted law")
    exact_section(case)
    st.subheader("2. Why it is exact")
    explanation()
    st.subheader("3. Sampling check, and the mistakes interviewers listen for")
    sampling_section(case, src)
    st.subheader("4. The exhaustive check from the seed")
    exhaustive_section()
    st.subheader("5. Two positions: the same argument, prefix by prefix")
    st.markdown(
        "Each position's p is conditioned on the accepted prefix. Below, a 3-token Markov target and "
        "draft run one speculative round with gamma = 2. Every path is enumerated: both drafts kept, the "
        "second corrected, or the first corrected and the next round supplying the second token."
    )
    multiposition_section()


render()
