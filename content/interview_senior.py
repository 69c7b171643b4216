"""What a senior interviewer probes after the algebra: drafter families, how engines expose speculation, when to
turn it off, KV mechanics, long context, the two exact verification rules, and what "lossless" means in floating
point. Plain data: concept questions as (key, trap, question, ((option, correct, why), ...)) and flashcards as
(front, latex, note); content.interview_content builds its ConceptQuestion and Flashcard objects from them and
appends them to its own (this module imports nothing from it, so there is no cycle). The numbers about context
(CONTEXT_NOTE and the functions above it) come from specdec_core's step-time model, never typed in.

Facts, with where they come from: vLLM's speculative_config (docs: "method", "model", "num_speculative_tokens",
"prompt_lookup_max"); SGLang's --speculative-algorithm / -num-steps / -eagle-topk / -num-draft-tokens (server
arguments); TensorRT-LLM's modes (draft-target, Medusa, EAGLE-3, lookahead, ReDrafter, MTP, n-gram); lookahead
decoding (Fu et al., 2024); suffix decoding (Oliaro et al., 2024); LayerSkip (Elhoushi et al., 2024); Medusa
(Cai et al., 2024); EAGLE-1/2/3 (Li et al., 2024-2025); DeepSeek-V3's multi-token prediction; SmartSpec's goodput
controller (Liu et al., 2024); MagicDec (Chen et al., 2024); vLLM's docs: "theoretically lossless up to the
precision limits of hardware numerics"; SGLang's tree counts come from specdec_core.trees.sglang_tree_counts.
"""

from __future__ import annotations

from specdec_core.roofline import HARDWARE
from specdec_core.steptime import (
    SHAPES,
    best_gamma_for_shape,
    gpu_placement,
    head_kv_gb,
    head_kv_ratio,
    kv_ratio,
    kv_read_batch,
    spec_curve,
)
from specdec_core.trees import sglang_tree_counts

_SG_SCORED, _SG_KEPT = sglang_tree_counts(steps=3, topk=4, num_draft_tokens=16)

# Context in the keyed answers: numbers from the step-time model for Llama-3.1-8B with the Llama-3.2-1B draft on an
# H100 SXM in BF16, gamma 3, alpha 0.8 (the case), at a short and a long context.
_T, _D, _HW = SHAPES["Llama-3.1-8B"], SHAPES["Llama-3.2-1B (draft)"], HARDWARE["H100 SXM"]
SHORT, LONG = 2048, 16384


def kv_batch(context: int) -> float:
    """B where the 8B target's KV reads per step overtake its weight reads: W / (L x KV bytes per token)."""
    return float(kv_read_batch(_T, "bf16", context))


def v_at(context: int, batch: float) -> float:
    """The verify pass's v(gamma = 3, B) at this context."""
    return float(spec_curve(_T, _D, _HW, "bf16", 3, 0.8, context, batch).v)


def c_at(context: int, batch: float) -> float:
    """The 1B draft's c(B) at this context."""
    return float(spec_curve(_T, _D, _HW, "bf16", 3, 0.8, context, batch).c)


def best_gamma_at(context: int, batch: float) -> int:
    """The best gamma (0 to 16) at this batch and context, v(gamma) re-priced."""
    return best_gamma_for_shape(_T, _D, _HW, "bf16", 0.8, context, batch)[0]


# The operating point B = 256 at 16k on 80 GB GPUs: the HBM its KV needs, with and without the 1B draft.
BIG_BATCH = 256
POINT = gpu_placement(_T, _D, "bf16", BIG_BATCH, LONG)
POINT_TARGET = gpu_placement(_T, None, "bf16", BIG_BATCH, LONG)
HEAD_RATIO = head_kv_ratio(_T)              # an EAGLE / MTP head: one layer of the target's KV shape

MEMORY_NOTE = (
    f"B = {BIG_BATCH} at {LONG // 1024}k is not one GPU's operating point: its bf16 KV is {POINT.kv_gb:.0f} GB "
    f"with the 1B draft ({POINT_TARGET.kv_gb:.0f} GB the 8B target's alone), {POINT.total_gb:.0f} GB with the "
    f"weights, so at least {POINT.capacity_gpus} 80 GB GPUs; tensor parallelism splits KV at most {_T.kv_heads} ways "
    f"({_T.kv_heads} KV heads), so one TP-{_T.kv_heads} replica would need {POINT.tp_max_gb:.0f} GB per GPU, and "
    f"the fewest 80 GB GPUs that hold it are {POINT.gpus} ({POINT.replicas} replicas of TP {POINT.tp}; the target "
    f"alone: {POINT_TARGET.gpus} as TP {POINT_TARGET.tp}), before activations and the engine's reserve"
)

CONTEXT_NOTE = (  # one sentence the keyed answers share
    f"KV reads grow with context x batch and pass the weight reads at B = {kv_batch(SHORT):.0f} for "
    f"{SHORT // 1024}k tokens but B = {kv_batch(LONG):.0f} for {LONG // 1024}k (Llama-3.1-8B); the gamma + 1 "
    f"positions share them, so at {LONG // 1024}k v is only {v_at(LONG, 256):.2f} at B = 256 (against "
    f"{v_at(SHORT, 256):.2f} at {SHORT // 1024}k), while the draft's own KV reads push c from "
    f"{c_at(SHORT, 1):.2f} toward its KV ratio, {kv_ratio(_D, _T):.2f} (MagicDec: a separate draft model's KV is "
    "the large-batch, long-context bottleneck; an EAGLE or MTP head keeps one layer of the target's KV, a ratio of "
    f"{HEAD_RATIO:.3f}, {head_kv_gb(_T, BIG_BATCH, LONG):.0f} GB at B = {BIG_BATCH} and {LONG // 1024}k). "
    f"{MEMORY_NOTE}"
)

SENIOR_QUESTIONS: tuple[tuple, ...] = (
    (
        "drafter_families",
        "a draft needs no second model",
        "Which drafter proposes tokens without any learned parameters of its own?",
        (
            ("A Medusa head on the target's last hidden state", False,
                   "Medusa heads are trained layers (one per offset) on top of the frozen target."),
            ("An EAGLE head reading the target's features", False,
                   "EAGLE trains a small decoder layer that extrapolates the target's features."),
            ("Prompt lookup: copy what followed a matching n-gram", True,
                   "n-gram / prompt-lookup drafting matches the last tokens against the prompt and the output so "
                   "far and proposes what came next: no weights, a string search. Suffix decoding does the same "
                   "over a suffix tree of earlier requests; lookahead decoding builds its n-grams from Jacobi "
                   "iterations of the target itself."),
            ("LayerSkip: the target's own first layers plus an exit", False,
                   "Self-speculation reuses the target's weights, but it trains the model for early exit first."),
        ),
    ),
    (
        "eagle_versions",
        "what each EAGLE version changed",
        "What did EAGLE-2 add to EAGLE-1's feature-level draft?",
        (
            ("Fusing low, middle and top features of the target", False,
                   "That is EAGLE-3, which also dropped the feature-regression loss (training-time test)."),
            ("A tree shaped per context by the draft's confidence", True,
                   "EAGLE-2 keeps the same head and grows a dynamic tree: it expands the nodes with the highest "
                   "draft probability along the path and re-ranks them for verification, because the draft's "
                   "confidence predicts acceptance well. A static tree fixes one shape for every context."),
            ("Typical acceptance in place of rejection sampling", False,
                   "Typical acceptance is Medusa-2's rule, and it does not sample from the target's law."),
            ("A second target pass to check the accepted tokens", False,
                   "No version verifies twice: one target pass scores the whole tree with a tree mask."),
        ),
    ),
    (
        "sglang_flags",
        "reading an engine's tree settings",
        "SGLang runs EAGLE with --speculative-num-steps 3 --speculative-eagle-topk 4 "
        "--speculative-num-draft-tokens 16. How many positions does the target verify per sequence in one pass?",
        (
            ("3 tokens: one per draft step, as a chain", False,
                   "num-steps is the tree's depth; with topk > 1 each step keeps several candidates."),
            ("16: the last accepted token and the 15 best tree nodes", True,
                   f"Step 1 scores 4 children; each later step expands the 4 kept nodes by 4 and keeps the top 4, "
                   f"so 3 steps score 4 + 16 + 16 = {_SG_SCORED} candidates; the {_SG_KEPT} highest-scoring of "
                   "them and the last accepted token make the num-draft-tokens = 16 positions verified in "
                   "one pass under a tree mask (SGLang's organize_draft_results keeps num_draft_tokens - 1 nodes)."),
            ("64 tokens: 4 candidates to the power of 3 steps", False,
                   f"SGLang never builds 4^3: each step keeps the top 4 nodes, so 3 steps score "
                   f"{_SG_SCORED} candidates and the best {_SG_KEPT} of them are verified."),
            ("12 tokens: 3 steps of 4 candidates each, no pruning", False,
                   "The verified set is num-draft-tokens = 16, not steps x topk."),
        ),
    ),
    (
        "turn_off",
        "speculation as a fixed setting",
        "A vLLM deployment serves batch 4 by night and batch 200 by day. What does a serving engine do about gamma?",
        (
            ("Keep the gamma that was best at batch 1 around the clock", False,
                   "At batch 200 the verify pass is compute-bound: v grows with gamma + 1 and the win shrinks."),
            ("Raise gamma with batch, since there are more tokens to share", False,
                   "More sequences make each verify pass dearer, which argues for shorter drafts, not longer ones."),
            ("Fix gamma at 1, which can never make decoding slower", False,
                   "gamma = 1 still costs c + v per round and can be a slowdown when alpha is low."),
            ("Shrink gamma, or switch drafting off, as batch grows", True,
                   "The best gamma falls with batch (roofline page); controllers choose it per step from measured "
                   "goodput (SmartSpec) or disable speculation above a batch size (vLLM once had "
                   "speculative_disable_by_batch_size). Context sets how fast: in the step-time model (8B target, "
                   f"1B draft, H100, alpha 0.8) the best gamma at batch 200 is {best_gamma_at(SHORT, 200)} at "
                   f"{SHORT // 1024}k tokens and {best_gamma_at(LONG, 200)} at {LONG // 1024}k, where KV reads "
                   "keep the verify pass memory-bound."),
        ),
    ),
    (
        "paged_rollback",
        "rolling back a paged KV cache",
        "After verification accepts 2 of 5 drafted tokens, how does a paged KV cache undo the other 3?",
        (
            ("Copy the accepted entries into a fresh block table", False,
                   "A chain's accepted prefix is already in place; nothing needs copying."),
            ("Recompute the whole sequence's KV from the prompt", False,
                   "That would cost a prefill per round; rollback must be O(1) for speculation to pay."),
            ("Cut the sequence length back to the accepted prefix", True,
                   "The rejected slots sit after the accepted prefix: set the length back and the next round "
                   "overwrites them. What happens to the emptied pages is the allocator's choice: SGLang's token "
                   "pool frees the rejected slots, while vLLM V1 keeps the blocks (it lowers the computed-token "
                   "count, and the next round's drafts are written into the same slots). Trees need one more step: "
                   "the accepted path's entries are compacted into consecutive slots, since siblings sat between "
                   "them."),
            ("Keep the 3 entries, masked out of later attention", False,
                   "Masks are for the verify pass's tree; stale entries left in the cache would be read later."),
        ),
    ),
    (
        "long_context",
        "the draft at long context",
        "At context 32k and batch 64, what most limits a separate 1B draft's cost c?",
        (
            ("Its own KV-cache reads, which grow with batch and context", True,
                   "Every draft step reads the draft's whole KV cache for every sequence, so c rises with B x L "
                   "(the app's step-time model shows it); MagicDec names the draft's KV as the large-batch, "
                   "long-context bottleneck and drafts with a sparse (StreamingLLM-style) cache. That is a "
                   "separate model's KV: an EAGLE or MTP head keeps one layer of the target's KV shape, "
                   f"{HEAD_RATIO:.3f} of the target's for Llama-3.1-8B against {kv_ratio(_D, _T):.2f} for the 1B."),
            ("Its weights, streamed once per step like the target's", False,
                   "1B weights are a fixed 2 GB per step; at 32k x 64 the KV reads are far larger."),
            ("Its compute, because a small model is compute-bound", False,
                   "A draft step of one token per sequence is memory-bound, like the target's decode step."),
            ("Nothing: drafts batch as well as targets and c stays fixed", False,
                   "c is a ratio of two passes that both read KV; the draft's share grows with context."),
        ),
    ),
    (
        "sample_compare",
        "two exact rules that keep different amounts",
        "The draft samples x ~ q. Rule A keeps x if the target's own sample y ~ p equals x; rule B keeps x with "
        "probability min(1, p(x)/q(x)). Which is exact?",
        (
            ("Only B; A changes the law the target would give", False,
                   "A emits the target's own samples (y when they disagree), so its law is p."),
            ("Both; B keeps more, sum min(p, q) >= sum p q", True,
                   "Both emit exactly p. A keeps x with probability sum_x p(x) q(x), B with sum_x min(p(x), q(x)), "
                   "and p q <= min(p, q) for numbers in [0, 1]: B keeps at least as many. With an argmax "
                   "draft (q one-hot) B becomes: keep x with probability p(x), which is A's rate at x. llama.cpp "
                   "drafts greedily by default, and so do vLLM V1 and TensorRT-LLM at any temperature (vLLM's docs "
                   "say this lowers acceptance at high temperature)."),
            ("Only A; B needs q for every token of the vocabulary", False,
                   "B needs q(x) and p(x); every engine that samples the draft has q."),
            ("Neither, unless the draft decodes greedily", False,
                   "Exactness holds at any temperature, for any q with q(x) > 0 where x is drafted."),
        ),
    ),
    (
        "lossless_fp",
        "lossless in exact arithmetic",
        "Greedy speculative decoding on a GPU in bf16 emits a token that plain greedy decoding did not. Is this a bug?",
        (
            ("Yes: greedy speculation must match greedy decoding always", False,
                   "It must in exact arithmetic; a bf16 pass of several tokens sums in another order."),
            ("No: a verify pass rounds differently, and near-ties flip", True,
                   "The verify pass scores several tokens in one kernel call, so its reductions run in another "
                   "order than one-token decode steps: logits differ in the last bits and an argmax near a tie "
                   "can change. The guarantee is the distribution, 'theoretically lossless up to the precision "
                   "limits of hardware numerics' (vLLM's docs); in float32 on one device this app's engine "
                   "matches token for token."),
            ("No: speculation only promises the same tokens at T = 1", False,
                   "At T = 1 it promises the same law, not the same tokens; at T = 0 exact arithmetic gives both."),
            ("Yes: the draft's rounding errors leak into the output", False,
                   "Every emitted token is the target's choice; the draft's numbers never reach the output."),
        ),
    ),
    (
        "trees_need_heads",
        "a tree is free to draft",
        "A 25-node, depth-6 tree beats the best chain 1.80x to 1.45x with a 1B draft priced by the roofline "
        "(with an EAGLE-class head at 0.03-0.05 target steps per pass: 2.76-3.04x to 1.87-2.01x). With a separate "
        "1B model whose pass costs 0.3 target steps at batch 1, what happens?",
        (
            ("The tree still wins by the same margin: E[N] is unchanged", False,
                   "E[N] is, but the round now pays six draft passes at 0.3 each."),
            ("The tree wins by far less: 1.28x against 1.22x", True,
                   "A tree of depth 6 needs 6 draft passes; at 0.3 each they cost 1.8 target steps, and the best "
                   "chain (gamma 1 at that cost) is barely behind. Trees pay with heads (EAGLE, Medusa) whose "
                   "passes are nearly free, not with a second model (trees page, draft-pass cost)."),
            ("The chain now wins, because the tree's verify pass is dearer", False,
                   "At batch 1 the 26-token verify pass costs about one step; the draft passes are what grew."),
            ("Both fall below 1x: any draft at 0.3 per pass is a slowdown", False,
                   "The chain still gains 1.22x and the tree 1.28x at these rates."),
        ),
    ),
)

SENIOR_FLASHCARDS: tuple[tuple[str, str, str], ...] = (
    (
        "Keep rate: sample-and-compare against min(1, p/q)",
        r"\Pr[\text{keep}]_{\text{compare}} = \sum_x p(x)\,q(x)\ \le\ \sum_x \min(p(x), q(x)) = 1 - \mathrm{TV}(p, q)",
        "Both rules are exact; with a one-hot (greedy) draft they keep the same fraction, p(x).",
    ),
    (
        "The best any verifier of k i.i.d. drafts can accept (optimal transport)",
        r"\alpha^*_k = \min_{B \subseteq V}\ \big[\,2 - p(B) - (1 - q(B))^k\,\big]",
        "k = 1 gives 1 - TV; recursive rejection accepts less for k >= 2 (trees page).",
    ),
    (
        "A measured step time (SpecDecode-Bench's fit of vLLM, H100, Llama-3.1-8B)",
        r"t = K \cdot 3.93\times10^{-8}\,\mathrm{s} + N \cdot 2.10\times10^{-5}\,\mathrm{s} + 5.89\,\mathrm{ms}",
        "K tokens of KV read, N tokens computed; v rises long before the roofline's compute knee.",
    ),
    (
        "Goodput of a batched server",
        r"\text{goodput} = \frac{B\ \mathbb{E}[N]}{t_\text{draft} + t_\text{verify}}\quad\text{vs}\quad "
        r"\frac{B}{t_\text{decode}}",
        "Turn speculation off where the right side wins; the best gamma falls with batch, more slowly at long "
        "context, where KV reads (context x batch) keep the verify pass memory-bound and the draft's KV sets c.",
    ),
    (
        "Tree E[N] under positional acceptance",
        r"\mathbb{E}[N] = 1 + \sum_{j} \prod_{i \in \text{path}(j)} a_{\mathrm{rank}(i)}",
        "Assumes the same per-rank rate at every depth; greedy placement is optimal only when rates fall with rank.",
    ),
)
