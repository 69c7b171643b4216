"""The common wrong answers of each drill kind, each computed from the drill's inputs by the same core functions.

A mistake is (what it looks like, the value it produces). ``specdec_core.drills.grade`` names the mistake a
wrong answer matches (within the drill tolerance), so a student hears "that is E[N] before dividing by the
cost" instead of only the right number. A mistake whose value equals the answer (v = 1 assumed, when v is 1)
cannot be told apart from a right answer and is dropped. Choice drills (A or B) get the reason the wrong
choice is tempting, computed the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from specdec_core.algebra import best_gamma, break_even_alpha, expected_tokens, speedup, step_cost
from specdec_core.moe import expected_experts, expert_read_ratio
from specdec_core.paged_kv import pages_freed, pages_held
from specdec_core.rejection import acceptance_rate, match_acceptance, total_variation
from specdec_core.roofline import HARDWARE, bytes_per_weight, flops_per_weight_byte, ridge
from specdec_core.steptime import KV_PRECISIONS, SHAPES, kv_read_batch


@dataclass(frozen=True)
class Mistake:
    """A tempting wrong rule: what it looks like in words, and the number (or choice) it gives for this drill."""

    looks_like: str
    value: float | int | str


def tokens_mistakes(d: dict) -> list[Mistake]:
    a, g = d["alpha"], d["gamma"]
    n = float(expected_tokens(a, g))
    return [
        Mistake("you forgot the bonus (or correction) token: every pass emits one target token on top of the "
                "accepted drafts, so E[N] counts 1 + alpha + ... + alpha^gamma", n - 1.0),
        Mistake("gamma instead of gamma + 1 in the exponent: the sum runs over gamma + 1 terms, "
                "(1 - alpha^(gamma+1)) / (1 - alpha)", float(expected_tokens(a, g - 1)) if g >= 1 else float("nan")),
        Mistake("alpha x gamma + 1: the drafts are not accepted independently, the first rejection ends the "
                "round, so token i needs all i before it (alpha^i, the product)", a * g + 1.0),
        Mistake("gamma + 1: that is the ceiling at alpha = 1, when every draft is accepted", float(g + 1)),
    ]


def speedup_cfg_mistakes(cfg: dict) -> list[Mistake]:
    a, g, c, v = cfg["alpha"], cfg["gamma"], cfg["c"], cfg["v"]
    n, cost = float(expected_tokens(a, g)), float(step_cost(g, c, v))
    return [
        Mistake("E[N] before dividing by the cost: a speculative step costs gamma c + v target steps, so "
                "speedup = E[N] / (gamma c + v)", n),
        Mistake(f"v = 1 assumed: verification here costs v = {v:g} target steps, not 1", n / float(step_cost(g, c))),
        Mistake("you forgot the draft cost gamma c: the draft's gamma tokens are not free", n / v),
        Mistake("you forgot the bonus token in E[N]: it is 1 + alpha + ... + alpha^gamma", (n - 1.0) / cost),
        Mistake("(gamma + 1) c in the cost: the draft runs gamma times, not gamma + 1",
                n / float(step_cost(g + 1, c, v))),
    ]


def best_gamma_mistakes(d: dict) -> list[Mistake]:
    a, c, v = d["alpha"], d["c"], d["v"]
    g_star = best_gamma(a, c, v, max_gamma=32)[0]
    return [
        Mistake("the longest draft: E[N] grows with gamma, but each draft token costs c, so the speedup peaks",
                32),
        Mistake("a neighbour of the peak: the curve is flat there, so compare speedup(gamma) at gamma - 1, gamma "
                "and gamma + 1 exactly", g_star - 1),
        Mistake("a neighbour of the peak: the curve is flat there, so compare speedup(gamma) at gamma - 1, gamma "
                "and gamma + 1 exactly", g_star + 1),
        Mistake(f"the best gamma with c = 0: with a free draft longer is always better; the cost c = {c:g} is what "
                "sets the peak", best_gamma(a, 0.0, v, max_gamma=32)[0]),
    ]


def break_even_mistakes(d: dict) -> list[Mistake]:
    g, c, v = d["gamma"], d["c"], d["v"]
    out = [Mistake(f"v = 1 assumed: solve E[N] = gamma c + v with v = {v:g}", break_even_alpha(g, c, 1.0)),
           Mistake("you forgot the draft cost: solve E[N] = gamma c + v, not E[N] = v", break_even_alpha(g, 0.0, v)),
           Mistake("you forgot the bonus token: E[N] = 1 + alpha + ... + alpha^gamma, so the pass pays once "
                   "E[N], not E[N] - 1, reaches gamma c + v", break_even_alpha(g, c, v + 1.0))]
    return [m for m in out if m.value is not None]


def crossover_mistakes(d: dict) -> list[Mistake]:
    hw, g, mode = HARDWARE[d["hardware"]], d["gamma"], d["mode"]
    r, k = ridge(hw, mode), flops_per_weight_byte(mode)
    return [
        Mistake("gamma instead of gamma + 1: a verify pass scores gamma drafts plus the bonus position, "
                "gamma + 1 tokens per request", r / (k * g) if g else float("nan")),
        Mistake(f"you left out the precision's FLOP per weight byte ({k:g} in this mode): intensity is "
                f"{k:g} x B (gamma + 1)", r / (g + 1)),
        Mistake("the ridge itself: the crossover divides it by the tokens each weight byte serves, k (gamma + 1)",
                r),
    ]


def alpha_pq_mistakes(d: dict) -> list[Mistake]:
    p, q = np.asarray(d["p"]), np.asarray(d["q"])
    tv = float(total_variation(p, q))
    return [
        Mistake("TV(p, q), the mass that is rejected: alpha is 1 - TV = sum min(p, q)", tv),
        Mistake("sum p x q, the chance two independent draws agree: acceptance keeps min(p, q) of each token",
                float(match_acceptance(p, q))),
        Mistake("sum max(p, q) = 1 + TV: alpha sums the smaller of the two", float(np.maximum(p, q).sum())),
        Mistake("sum |p - q| without the half: that is 2 TV", 2.0 * tv),
    ]


def compare_mistakes(d: dict) -> list[Mistake]:
    sa, sb = (float(speedup(x["alpha"], x["gamma"], x["c"], x["v"])) for x in (d["A"], d["B"]))
    loser = "B" if sa > sb else "A"
    out: list[Mistake] = []
    n = {s: float(expected_tokens(d[s]["alpha"], d[s]["gamma"])) for s in "AB"}
    if n[loser] > n["A" if loser == "B" else "B"]:
        out.append(Mistake(f"you compared E[N] and forgot the cost: {loser} emits more tokens per pass but pays "
                           "more for them (gamma c + v)", loser))
    elif d[loser]["alpha"] > d["A" if loser == "B" else "B"]["alpha"]:
        out.append(Mistake(f"you compared alpha alone: {loser} accepts more often, but gamma, c and v decide too",
                           loser))
    else:
        out.append(Mistake("a guess from one input: compute E[N] / (gamma c + v) for both, the inputs pull "
                           "against each other", loser))
    return out


def tree_tokens_mistakes(d: dict) -> list[Mistake]:
    a, b = np.asarray(d["rates"], dtype=float), d["branching"]
    s = np.array([a[:x].sum() for x in b])               # (D,) S(b_d): chance some child at depth d is kept
    return [
        Mistake("you forgot the bonus (or correction) token: E[N] starts at 1", float(np.cumprod(s).sum())),
        Mistake("per-depth S(b) added without the product: depth d is reached only if every depth above it was, "
                "so its term is S(b_1) x ... x S(b_d)", 1.0 + float(s.sum())),
        Mistake("only the top-ranked child (a chain with a_1): the other children at a depth add their a_r",
                1.0 + float(np.cumprod(np.full(len(b), a[0])).sum())),
    ]


_RULE_FLAWS = {  # a predicate on the wrong rule: "the tempting rule A, which ..."
    "no_update": "keeps testing against p after a rejection: the second candidate must be tested against the "
                 "residual r = (p - q)+ normalised",
    "wor_ratio_q": "draws without replacement but divides by the original q, not the renormalised law the "
                   "candidate was really drawn from",
    "typical": "is Medusa's typical acceptance: it keeps a token when p clears a threshold, which is fast but "
               "changes the law",
    "typical_top": "is Medusa's typical acceptance: it keeps a token when p clears a threshold, which is fast but "
                   "changes the law",
}


def exact_rule_mistakes(d: dict) -> list[Mistake]:
    wrong = d["B"] if d["A"] in ("iid", "wor") else d["A"]
    side = "B" if wrong == d["B"] else "A"
    return [Mistake(f"the tempting rule {side}, which {_RULE_FLAWS[wrong]}", side)]


def kv_batch_mistakes(d: dict) -> list[Mistake]:
    m = SHAPES[d["model"]]
    b = float(kv_read_batch(m, d["mode"], d["context"], d["kv"]))
    return [
        Mistake("K alone: the cache holds K and V, 2 x layers x kv_heads x head_dim x bytes per token", 2.0 * b),
        Mistake(f"every query head cached: with grouped-query attention only the {m.kv_heads} KV heads are, "
                f"{m.group:g}x fewer than the query heads", b / m.group),
        Mistake("the whole parameter count as weights read: the input embedding table is a gather of a few rows, "
                "not a weight read per step", b * m.params / m.linear_params),
        Mistake("an FP8 KV cache priced at 2 bytes per element: FP8 is 1 byte, which doubles the batch",
                b * KV_PRECISIONS[d["kv"]][0] / 2.0),
        Mistake("B x L, the tokens of KV whose bytes match the weights: divide by the context L for the batch (it "
                "falls as 1 / L)",
                m.linear_params * bytes_per_weight(d["mode"]) / m.kv_bytes(d["kv"])),
    ]


def rollback_pages_mistakes(d: dict) -> list[Mistake]:
    n, g, k, page = d["cached"], d["gamma"], d["accepted"], d["page"]
    r = g - k
    return [
        Mistake("the rejected tokens, not pages: a page goes back to the free list only when none of its slots "
                "is still in use", r),
        Mistake(f"ceil(r / P), as if the rejected slots filled pages of their own: they start at slot "
                f"(n + k) mod P = {(n + k) % page} of a page the accepted tokens keep", -(-r // page)),
        Mistake("all gamma drafts rolled back: the k accepted ones stay, so the length moves back to n + k, not n",
                pages_freed(n, g, 0, page)),
        Mistake("every page the sequence holds: only the tail pages left empty are freed",
                pages_held(n + g, page)),
    ]


def sample_compare_mistakes(d: dict) -> list[Mistake]:
    p, q = np.asarray(d["p"]), np.asarray(d["q"])
    alpha, match = float(acceptance_rate(p, q)), float(match_acceptance(p, q))
    return [
        Mistake("0: both rules are exact, but exactness fixes the law emitted, not how often a draft is kept", 0.0),
        Mistake("sample-and-compare's own acceptance, sum p x q: the question asks how much more min(1, p/q) "
                "keeps", match),
        Mistake("min(1, p/q)'s own acceptance, sum min(p, q) = 1 - TV: subtract sample-and-compare's sum p x q",
                alpha),
        Mistake("TV(p, q), the mass min(1, p/q) rejects: the gap is sum min(p, q) - sum p x q",
                float(total_variation(p, q))),
    ]


def tree_mask_mistakes(d: dict) -> list[Mistake]:
    b = np.asarray(d["branching"])
    width = np.cumprod(b)                                  # (D,) nodes at each depth
    n, allowed = int(width.sum()), int((width * np.arange(1, b.size + 1)).sum())
    return [
        Mistake("a causal mask, N (N + 1) / 2: in a tree siblings and cousins must not see each other, a node "
                "sees only itself and its ancestors", n * (n + 1) // 2),
        Mistake("N^2, no mask at all: a node sees only itself and its ancestors", n * n),
        Mistake("N, the diagonal alone: a node also sees its ancestors, depth(i) entries in row i", n),
        Mistake("each node's ancestors without the node itself: row i has depth(i) entries, itself included",
                allowed - n),
    ]


def argmax_draft_mistakes(d: dict) -> list[Mistake]:
    p, q = np.asarray(d["p"]), np.asarray(d["q"])
    x = int(np.argmax(q))
    return [
        Mistake("sum min(p, q), the sampled draft's alpha: an argmax draft is a one-hot q, so min(1, p(x) / 1) "
                "keeps x with probability p(x)", float(acceptance_rate(p, q))),
        Mistake("q(x), the draft's own confidence: whether x is kept is decided by the target's p(x)", float(q[x])),
        Mistake("max p, the target's top probability: that is p(x) only when both models rank the same token "
                "first", float(p.max())),
        Mistake("exact match with the target's argmax: that is the greedy (T = 0) rule; sampling at T > 0 keeps x "
                "with probability p(x)", float(int(np.argmax(p)) == x)),
    ]


def moe_experts_mistakes(d: dict) -> list[Mistake]:
    e, k, t = d["experts"], d["top_k"], d["gamma"] + 1
    return [
        Mistake("T, as if every token met experts of its own: tokens share experts, E (1 - (1 - k/E)^T) / k < T",
                float(t)),
        Mistake("1, as for a dense target: a dense layer's weights serve every token, but each MoE token routes "
                "to its own top-k", 1.0),
        Mistake("the count of experts, not the ratio: divide by the k experts one decode token reads",
                float(expected_experts(e, k, t))),
        Mistake("gamma instead of gamma + 1 tokens: the pass verifies every draft and the bonus position",
                float(expert_read_ratio(e, k, max(1, t - 1)))),
    ]


def batch_tokens_mistakes(d: dict) -> list[Mistake]:
    a, g = np.asarray(d["alphas"]), d["gamma"]
    return [
        Mistake("B E[N] at the mean alpha: E[N] is convex in alpha, so the batch's tokens are the sum of each "
                "request's E[N], not E[N] of the average", float(a.size * expected_tokens(float(a.mean()), g))),
        Mistake("B (gamma + 1), every reserved slot: a request keeps its accepted prefix and one more token",
                float(a.size * (g + 1))),
        Mistake("1 + gamma alpha per request: drafts are kept only up to the first rejection",
                float(np.sum(1.0 + g * a))),
    ]
