"""Each kind of numeric drill, one entry in KINDS: how its inputs are drawn, its answer, how it is graded.

Adding a kind is one ``DrillKind`` here, its words in ``content.drill_text.WORDS`` and its figure in
``ui.interview.figures.FIGURES`` (a test checks the three hold the same kinds). A drill stores only its inputs;
its answer is recomputed from ``specdec_core`` each time, so no answer is typed in anywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from specdec_core.algebra import best_gamma, break_even_alpha, expected_tokens, speedup, step_cost
from specdec_core.drill_mistakes import (
    Mistake,
    alpha_pq_mistakes,
    argmax_draft_mistakes,
    batch_tokens_mistakes,
    best_gamma_mistakes,
    break_even_mistakes,
    compare_mistakes,
    crossover_mistakes,
    exact_rule_mistakes,
    kv_batch_mistakes,
    moe_experts_mistakes,
    rollback_pages_mistakes,
    sample_compare_mistakes,
    speedup_cfg_mistakes,
    tokens_mistakes,
    tree_mask_mistakes,
    tree_tokens_mistakes,
)
from specdec_core.moe import expert_read_ratio
from specdec_core.multidraft import multidraft_distribution
from specdec_core.paged_kv import pages_freed
from specdec_core.rejection import acceptance_rate, argmax_acceptance, match_acceptance
from specdec_core.roofline import HARDWARE, crossover_batch
from specdec_core.steptime import SHAPES, kv_read_batch
from specdec_core.trees import ancestor_mask, branching_tree, expected_accepted_length
from specdec_core.typical import SAMPLED, TOP, typical_distribution

_ALPHAS = np.round(np.arange(0.50, 0.951, 0.05), 2)   # 0.50, 0.55, ..., 0.95
_CS = (0.02, 0.05, 0.1, 0.15, 0.2)
_VS = (1.0, 1.1, 1.2, 1.5, 2.0)


# ------------------------------------------------------------ generators ----
def _gen_tokens(rng: np.random.Generator) -> dict:
    return {"alpha": float(rng.choice(_ALPHAS)), "gamma": int(rng.integers(1, 9))}


def _gen_speedup(rng: np.random.Generator) -> dict:
    return {"alpha": float(rng.choice(_ALPHAS)), "gamma": int(rng.integers(1, 9)),
            "c": float(rng.choice(_CS)), "v": float(rng.choice(_VS))}


def _gen_best_gamma(rng: np.random.Generator) -> dict:
    """alpha and c (v = 1) whose best integer gamma beats the runner-up by at least 0.5 %."""
    while True:
        a, c = float(rng.choice(_ALPHAS[2:])), float(rng.choice(_CS))
        g, s = best_gamma(a, c, 1.0, max_gamma=32)
        s_all = np.asarray(speedup(a, np.arange(33), c, 1.0))
        runner_up = np.max(np.delete(s_all, g))
        if s - runner_up >= 0.005 * s:
            return {"alpha": a, "c": c, "v": 1.0}


def _gen_break_even(rng: np.random.Generator) -> dict:
    """gamma, c, v whose cost lies inside (1, gamma + 1), so a break-even alpha in (0, 1) exists."""
    while True:
        g = int(rng.integers(2, 9))
        c, v = float(rng.choice((0.05, 0.1, 0.2, 0.3))), float(rng.choice((1.0, 1.2, 1.5, 2.0)))
        if 1.05 < float(step_cost(g, c, v)) < g + 0.5:
            return {"gamma": g, "c": c, "v": v}


def _gen_crossover(rng: np.random.Generator) -> dict:
    """A hardware preset, a draft length and a precision mode that the preset supports."""
    names = sorted(HARDWARE)
    while True:
        hw, g = str(rng.choice(names)), int(rng.integers(1, 8))
        mode = str(rng.choice(("bf16", "fp8", "w8a16")))
        if HARDWARE[hw].supports(mode):     # e.g. the A100 has no FP8 tensor cores
            return {"hardware": hw, "gamma": g, "mode": mode}


def _composition(rng: np.random.Generator, size: int, total: int = 20) -> list[float]:
    """A random law over `size` tokens in steps of 1/total (so it sums to 1 exactly in decimal)."""
    cuts = np.sort(rng.integers(0, total + 1, size=size - 1))
    counts = np.diff(np.concatenate([[0], cuts, [total]]))
    return [round(float(k) / total, 2) for k in counts]


def _gen_alpha_pq(rng: np.random.Generator) -> dict:
    """A small target law p and draft law q over 3 or 4 tokens, not identical."""
    size = int(rng.integers(3, 5))
    while True:
        p, q = _composition(rng, size), _composition(rng, size)
        if p != q:
            return {"p": p, "q": q}


def _gen_compare(rng: np.random.Generator) -> dict:
    """Two configurations whose speedups differ by at least 3 %, so the answer is clear."""
    while True:
        a, b = _gen_speedup(rng), _gen_speedup(rng)
        sa, sb = speedup(a["alpha"], a["gamma"], a["c"], a["v"]), speedup(b["alpha"], b["gamma"], b["c"], b["v"])
        if abs(sa - sb) >= 0.03 * max(sa, sb):
            return {"A": a, "B": b}


_TREE_RATES = ((0.6, 0.2), (0.5, 0.25), (0.7, 0.1), (0.4, 0.3), (0.5, 0.2, 0.1))
EXACT_RULES = ("iid", "wor")                                  # multi-draft recursive rejection
WRONG_RULES = ("no_update", "wor_ratio_q", "typical", "typical_top")


def _gen_tree_tokens(rng: np.random.Generator) -> dict:
    """Per-rank acceptance a_1, a_2 (, a_3) and a branching per depth over 2 or 3 depths."""
    rates = list(_TREE_RATES[int(rng.integers(len(_TREE_RATES)))])
    return {"rates": rates, "branching": [int(rng.integers(1, len(rates) + 1)) for _ in range(int(rng.integers(2, 4)))]}


def rule_law(rule: str, p: list[float], q: list[float], k: int) -> np.ndarray:
    """The emitted law (V,) of a multi-draft rule (specdec_core.multidraft) or of Medusa's typical acceptance
    (candidates sampled, or the draft's top-k) at its default thresholds."""
    if rule in ("typical", "typical_top"):
        return np.asarray(typical_distribution(p, q, k, candidates=SAMPLED if rule == "typical" else TOP).law)
    return np.asarray(multidraft_distribution(p, q, k, rule)[0])


def rule_tv(rule: str, p: list[float], q: list[float], k: int) -> float:
    """TV(emitted law, p) = 1/2 sum |law - p| of a rule (see rule_law)."""
    return float(0.5 * np.abs(rule_law(rule, p, q, k) - np.asarray(p)).sum())


def tree_depth_masses(d: dict) -> np.ndarray:
    """P(depth i of the draft tree is accepted) = prod_{j<=i} S(b_j), S(b) = a_1 + ... + a_b; (D,)."""
    rates = np.asarray(d["rates"], dtype=float)
    return np.cumprod([rates[:b].sum() for b in d["branching"]])


def _gen_exact_rule(rng: np.random.Generator) -> dict:
    """A pair over 4 tokens, k = 2, one exact rule and one biased one (TV >= 0.02 here), in random order."""
    while True:
        p, q = _composition(rng, 4), _composition(rng, 4)
        exact, wrong = str(rng.choice(EXACT_RULES)), str(rng.choice(WRONG_RULES))
        if p != q and rule_tv(wrong, p, q, 2) >= 0.02:
            a, b = (exact, wrong) if rng.random() < 0.5 else (wrong, exact)
            return {"p": p, "q": q, "k": 2, "A": a, "B": b}


_CONTEXTS = (2048, 4096, 8192, 16384, 32768)
_PAGE_SIZES = (8, 16, 32)                                   # vLLM's default block is 16 tokens


def _gen_kv_batch(rng: np.random.Generator) -> dict:
    """A model of SHAPES (BF16 weights), a context and a KV-cache precision."""
    return {"model": str(rng.choice(sorted(SHAPES))), "context": int(rng.choice(_CONTEXTS)),
            "mode": "bf16", "kv": str(rng.choice(("bf16", "fp8")))}


def _gen_rollback_pages(rng: np.random.Generator) -> dict:
    """n cached tokens, gamma drafts, k < gamma - 1 accepted (at least 2 rejected), page size P; half the drills
    free a page, half free none."""
    frees = bool(rng.random() < 0.5)
    while True:
        g = int(rng.integers(3, 9))
        d = {"cached": int(rng.integers(10, 400)), "gamma": g, "accepted": int(rng.integers(0, g - 1)),
             "page": int(rng.choice(_PAGE_SIZES))}
        if (pages_freed(**d) > 0) == frees:
            return d


def _gen_sample_compare(rng: np.random.Generator) -> dict:
    """p and q over 3 or 4 tokens in steps of 0.1 (so the answer has two decimals, never a tolerance-edge half),
    where min(1, p/q) keeps at least 0.02 more than sample-and-compare."""
    size = int(rng.integers(3, 5))
    while True:
        d = {"p": _composition(rng, size, total=10), "q": _composition(rng, size, total=10)}
        if d["p"] != d["q"] and sample_compare_gap(d) >= 0.02:
            return d


def _gen_tree_mask(rng: np.random.Generator) -> dict:
    """A branching per depth over 2 or 3 depths, at least one depth branching, at most 40 nodes."""
    while True:
        b = [int(rng.integers(1, 4)) for _ in range(int(rng.integers(2, 4)))]
        if max(b) > 1 and int(np.cumprod(b).sum()) <= 40:
            return {"branching": b}


# (routed experts, top-k): DeepSeek-V3, Qwen3-MoE (235B), DeepSeek-MoE 16B, Mixtral 8x7B
_MOE_SHAPES = ((256, 8), (128, 8), (64, 6), (8, 2))


def _gen_argmax_draft(rng: np.random.Generator) -> dict:
    """p and q over 3 or 4 tokens in steps of 0.05, q with one most likely token, where the argmax draft's
    acceptance p(argmax q) and the sampled draft's sum min(p, q) differ by at least 0.05."""
    size = int(rng.integers(3, 5))
    while True:
        d = {"p": _composition(rng, size), "q": _composition(rng, size)}
        top = sorted(d["q"])
        if top[-1] > top[-2] and abs(argmax_acceptance(d["p"], d["q"]) - acceptance_rate(d["p"], d["q"])) >= 0.05:
            return d


def _gen_moe_experts(rng: np.random.Generator) -> dict:
    """A routed-expert shape (E, top-k) and a draft length; the pass verifies gamma + 1 tokens."""
    e, k = _MOE_SHAPES[int(rng.integers(len(_MOE_SHAPES)))]
    return {"experts": e, "top_k": k, "gamma": int(rng.integers(1, 8))}


def _gen_batch_tokens(rng: np.random.Generator) -> dict:
    """Four requests' acceptances and one gamma, spread enough that E[N] at the mean alpha is off by >= 2 %."""
    while True:
        alphas = sorted(float(a) for a in rng.choice(np.round(np.arange(0.2, 0.951, 0.05), 2), size=4))
        d = {"alphas": alphas, "gamma": int(rng.integers(2, 7))}
        at_mean = 4 * float(expected_tokens(float(np.mean(alphas)), d["gamma"]))
        if abs(at_mean - batch_tokens_of(d)) >= 0.02 * batch_tokens_of(d):
            return d


# --------------------------------------------------------------- answers ----
def speedup_of(cfg: dict) -> float:
    """E[N] / (gamma c + v) for a configuration {alpha, gamma, c, v}."""
    return float(speedup(cfg["alpha"], cfg["gamma"], cfg["c"], cfg["v"]))


def break_even_of(d: dict) -> float:
    """The alpha where speedup = 1; ValueError if no alpha in [0, 1] reaches it (cost > gamma + 1)."""
    a = break_even_alpha(d["gamma"], d["c"], d["v"])
    if a is None:
        raise ValueError(f"no alpha in [0, 1] breaks even: cost gamma c + v exceeds gamma + 1 = {d['gamma'] + 1}")
    return float(a)


def kv_batch_of(d: dict) -> float:
    """B where the model's KV reads per step equal its weight reads at this context (steptime.kv_read_batch)."""
    return float(kv_read_batch(SHAPES[d["model"]], d["mode"], d["context"], d["kv"]))


def sample_compare_gap(d: dict) -> float:
    """sum min(p, q) - sum p q: the acceptance min(1, p/q) keeps over sample-and-compare (both exact)."""
    return float(acceptance_rate(d["p"], d["q"])) - float(match_acceptance(d["p"], d["q"]))


def batch_tokens_of(d: dict) -> float:
    """sum_i E[N](alpha_i, gamma): tokens a batch's verify pass emits, each request at its own acceptance."""
    return float(np.sum(expected_tokens(np.asarray(d["alphas"]), d["gamma"])))


def tree_mask_of(d: dict) -> np.ndarray:
    """The (N, N) tree attention mask of the drill's branching tree (trees.ancestor_mask)."""
    return ancestor_mask(branching_tree(d["branching"]))


# -------------------------------------------------------------- registry ----
@dataclass(frozen=True)
class DrillKind:
    """All the core knows of one kind of drill. answer_type: 'number' (within the tolerance), 'integer' (exact)
    or 'choice' ('A' or 'B'); verdict: the answer in words, '{}' standing for it (integer and choice kinds);
    whole_batch: the answer is a batch, so either whole number beside it is also right."""

    title: str
    generate: Callable[[np.random.Generator], dict]
    answer: Callable[[dict], float | int | str]
    mistakes: Callable[[dict], list[Mistake]]
    answer_type: str = "number"
    verdict: str = ""
    senior: bool = False
    whole_batch: bool = False


KINDS: dict[str, DrillKind] = {
    "tokens": DrillKind("Expected tokens per pass", _gen_tokens,
                        lambda d: float(expected_tokens(d["alpha"], d["gamma"])), tokens_mistakes),
    "speedup": DrillKind("Speedup", _gen_speedup, speedup_of, speedup_cfg_mistakes),
    "best_gamma": DrillKind("Best draft length", _gen_best_gamma,
                            lambda d: best_gamma(d["alpha"], d["c"], d["v"], max_gamma=32)[0], best_gamma_mistakes,
                            answer_type="integer", verdict="the best gamma is {}"),
    "break_even": DrillKind("Break-even acceptance", _gen_break_even, break_even_of, break_even_mistakes),
    "crossover": DrillKind("Crossover batch", _gen_crossover,
                           lambda d: float(crossover_batch(HARDWARE[d["hardware"]], d["gamma"], d["mode"])),
                           crossover_mistakes, whole_batch=True),
    "alpha_pq": DrillKind("Alpha from p and q", _gen_alpha_pq, lambda d: float(acceptance_rate(d["p"], d["q"])),
                          alpha_pq_mistakes),
    "compare": DrillKind("Which configuration is faster", _gen_compare,
                         lambda d: "A" if speedup_of(d["A"]) > speedup_of(d["B"]) else "B", compare_mistakes,
                         answer_type="choice", verdict="{} is faster"),
    "tree_tokens": DrillKind("Expected tokens from a draft tree", _gen_tree_tokens,
                             lambda d: expected_accepted_length(branching_tree(d["branching"]), d["rates"]),
                             tree_tokens_mistakes),
    "exact_rule": DrillKind("Which verifier is exact", _gen_exact_rule,
                            lambda d: "A" if rule_tv(d["A"], d["p"], d["q"], d["k"]) < 1e-12 else "B",
                            exact_rule_mistakes, answer_type="choice", verdict="{} emits exactly p"),
    # what a senior interviewer probes next: long context, paged KV, exact rules compared, tree masks
    "kv_batch": DrillKind("Where KV reads take over (long context)", _gen_kv_batch, kv_batch_of,
                          kv_batch_mistakes, senior=True, whole_batch=True),
    "rollback_pages": DrillKind("Rollback in a paged KV cache", _gen_rollback_pages,
                                lambda d: pages_freed(d["cached"], d["gamma"], d["accepted"], d["page"]),
                                rollback_pages_mistakes, answer_type="integer",
                                verdict="the rollback frees {} page(s)", senior=True),
    "sample_compare": DrillKind("What sample-and-compare gives up", _gen_sample_compare, sample_compare_gap,
                                sample_compare_mistakes, senior=True),
    "tree_mask": DrillKind("Tree attention mask", _gen_tree_mask, lambda d: int(tree_mask_of(d).sum()),
                           tree_mask_mistakes, answer_type="integer", verdict="the mask allows {} entries",
                           senior=True),
}
KINDS |= {  # what serving engines do in 2026: argmax drafts, MoE targets, uneven acceptance in a batch
    "argmax_draft": DrillKind("Acceptance of an argmax draft (vLLM, TensorRT-LLM)", _gen_argmax_draft,
                              lambda d: argmax_acceptance(d["p"], d["q"]), argmax_draft_mistakes, senior=True),
    "moe_experts": DrillKind("Expert weights a verify pass reads (MoE target)", _gen_moe_experts,
                             lambda d: expert_read_ratio(d["experts"], d["top_k"], d["gamma"] + 1),
                             moe_experts_mistakes, senior=True),
    "batch_tokens": DrillKind("Tokens per pass of a batch with uneven acceptance", _gen_batch_tokens, batch_tokens_of,
                              batch_tokens_mistakes, senior=True),
}
DRILL_KINDS: tuple[str, ...] = tuple(KINDS)
SENIOR_KINDS: tuple[str, ...] = tuple(k for k, kind in KINDS.items() if kind.senior)
DRILL_LEVELS: dict[str, tuple[str, ...]] = {     # the sets the interview page offers, each seeded the same way
    "All": DRILL_KINDS,
    "Foundations": tuple(k for k in DRILL_KINDS if k not in SENIOR_KINDS),
    "Senior": SENIOR_KINDS,
}
DRILL_TITLES: dict[str, str] = {k: kind.title for k, kind in KINDS.items()}
