"""The proof page's cached results and its fixed wording: every number comes from specdec_core, computed once per
input and reused by every session (sampled checks say how many draws they used)."""

from __future__ import annotations

import time

import numpy as np
import streamlit as st

from specdec_core import proof_cases
from specdec_core.mistakes import RuleCheck, all_rules, check_rule
from specdec_core.multiposition import markov_example, two_position_check
from specdec_core.rejection import decomposition
from ui.figure_cache import cached_figure
from ui.proof import figures as figs

SOURCES = {**proof_cases.PRESETS, "logits": "from logits (temperature, top-k, top-p)", "custom": "type p and q"}
MISTAKES = ["correct", "resample_p", "raw_logits", "wrong_q", "naive_norm"]
MISTAKE_LABELS = {  # what the page shows for each rule (the URL keeps the short names)
    "correct": "the correct rule", "resample_p": "resample from p, not (p - q)+",
    "raw_logits": "ratio on the raw logits", "wrong_q": "q recomputed with the target's settings",
    "naive_norm": "residual normalised without a guard"}
SOURCE_HELP = "Shared addresses name the case by its short name (?preset=q_sharper)."
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

pq_figure = cached_figure(figs.pq_figure)
decomposition_figure = cached_figure(figs.decomposition_figure)
areas_figure = cached_figure(figs.areas_figure)
sampled_figure = cached_figure(figs.sampled_figure)
joint_figure = cached_figure(figs.joint_figure)


def chi2_text(c: RuleCheck) -> str:
    """The chi-square statistic for the page; a draw on a token with p = 0 makes it infinite, said in words."""
    return f"{c.stat:.1f}" if np.isfinite(c.stat) else "infinite"


def p_value_text(c: RuleCheck) -> str:
    """The p-value for the page; one that underflows to 0 is shown as a bound, not as an exact 0."""
    return f"{c.p_value:.3g}" if c.p_value > 0 else "< 1e-300"


@st.cache_data(max_entries=64, show_spinner=False)
def exact_pieces(p: np.ndarray, q: np.ndarray) -> dict:
    """decomposition(p, q): min(p, q), (1 - alpha) r, alpha, TV and the identity's rounding gap."""
    return decomposition(p, q)


@st.cache_data(max_entries=64, show_spinner="Drawing the samples...")
def sampled_checks(p: np.ndarray, q: np.ndarray, p_raw: np.ndarray, q_claimed: np.ndarray,
                   n: int, seed: int) -> list[RuleCheck]:
    """The correct rule and the four mistakes, each sampled n times and tested against p."""
    return [check_rule(rule, p, n, seed) for rule in all_rules(p, q, p_raw, q_claimed)]


@st.cache_data(show_spinner=False)
def seed_loop() -> dict[str, float]:
    """The seed's own loop over 10,000 Dirichlet pairs, draw for draw."""
    return proof_cases.seed_loop_check(10_000, seed=0)


@st.cache_data(show_spinner=False)
def exhaustive(n_pairs: int = 10_000) -> dict[str, float]:
    """The same check over 10,000 other random pairs in one batched call, with its wall time."""
    p, q, _ = proof_cases.random_pairs(n_pairs, seed=0)
    start = time.perf_counter()
    result = proof_cases.exhaustive_check(p, q)
    return {**result, "ms": 1e3 * (time.perf_counter() - start)}


@st.cache_data(max_entries=64, show_spinner=False)
def two_positions(seed: int) -> dict:
    """Target joint, enumerated emitted joint, draft joint (V = 3), alpha_1, alpha_2 per prefix, max error,
    and the per-prefix alpha_2(x1) combined into the single alpha_2 of E[N]."""
    r = two_position_check(3, seed, conc=0.5)
    return {**r, "combined": proof_cases.two_position_tokens(*markov_example(3, seed, conc=0.5), r["alpha_2"])}


@st.cache_data(show_spinner=False)
def default_kept() -> tuple[float, float]:
    """Exact kept rates of the correct rule and of the raw-logits verifier at the from-logits defaults."""
    case = proof_cases.default_logits_case()
    rules = {r.name: r for r in all_rules(case.p, case.q, case.p_raw, case.q_claimed)}
    return rules["correct"].kept_rate(), rules["raw_logits"].kept_rate()
