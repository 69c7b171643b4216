"""The trees page's cached results, page limits and table rows: every number from specdec_core, computed once per
input and reused by every session; sampled checks are bounded by a draw budget and say what they drew."""

from __future__ import annotations

import numpy as np
import streamlit as st

from specdec_core import proof_cases, roofline, steptime, trees, typical
from specdec_core.mistakes import RuleCheck
from specdec_core.multidraft import (
    IID,
    NO_UPDATE,
    RULES,
    WOR,
    WOR_RATIO_Q,
    acceptance_by_k,
    check_multidraft,
    exhaustive_multidraft_check,
    multidraft_distribution,
)
from specdec_core.tree_cost import PER_DEPTH, TreeVsChain, tree_vs_chain
from ui.figure_cache import cached_figure
from ui.trees import figures as figs

V_PAGE, K_PAGE = 16, 5            # page limits: the without-replacement law enumerates up to V^k rejection paths
DRAW_BUDGET = 60_000              # candidate draws (k per position) one sampled check may make: ~0.4 s at V 16, k 5
PRESETS = [name for name in proof_cases.PRESETS if name != "identical"] + ["identical"]
WRONG = [NO_UPDATE, WOR_RATIO_Q]
BATCH = np.unique(np.round(np.geomspace(1, 1024, 121)))
CONTEXTS = ["256", "2048", "16384"]
CONTEXT_DEFAULT = "256"           # short prompts: the batch reaches the compute roof and speculation switches off

acceptance_k_figure = cached_figure(figs.acceptance_k_figure)
laws_figure = cached_figure(figs.laws_figure)
tv_curve_figure = cached_figure(figs.tv_curve_figure)
tree_figure = cached_figure(figs.tree_figure)
against_batch_figure = cached_figure(figs.against_batch_figure)
best_gamma_figure = cached_figure(figs.best_gamma_figure)


def pvalue_text(c: RuleCheck) -> str:
    """A p-value for the page; one that underflows is a bound, never an exact 0."""
    return f"{c.p_value:.3g}" if c.p_value > 0 else "< 1e-300"


def capped_draws(n: int, k: int) -> int:
    """The draws a sampled check makes: n, cut to DRAW_BUDGET / k (whole thousands, at least 1,000)."""
    return min(n, max(1_000, DRAW_BUDGET // k // 1_000 * 1_000))


def check_rows(checks: list[RuleCheck]) -> list[dict]:
    """One table row per rule: exact distance from p and the sampled verdict."""
    return [{"rule": c.label, "max |law - p|": f"{c.max_error:.2e}", "TV(law, p)": f"{c.tv_to_p:.4f}",
             "kept": f"{c.kept:.3f}", "chi-square": f"{c.stat:.1f}" if np.isfinite(c.stat) else "infinite",
             "dof": c.dof, "p-value": pvalue_text(c),
             "verdict at 0.001": "rejects p" if c.p_value < 1e-3 else "consistent with p"} for c in checks]


@st.cache_data(max_entries=64, show_spinner=False)
def multidraft_data(p: np.ndarray, q: np.ndarray, k: int, wrong: str) -> dict:
    """Acceptance against k for both exact rules, the laws at k, and the wrong variant's law."""
    return {"iid": acceptance_by_k(p, q, K_PAGE, IID), "wor": acceptance_by_k(p, q, K_PAGE, WOR),
            "law_iid": multidraft_distribution(p, q, k, IID)[0], "law_wor": multidraft_distribution(p, q, k, WOR)[0],
            "law_wrong": multidraft_distribution(p, q, k, wrong)[0]}


@st.cache_data(max_entries=64, show_spinner=False)
def rank_rates(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """a_r, r = 1..4: P(the rank-r candidate is the one kept), the exact rule without replacement."""
    return trees.rank_rates(p, q, 4, WOR)


@st.cache_data(max_entries=32, show_spinner="Drawing the samples...")
def sampled(p: np.ndarray, q: np.ndarray, k: int, n: int, seed: int) -> list[RuleCheck]:
    """Every multi-draft rule sampled n times and tested against p."""
    return [check_multidraft(p, q, k, rule, n, seed) for rule in RULES]


@st.cache_data(show_spinner="Checking 10,000 random pairs...")
def exhaustive() -> dict[str, dict[str, float]]:
    """10,000 random pairs through each exact rule: i.i.d. with k = 4 (V up to 49), without replacement k = 3 (V up
    to 10, the enumeration's size)."""
    p, q, _ = proof_cases.random_pairs(10_000, seed=0)
    p10, q10, _ = proof_cases.random_pairs(10_000, seed=1, v_hi=10)
    return {"iid": exhaustive_multidraft_check(p, q, 4, IID), "wor": exhaustive_multidraft_check(p10, q10, 3, WOR)}


@st.cache_data(max_entries=64, show_spinner=False)
def typical_exact(p: np.ndarray, q: np.ndarray, k: int, eps: float, delta: float, cand: str, vary: str) -> dict:
    """Typical acceptance's exact law and its TV and acceptance curve against epsilon or delta."""
    grid = np.linspace(0.0, 1.0, 101)
    tv, acc = typical.tv_curve(p, q, k, grid, vary, eps, delta, cand)
    return {"law": typical.typical_distribution(p, q, k, eps, delta, cand), "grid": grid, "tv": tv, "acc": acc,
            "exact_acc": float(acceptance_by_k(p, q, k, IID)[-1])}


@st.cache_data(max_entries=32, show_spinner="Drawing the samples...")
def typical_checks(p: np.ndarray, q: np.ndarray, k: int, eps: float, delta: float, cand: str,
                   n: int, seed: int) -> list[RuleCheck]:
    """The exact i.i.d. rule and typical acceptance, each sampled n times and tested against p."""
    return [check_multidraft(p, q, k, IID, n, seed), typical.check_typical(p, q, k, n, eps, delta, cand, seed)]


@st.cache_data(max_entries=64, show_spinner=False)
def cost_data(tree: trees.Tree, rates: np.ndarray, target: str, draft: str, hw: str, mode: str,
              context: int, draft_pass: float | None, drafter: str = PER_DEPTH) -> TreeVsChain:
    """The tree against the chains, under the step-time model (draft passes at a fixed cost if given; one per depth,
    or one per tree for Medusa heads)."""
    return tree_vs_chain(
        tree,
        rates,
        steptime.SHAPES[target],
        steptime.SHAPES[draft],
        roofline.HARDWARE[hw],
        mode,
        context,
        BATCH,
        draft_pass,
        drafter,
    )
