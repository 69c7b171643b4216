"""The words of a drill: its prompt, its governing formula and its worked solution in the seed's style.

Every number in the text is computed by ``specdec_core`` from the drill's inputs; nothing is stored.
The drill itself (its inputs, its answer, its grading) is ``specdec_core.drills.Drill``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from specdec_core.algebra import best_gamma, expected_tokens, speedup, step_cost
from specdec_core.drill_kinds import (
    batch_tokens_of,
    break_even_of,
    kv_batch_of,
    rule_tv,
    sample_compare_gap,
    speedup_of,
    tree_mask_of,
)
from specdec_core.drills import Drill
from specdec_core.moe import expected_experts, expert_read_ratio
from specdec_core.paged_kv import pages_freed, pages_held
from specdec_core.rejection import (
    acceptance_rate,
    accepted_mass,
    argmax_acceptance,
    match_acceptance,
    matched_mass,
    total_variation,
)
from specdec_core.roofline import HARDWARE, MODE_LABELS, bytes_per_weight, crossover_batch, flops_per_weight_byte, ridge
from specdec_core.steptime import KV_LABELS, KV_PRECISIONS, SHAPES


@dataclass(frozen=True)
class DrillWords:
    """The words of one drill kind: its governing formula (LaTeX), its question and its worked solution, each
    written from the drill's inputs."""

    formula: str
    ask: Callable[[dict], str]
    solve: Callable[[dict], list[str]]


RULE_TEXT: dict[str, str] = {
    "iid": "draw both candidates i.i.d. from q; keep candidate i w.p. min(1, r/q), and after each rejection "
           "replace r by (r - q)+ normalised (r starts as p); if both fail, draw from the last r",
    "wor": "draw the candidates from q without replacement; keep candidate i w.p. min(1, r/q_i), q_i being q "
           "without the earlier candidates, renormalised, and after a rejection replace r by (r - q_i)+ "
           "normalised; if both fail, draw from the last r",
    "no_update": "draw both candidates i.i.d. from q; keep each w.p. min(1, p/q), always against p itself; "
                 "if both fail, draw from (p - q)+ normalised",
    "wor_ratio_q": "draw the candidates from q without replacement; keep candidate i w.p. min(1, r/q) with the "
                   "original q, after a rejection replace r by (r - q)+ normalised; if both fail, draw from r",
    "typical": "draw both candidates i.i.d. from q; keep the first with p(x) > min(0.09, 0.3 exp(-H(p))) "
               "(Medusa's typical acceptance); if none passes, draw from p restricted to p >= that threshold",
    "typical_top": "take the draft's two most likely tokens; keep the first with p(x) > min(0.09, 0.3 "
                   "exp(-H(p))) (Medusa's typical acceptance); if none passes, draw from p restricted to p >= "
                   "that threshold",
}


# ------------------------------------------------------------- solutions ----
def _tokens_lines(a: float, g: int) -> list[str]:
    power = a ** (g + 1)
    n = float(expected_tokens(a, g))
    return [
        f"E[N]    = (1 - {a:g}^{g + 1}) / (1 - {a:g}) = (1 - {power:.4g}) / {round(1 - a, 6):g}"
        f" = {n:.3f} tokens per pass"
    ]


def _speedup_lines(cfg: dict, name: str = "") -> list[str]:
    a, g, c, v = cfg["alpha"], cfg["gamma"], cfg["c"], cfg["v"]
    cost = float(step_cost(g, c, v))
    n = float(expected_tokens(a, g))
    tag = f"{name}: " if name else ""
    return [
        f"{tag}alpha = {a:g}, gamma = {g}, c = {c:g}, v = {v:g}",
        *_tokens_lines(a, g),
        f"cost    = {g} x {c:g} + {v:g} = {cost:.2f} target steps",
        f"speedup = {n:.3f} / {cost:.2f} = {n / cost:.2f}x",
    ]


def _sol_tokens(d: dict) -> list[str]:
    a, g = d["alpha"], d["gamma"]
    terms = " + ".join(f"{a**i:.4g}" for i in range(g + 1))
    return [
        f"alpha = {a:g}, gamma = {g}",
        *_tokens_lines(a, g),
        f"check: 1 + alpha + ... + alpha^{g} = {terms}",
        f"sanity: at most gamma + 1 = {g + 1} (every draft kept, plus the bonus token)",
    ]


def _sol_speedup(d: dict) -> list[str]:
    g, c, v = d["gamma"], d["c"], d["v"]
    cost = float(step_cost(g, c, v))
    floor = float(speedup(0.0, g, c, v))
    return [
        *_speedup_lines(d),
        f"sanity: alpha -> 0 gives 1 / {cost:.2f} = {floor:.2f}x" + (" (a slowdown)" if floor < 1 else ""),
        f"        alpha -> 1 gives {g + 1} / {cost:.2f} = {float(speedup(1.0, g, c, v)):.2f}x (the gamma + 1 ceiling)",
    ]


def _sol_best_gamma(d: dict) -> list[str]:
    a, c, v = d["alpha"], d["c"], d["v"]
    g_star, s_star = best_gamma(a, c, v, max_gamma=32)
    gammas = np.arange(max(0, g_star - 2), g_star + 3)
    s = np.asarray(speedup(a, gammas, c, v))
    rows = [
        f"gamma = {int(g):2d}: E[N] = {float(expected_tokens(a, g)):.3f}, cost = {float(step_cost(g, c, v)):.2f}, "
        f"speedup = {float(x):.3f}x"
        for g, x in zip(gammas, s)
    ]
    return [
        f"alpha = {a:g}, c = {c:g}, v = {v:g}; try integer draft lengths around the peak",
        *rows,
        f"best gamma = {g_star} at {s_star:.2f}x: one more draft token adds alpha^(gamma+1) tokens but costs c = {c:g}",
    ]


def _sol_break_even(d: dict) -> list[str]:
    g, c, v = d["gamma"], d["c"], d["v"]
    cost = float(step_cost(g, c, v))
    a = break_even_of(d)
    return [
        f"gamma = {g}, c = {c:g}, v = {v:g}",
        f"cost    = {g} x {c:g} + {v:g} = {cost:.2f} target steps per speculative step",
        f"pays when E[N] > {cost:.2f}: solve (1 - alpha^{g + 1}) / (1 - alpha) = {cost:.2f}",
        f"E[N] rises with alpha (1 at alpha = 0, {g + 1} at alpha = 1), so bisect: alpha = {a:.3f}",
        f"check: E[N]({a:.3f}) = {float(expected_tokens(a, g)):.3f}, speedup = {float(speedup(a, g, c, v)):.3f}x",
    ]


def _sol_crossover(d: dict) -> list[str]:
    hw, g, mode = HARDWARE[d["hardware"]], d["gamma"], d["mode"]
    k = flops_per_weight_byte(mode)
    r = ridge(hw, mode)
    b = float(crossover_batch(hw, g, mode))
    prec = "FP8" if mode == "fp8" else "BF16"
    return [
        f"{d['hardware']}, {MODE_LABELS[mode]}, gamma = {g}",
        f"ridge   = {hw.peak_flops(mode) / 1e12:g} TFLOP/s / {hw.bandwidth_tbs:g} TB/s = {r:.0f} FLOP per byte"
        f" ({prec} peak)",
        f"verify  = {k:g} x B x (gamma + 1) = {k * (g + 1):g} B FLOP per byte",
        f"          ({k:g} FLOP per weight byte per token; weight-dominated linear layers)",
        f"cross   = {r:.0f} / {k * (g + 1):g} = {b:.1f}",
        "above this batch verification is compute-bound",
        "(the weights' roofline crossover, not a measured speedup boundary: at long context the KV reads, "
        "context x batch, keep v near 1 past it; see the KV-reads drill)",
    ]


def _sol_alpha_pq(d: dict) -> list[str]:
    mins = accepted_mass(d["p"], d["q"])
    tv = float(total_variation(d["p"], d["q"]))
    alpha = float(acceptance_rate(d["p"], d["q"]))
    return [
        f"p = {d['p']}, q = {d['q']}",
        f"min(p, q) = [{', '.join(f'{x:g}' for x in mins)}]",
        f"alpha     = {' + '.join(f'{x:g}' for x in mins)} = {alpha:.2f}",
        f"check: TV = 1/2 x sum |p - q| = {tv:.2f}, and 1 - TV = {1 - tv:.2f}",
    ]


def _sol_compare(d: dict) -> list[str]:
    sa, sb = speedup_of(d["A"]), speedup_of(d["B"])
    win = "A" if sa > sb else "B"
    return [
        *_speedup_lines(d["A"], "A"),
        *_speedup_lines(d["B"], "B"),
        f"{win} is faster: {max(sa, sb):.2f}x against {min(sa, sb):.2f}x",
    ]


def _sol_tree_tokens(d: dict) -> list[str]:
    a, b = d["rates"], d["branching"]
    sums = [float(np.sum(a[:x])) for x in b]
    prods = np.cumprod(sums)
    return [
        f"a = {a}, branching {b}: {int(np.cumprod(b).sum())} nodes",
        "S(b)    = " + ", ".join(f"S({x}) = {sv:.4g}" for x, sv in zip(b, sums)) + "  (siblings exclude each other)",
        "paths   = " + ", ".join(f"depth {i + 1}: {pv:.4g}" for i, pv in enumerate(prods)),
        f"E[N]    = 1 + {' + '.join(f'{pv:.4g}' for pv in prods)} = {1 + prods.sum():.3f} tokens per pass",
        f"sanity: at most depth + 1 = {len(b) + 1}; a chain of {len(b)} gives "
        f"{float(expected_tokens(a[0], len(b))):.3f}",
    ]


def _sol_exact_rule(d: dict) -> list[str]:
    tv = {side: rule_tv(d[side], d["p"], d["q"], d["k"]) for side in "AB"}
    exact = "A" if tv["A"] < 1e-12 else "B"
    return [
        f"p = {d['p']}, q = {d['q']}, k = {d['k']} candidates",
        *(f"{side}: TV(emitted law, p) = {tv[side]:.4f}" for side in "AB"),
        f"{exact} emits exactly p: each step is the single-draft rule with target r and the law the candidate was "
        "really drawn from, so it emits r, and by induction p",
    ]


def _sol_kv_batch(d: dict) -> list[str]:
    m, L, kv = SHAPES[d["model"]], d["context"], d["kv"]
    e = KV_PRECISIONS[kv][0]
    w = m.linear_params * bytes_per_weight(d["mode"])
    b = kv_batch_of(d)
    return [
        f"{m.name}: {m.layers} layers, {m.kv_heads} KV heads of {m.head_dim}, {KV_LABELS[kv]} ({e:g} byte/element)",
        f"KV/token = 2 x {m.layers} x {m.kv_heads} x {m.head_dim} x {e:g} = {m.kv_bytes(kv):,.0f} bytes (K and V)",
        f"KV/seq   = {L:,} x {m.kv_bytes(kv):,.0f} = {L * m.kv_bytes(kv) / 1e6:,.1f} MB read per step",
        f"weights  = {m.linear_params / 1e9:.3f}e9 x {bytes_per_weight(d['mode']):g} = {w / 1e9:.2f} GB read per step"
        + (" (the embedding table is a gather, left out)" if m.embedding_params else ""),
        f"B_KV     = {w / 1e9:.2f} GB / {L * m.kv_bytes(kv) / 1e6:,.1f} MB = {b:.1f}",
        f"past B = {b:.1f} the step reads more KV than weights; doubling the context halves it",
        "past it a separate draft model's c rises toward its KV bytes per token over the target's (MagicDec: the "
        f"draft's KV is the large-batch, long-context bottleneck); an EAGLE or MTP head keeps one layer of KV, "
        f"1/{m.layers} of {m.name}'s",
    ]


def _sol_rollback_pages(d: dict) -> list[str]:
    n, g, k, page = d["cached"], d["gamma"], d["accepted"], d["page"]
    return [
        f"n = {n} cached, gamma = {g} drafts written, k = {k} accepted, r = {g - k} rolled back, P = {page}",
        f"before  : {n} + {g} = {n + g} slots -> ceil({n + g} / {page}) = {pages_held(n + g, page)} pages",
        f"after   : {n} + {k} = {n + k} slots -> ceil({n + k} / {page}) = {pages_held(n + k, page)} pages",
        f"freed   = {pages_held(n + g, page)} - {pages_held(n + k, page)} = {pages_freed(n, g, k, page)} page(s)",
        "rollback only moves the sequence length back; no KV is copied, and slots in a kept page are overwritten "
        "next round",
        "vLLM V1 would free none: it lowers the computed-token count and keeps the blocks, which the next round's "
        "drafts write into again",
    ]


def _sol_sample_compare(d: dict) -> list[str]:
    p, q = d["p"], d["q"]
    pq = np.round(matched_mass(p, q), 6)
    mins = accepted_mass(p, q)
    alpha, match = float(acceptance_rate(p, q)), float(match_acceptance(p, q))
    return [
        f"p = {p}, q = {q}",
        f"min(1, p/q) keeps sum min(p, q) = {' + '.join(f'{x:g}' for x in mins)} = {alpha:.4f}",
        f"sample-and-compare keeps sum p q = {' + '.join(f'{x:g}' for x in pq)} = {match:.4f}",
        f"gap     = {alpha:.4f} - {match:.4f} = {sample_compare_gap(d):.4f} more acceptance per draft token",
        "both emit exactly p; p q <= min(p, q) since max(p, q) <= 1, so min(1, p/q) never keeps less",
    ]


def _sol_tree_mask(d: dict) -> list[str]:
    b = d["branching"]
    width = np.cumprod(b)
    mask = tree_mask_of(d)
    n = mask.shape[0]
    return [
        f"branching {b}: nodes per depth {', '.join(map(str, width))}, N = {n}",
        "row i allows node i and its ancestors: depth(i) entries",
        "allowed = " + " + ".join(f"{d_ + 1} x {w}" for d_, w in enumerate(width)) + f" = {int(mask.sum())}",
        f"of N^2 = {n * n} entries ({mask.sum() / (n * n):.0%}); a causal mask would allow N (N + 1) / 2 = "
        f"{n * (n + 1) // 2}",
        "the cached prefix (and the root) stays visible to every node; only the block among the nodes is a tree",
    ]




# --------------------------------------------------------------- prompts ----
def _sol_argmax_draft(d: dict) -> list[str]:
    p, q = np.asarray(d["p"]), np.asarray(d["q"])
    x = int(np.argmax(q))
    return [
        f"the draft proposes its argmax: x = token {x} (q(x) = {q[x]:g}); as a law that is a one-hot q",
        f"accept with min(1, p(x) / 1) = p(x) = {p[x]:g}; on rejection resample from (p - onehot)+, so the output "
        "is still exactly p",
        f"alpha(argmax) = p(token {x}) = {argmax_acceptance(p, q):g}",
        f"a sampled draft would keep sum min(p, q) = {acceptance_rate(p, q):.2f}: argmax drafting wins when the "
        "models agree on a peaked p and loses at high temperature, where p is flat (vLLM's docs say so)",
    ]


def _sol_moe_experts(d: dict) -> list[str]:
    e, k, g = d["experts"], d["top_k"], d["gamma"]
    t = g + 1
    miss = (1 - k / e) ** t
    return [
        f"E = {e} routed experts, top-{k} per token; the verify pass carries T = gamma + 1 = {t} tokens",
        f"an expert is missed by one token with probability 1 - k/E = {1 - k / e:.4f}, by all T: "
        f"({1 - k / e:.4f})^{t} = {miss:.4f}",
        f"experts touched = E (1 - {miss:.4f}) = {expected_experts(e, k, t):.2f}, against k = {k} for one token",
        f"ratio = {expected_experts(e, k, t):.2f} / {k} = {expert_read_ratio(e, k, t):.4g}: the routed-expert weights "
        "a pass reads, in decode steps' worth (uniform routing; a skewed router touches fewer)",
        "so at batch 1 an MoE target's v grows with gamma where a dense target's stays near 1",
    ]


def _sol_batch_tokens(d: dict) -> list[str]:
    a, g = np.asarray(d["alphas"]), d["gamma"]
    per = expected_tokens(a, g)
    mean_n = float(expected_tokens(float(a.mean()), g))
    return [
        f"each request keeps its own accepted prefix plus one token: E[N_i] = (1 - alpha_i^{g + 1}) / (1 - alpha_i)",
        "E[N_i] = " + ", ".join(f"{x:.4f}" for x in per),
        f"batch: sum = {batch_tokens_of(d):.4f} tokens per pass out of {a.size} x {g + 1} = {a.size * (g + 1)} "
        "reserved slots",
        f"E[N] at the mean alpha {a.mean():.4g} gives {a.size} x {mean_n:.4f} = {a.size * mean_n:.4f}: off, because "
        "E[N] is convex in alpha; engines pick gamma per batch (or per request) for this spread",
    ]


def _ask_argmax_draft(d: dict) -> str:
    return (
        f"Target p = {d['p']}, draft q = {d['q']}, sampling at T = 1. Like vLLM V1 and TensorRT-LLM, the draft "
        "proposes its most likely token, and verification treats q as one-hot at it. What is the acceptance rate?"
    )


def _ask_moe_experts(d: dict) -> str:
    return (
        f"An MoE target routes each token to the top {d['top_k']} of {d['experts']} experts (assume uniform, "
        f"independent routing). At batch 1, a verify pass checks gamma = {d['gamma']} drafts. How many times the "
        "routed-expert weights of one decode step does that pass read?"
    )


def _ask_batch_tokens(d: dict) -> str:
    return (
        f"A continuous batch holds four requests whose drafts are accepted with alpha = "
        f"{', '.join(f'{a:g}' for a in d['alphas'])}, all with gamma = {d['gamma']}. How many tokens does one "
        "verify pass emit for the whole batch, on average?"
    )


def _cfg_text(cfg: dict) -> str:
    return f"alpha = {cfg['alpha']:g}, gamma = {cfg['gamma']}, c = {cfg['c']:g}, v = {cfg['v']:g}"


def formula(drill: Drill) -> str:
    """The drill's governing formula, as LaTeX."""
    return WORDS[drill.kind].formula


def solution(drill: Drill) -> list[str]:
    """The worked solution, one line per step, in the seed's plain-text style."""
    return WORDS[drill.kind].solve(drill.params)


def _ask_tokens(d: dict) -> str:
    return (
        f"A draft proposes gamma = {d['gamma']} tokens, each accepted with probability "
        f"alpha = {d['alpha']:g}. How many tokens does one target pass emit on average, E[N]?"
    )


def _ask_speedup(d: dict) -> str:
    return f"With {_cfg_text(d)}, what is the modelled speedup over plain decoding?"


def _ask_best_gamma(d: dict) -> str:
    return (
        f"alpha = {d['alpha']:g}, a draft token costs c = {d['c']:g} target steps and verification "
        f"v = {d['v']:g}. Which integer draft length gamma (0 to 32) gives the highest speedup?"
    )


def _ask_break_even(d: dict) -> str:
    return (
        f"gamma = {d['gamma']}, c = {d['c']:g}, v = {d['v']:g}. Below which acceptance alpha does "
        f"speculation become a slowdown (the break-even alpha, where the speedup is exactly 1)?"
    )


def _ask_crossover(d: dict) -> str:
    return (
        f"On {d['hardware']} with {MODE_LABELS[d['mode']]} and gamma = {d['gamma']}, at which batch B does the "
        f"verification pass reach the roofline ridge (weight-dominated linear layers)?"
    )


def _ask_alpha_pq(d: dict) -> str:
    return f"Target p = {d['p']}, draft q = {d['q']}. What is the acceptance rate alpha?"


def _ask_tree_tokens(d: dict) -> str:
    return (
        f"In a draft tree, every node at depth {', '.join(str(i) for i in range(len(d['branching'])))} (depth 0 "
        f"is the root, the last accepted token) has {', '.join(map(str, d['branching']))} children "
        "respectively, ranked 1, 2, ... Given its parent was kept, the rank-r child is the one kept with "
        f"probability a_r = {', '.join(f'{x:g}' for x in d['rates'])}. What is E[N], the tokens per target pass?"
    )


def _ask_exact_rule(d: dict) -> str:
    return (
        f"Target p = {d['p']}, draft q = {d['q']}, {d['k']} candidates per position. A: {RULE_TEXT[d['A']]}. "
        f"B: {RULE_TEXT[d['B']]}. Which one emits exactly p? Answer A or B."
    )


def _ask_kv_batch(d: dict) -> str:
    m = SHAPES[d["model"]]
    return (
        f"{m.name} ({m.linear_params / 1e9:.3f}e9 linear weights, each read once per step, "
        f"{MODE_LABELS[d['mode']]}; {m.layers} layers, {m.kv_heads} KV heads of {m.head_dim}) decodes every "
        f"sequence at context L = {d['context']:,}, its KV cache in {d['kv'].upper()} "
        f"({KV_PRECISIONS[d['kv']][0]:g} byte(s) per element). At which batch B do one decode step's KV-cache "
        "reads equal its weight reads?"
    )


def _ask_rollback_pages(d: dict) -> str:
    return (
        f"A paged KV cache whose allocator frees emptied pages on rollback (as SGLang's token pool does) uses "
        f"pages of P = {d['page']} token slots. A sequence has n = {d['cached']} tokens cached; the verify pass "
        f"writes the KV of gamma = {d['gamma']} drafts, and {d['accepted']} are accepted. How many pages go back "
        "to the free list when the rejected ones are rolled back?"
    )


def _ask_sample_compare(d: dict) -> str:
    return (
        f"Target p = {d['p']}, draft q = {d['q']}. Sample-and-compare draws y ~ p apart from the draft's x ~ q "
        "and keeps x only if y = x; speculative sampling keeps x with probability min(1, p(x)/q(x)). Both emit "
        "exactly p. How much higher is the speculative rule's acceptance (its alpha minus sample-and-compare's)?"
    )


def _ask_tree_mask(d: dict) -> str:
    return (
        f"A draft tree has {', '.join(map(str, d['branching']))} children per node at depth "
        f"{', '.join(str(i) for i in range(len(d['branching'])))} respectively (depth 0 is the root). In the "
        "verify pass's attention mask, how many entries of the N x N block among the tree's nodes are allowed?"
    )


def _ask_compare(d: dict) -> str:
    return f"Which is faster? A: {_cfg_text(d['A'])}. B: {_cfg_text(d['B'])}. Answer A or B."


WORDS: dict[str, DrillWords] = {
    "tokens": DrillWords(
        r"\mathbb{E}[N] = \frac{1-\alpha^{\gamma+1}}{1-\alpha}",
        _ask_tokens, _sol_tokens),
    "speedup": DrillWords(
        r"\text{speedup} = \frac{\mathbb{E}[N]}{\gamma c + v}",
        _ask_speedup, _sol_speedup),
    "best_gamma": DrillWords(
        r"\gamma^* = \arg\max_{\gamma \in \{0,1,\dots\}} \frac{1-\alpha^{\gamma+1}}{(1-\alpha)(\gamma c + v)}",
        _ask_best_gamma, _sol_best_gamma),
    "break_even": DrillWords(
        r"\frac{1-\alpha^{\gamma+1}}{1-\alpha} = \gamma c + v",
        _ask_break_even, _sol_break_even),
    "crossover": DrillWords(
        r"B^\times = \frac{\text{ridge}}{k\,(\gamma+1)},\quad"
        r" \text{ridge} = \frac{\text{peak FLOP/s}}{\text{bytes/s}}",
        _ask_crossover, _sol_crossover),
    "alpha_pq": DrillWords(
        r"\alpha = \sum_x \min(p(x), q(x)) = 1 - \tfrac12 \sum_x |p(x) - q(x)|",
        _ask_alpha_pq, _sol_alpha_pq),
    "compare": DrillWords(
        r"\text{speedup} = \frac{(1-\alpha^{\gamma+1})/(1-\alpha)}{\gamma c + v}",
        _ask_compare, _sol_compare),
    "tree_tokens": DrillWords(
        r"\mathbb{E}[N] = 1 + \sum_{d=1}^{D} \prod_{i=1}^{d} S(b_i),\quad S(b) = a_1 + \dots + a_b",
        _ask_tree_tokens, _sol_tree_tokens),
    "exact_rule": DrillWords(
        r"\text{keep } x_i \text{ w.p. } \min\!\Big(1, \frac{r_{i-1}(x_i)}{q_i(x_i)}\Big),\quad "
        r"r_i = \frac{(r_{i-1} - q_i)_+}{\lVert (r_{i-1} - q_i)_+ \rVert_1},\quad r_0 = p",
        _ask_exact_rule, _sol_exact_rule),
    "kv_batch": DrillWords(
        r"B^{KV} = \frac{P_{\text{lin}} \cdot \text{bytes/weight}}{L \cdot 2\, n_{\text{layers}}\, "
        r"n_{\text{kv heads}}\, d_{\text{head}} \cdot \text{bytes/element}}",
        _ask_kv_batch, _sol_kv_batch),
    "rollback_pages": DrillWords(
        r"\text{freed} = \Big\lceil \frac{n+\gamma}{P} \Big\rceil - \Big\lceil \frac{n+k}{P} \Big\rceil",
        _ask_rollback_pages, _sol_rollback_pages),
    "sample_compare": DrillWords(
        r"\sum_x \min(p(x), q(x)) - \sum_x p(x)\,q(x) \;\ge\; 0",
        _ask_sample_compare, _sol_sample_compare),
    "tree_mask": DrillWords(
        r"M_{ij} = [\,j \in \text{ancestors}(i) \cup \{i\}\,],\quad \sum_{ij} M_{ij} = "
        r"\sum_i \text{depth}(i) = \sum_{d=1}^{D} d \prod_{i \le d} b_i",
        _ask_tree_mask, _sol_tree_mask),
    "argmax_draft": DrillWords(
        r"\alpha_{\text{argmax}} = p\big(\arg\max_x q(x)\big) \quad\text{vs.}\quad \alpha = \sum_x \min(p(x), q(x))",
        _ask_argmax_draft, _sol_argmax_draft),
    "moe_experts": DrillWords(
        r"\frac{\mathbb{E}[\text{experts}]}{k} = \frac{E\,\big(1 - (1 - k/E)^{\gamma+1}\big)}{k}",
        _ask_moe_experts, _sol_moe_experts),
    "batch_tokens": DrillWords(
        r"\sum_{i=1}^{B} \frac{1-\alpha_i^{\gamma+1}}{1-\alpha_i}"
        r" \;\ne\; B\,\frac{1-\bar\alpha^{\gamma+1}}{1-\bar\alpha}",
        _ask_batch_tokens, _sol_batch_tokens),
}

def prompt(drill: Drill) -> str:
    """The question, in words, with the inputs spelled out."""
    return WORDS[drill.kind].ask(drill.params)
