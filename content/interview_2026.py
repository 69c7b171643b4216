"""The questions a frontier-lab interviewer asks in 2026 beyond the algebra: speculation inside continuous
batching, how engines draft, MTP heads and MoE targets, how drafters are trained, dynamic trees, verification
numerics, logits processors, quantised targets and model-free drafts. Plain data, as in content.interview_senior:
(key, trap, question, ((option, correct, why), ...), source). Every number in a keyed answer comes from
specdec_core; the source names where each fact is from.
"""

from __future__ import annotations

from specdec_core.moe import expert_read_ratio
from specdec_core.roofline import HARDWARE, crossover_batch

_H100 = HARDWARE["H100 SXM"]
_X_BF16, _X_W8 = crossover_batch(_H100, 3, "bf16"), crossover_batch(_H100, 3, "w8a16")
_DSV3_READS = expert_read_ratio(256, 8, 2)   # DeepSeek-V3: 8 of 256 routed experts, one MTP draft + the bonus token

QUESTIONS_2026: tuple[tuple, ...] = (
    (
        "batched_speculation",
        "one draft length and one fate for the whole batch",
        "A continuous batch verifies 64 requests at gamma = 4, and their acceptance varies widely. What does a "
        "serving engine do with the results?",
        (
            ("Waits until every request accepts all 4 drafts, then moves on", False,
             "Requests advance independently: each keeps its own accepted prefix plus one token; none waits."),
            ("Advances each request by its own accepted count, in fixed-shape passes", True,
             "Each request keeps its accepted prefix and one more token. The engine reserves KV slots for the "
             "drafts of every request (vLLM's lookahead tokens), pads the pass to a captured CUDA-graph size, "
             "and can shorten gamma as the batch grows, since at large batch and long context the verify pass "
             "is no longer nearly free (SmartSpec picks the draft length per batch)."),
            ("Uses the batch's mean alpha to decide how many tokens every request emits", False,
             "Tokens are counted per request, and E[N] is convex in alpha: E[N] at the mean alpha understates the "
             "batch's tokens (the drill on uneven acceptance works one)."),
            ("Drops every request's drafts when one request rejects its first", False,
             "Acceptance is decided per sequence; one request's rejection does not touch another's drafts."),
        ),
        "vLLM V1's scheduler (KV slots reserved for num_speculative_tokens per request); SGLang's CUDA-graph "
        "capture for speculative batches; SmartSpec (Liu et al., 2024)",
    ),
    (
        "argmax_drafting_exact",
        "an argmax draft breaks exactness",
        "At temperature 1, vLLM V1 drafts the argmax of q and verifies as if q were one-hot there. Is the output "
        "still distributed as p?",
        (
            ("No: a greedy draft skews the output toward the draft's top tokens", False,
             "Any q works in the exact rule, a one-hot one too: x is kept with min(1, p(x) / 1) = p(x), else the "
             "token is drawn from (p - onehot)+, and the law stays p."),
            ("Yes, but only when the draft's argmax is also the target's argmax", False,
             "Exactness needs no agreement; agreement only raises the acceptance, p(argmax q)."),
            ("Yes: a one-hot q is a valid draft; acceptance becomes p(argmax q)", True,
             "min(1, p(x) / q(x)) with q(x) = 1 keeps x with probability p(x), and the residual (p - onehot)+ "
             "covers the rest, so the law is exactly p. The price is acceptance: at high temperature p is flat "
             "and p(argmax q) falls below sum min(p, q) (vLLM's docs say argmax drafting lowers it there)."),
            ("Yes, since rejection sampling repairs any draft at no cost in acceptance", False,
             "It repairs any draft, but the acceptance depends on q: here it is p(argmax q), which can be far "
             "below a sampled draft's sum min(p, q)."),
        ),
        "vLLM's speculative decoding docs and V1 rejection sampler; TensorRT-LLM's docs; the exact rule "
        "(Leviathan et al., 2023)",
    ),
    (
        "mtp_moe",
        "verification is free on a mixture-of-experts target",
        "DeepSeek-V3's multi-token prediction (MTP) module drafts one token, accepted 85-90 % of the time. Why "
        "does its verify pass cost more than a dense model's would?",
        (
            ("The two tokens route to different experts, so more weights are read", True,
             "A dense layer's weights serve every token of the pass; each MoE token picks its own 8 of 256 routed "
             f"experts, so two tokens read about {_DSV3_READS:.2f}x one token's expert weights (uniform "
             "routing, specdec_core.moe). With one MTP draft E[N] = 1 + alpha = 1.85-1.9, and DeepSeek reports "
             "about 1.8x the decoding speed."),
            ("The MTP module is a whole copy of the model, so a draft costs a full step", False,
             "An MTP module is one transformer block sharing the embedding and the output head: its c is small."),
            ("MoE attention grows with the square of the experts it touches", False,
             "Attention does not depend on the experts; the extra cost is the expert weights read."),
            ("The second token changes the router's choice for the first, so it reruns", False,
             "Routing is per token and causal: the first token's experts do not change."),
        ),
        "DeepSeek-V3 Technical Report (2024), section 5.4.3: second-token acceptance 85-90 %, 1.8x tokens per "
        "second; the expert count is specdec_core.moe's (uniform routing; real routers are skewed)",
    ),
    (
        "drafter_training",
        "train the draft head on the target's own features only",
        "EAGLE-3 trains its draft head with a 'training-time test'. What problem does that fix?",
        (
            ("The head overfits its prompts, so test prompts join the training set", False,
             "It is not about data: the training-time test is about what the head reads at inference."),
            ("At inference the head reads its own predicted features; train on them", True,
             "EAGLE-1 trained on the target's true features only, so deeper positions met features the head had "
             "never seen. Unrolling the head on its own outputs for several steps in training trains positions "
             "2 and on. Related: HASS (Zhang et al., 2025) aligns training with the inference context, "
             "DistillSpec (Zhou et al., 2024) distils on the draft's own samples (on-policy), and EAGLE-3 "
             "predicts over a reduced draft vocabulary (32k of Llama 3's 128k) to cut its cost."),
            ("Its logits are over-confident, so it is trained with label smoothing", False,
             "Calibration matters for dynamic trees, but it is not what the training-time test changes."),
            ("Its features come from one layer, so the target's later layers are added", False,
             "EAGLE-3 does fuse low, middle and high layers, but that is feature fusion, a separate change."),
        ),
        "EAGLE-3 (Li et al., 2025); HASS (Zhang et al., ICLR 2025); DistillSpec (Zhou et al., ICLR 2024); "
        "EAGLE-3's released heads use a 32,000-token draft vocabulary for Llama 3.1",
    ),
    (
        "dynamic_tree",
        "one fixed tree shape for every context",
        "EAGLE-2 builds a different draft tree every round. What decides which nodes it keeps?",
        (
            ("A fixed top-k per depth, tuned offline for each task, then frozen", False,
             "That is a static tree (EAGLE-1, Medusa); EAGLE-2's shape changes with the context."),
            ("The target's probabilities, from a cheap preview pass over all candidates", False,
             "The target runs once, to verify; a preview pass would cost as much as the verification it saves."),
            ("Random draws from the draft, widened whenever the last round failed", False,
             "EAGLE-2 does not sample its tree; it ranks nodes by confidence under a fixed node budget."),
            ("The draft's path probability, which tracks acceptance, under a budget", True,
             "EAGLE-2 expands the top-k nodes by cumulative draft probability (the product along the path), "
             "which it found well calibrated against acceptance, then keeps the best N nodes for one verify "
             "pass. In the KV cache each node gets a slot, a tree mask lets it see only its ancestors, and after "
             "verification the accepted path is kept and compacted."),
        ),
        "EAGLE-2 (Li et al., EMNLP 2024); the tree mask and rollback are the app's own (/trees, gpu_demo)",
    ),
    (
        "batch_invariance",
        "greedy speculation matches plain greedy bit for bit on a GPU",
        "At T = 0 on a GPU, a speculative run's text leaves the plain greedy text after 300 tokens. What is the "
        "likeliest cause?",
        (
            ("A bug: the exact rule guarantees identical text on any hardware", False,
             "The rule is exact in real arithmetic; kernels are not. vLLM's docs: \"theoretically lossless up to "
             "the precision limits of hardware numerics\"."),
            ("The draft model samples, so some of its tokens leak into the output", False,
             "A draft token is kept only where the target agrees; at T = 0 the draft cannot change the text."),
            ("The KV cache overflowed and silently evicted the oldest tokens", False,
             "Eviction would change both runs or fail loudly; it does not explain a flip at one token."),
            ("The verify pass's kernels round differently from a one-token step", True,
             "Verifying gamma + 1 tokens runs other kernel shapes and reduction orders than a one-token decode "
             "step (the kernels are not batch-invariant: a logit depends on how many tokens share the pass, not only "
             "on its context), so a near-tie between two logits can flip. "
             "Batch-invariant kernels (Thinking Machines, 2025) make the two agree, at some speed cost."),
        ),
        "vLLM's docs (the quote); He and Thinking Machines Lab, \"Defeating Nondeterminism in LLM Inference\" "
        "(2025)",
    ),
    (
        "logits_processors",
        "apply the penalty once per verify pass",
        "A request uses a repetition penalty. How must the verifier apply it to stay exact?",
        (
            ("Once, on the first position's logits, reused for every draft", False,
             "Each position's law depends on its own prefix; the first position's penalty misses the drafts."),
            ("Not at all: penalties are for sampling, and verifying only compares", False,
             "The law the request asked for is the penalised one; verifying against raw logits emits another."),
            ("At each draft position, counting the earlier drafts in its prefix", True,
             "p at position i is the law after every processor, given the prefix with drafts 1 to i - 1 in it; "
             "the same holds for temperature, top-p and grammar masks. Verifying against any other p is exact "
             "for the wrong law (the /proof page shows the bias)."),
            ("On the draft's logits only, so the target's stay untouched", False,
             "Changing q keeps the rule exact, but for the unpenalised p: the output then ignores the penalty."),
        ),
        "the exact rule (Leviathan et al., 2023) needs the law the request samples from at each position; "
        "/proof's wrong-law cases",
    ),
    (
        "quantised_target",
        "lossless means the full-precision model's output",
        "You verify with an int4 weight-only copy of a bf16 target. What does 'lossless' promise now?",
        (
            ("The int4 model's own law, and a smaller crossover batch", True,
             "The rule reproduces the verifier's law, so the output is the quantised model's, not the bf16 one's. "
             "Fewer bytes per weight mean more FLOPs per byte read: on an H100 at gamma 3 the crossover batch is "
             f"{_X_BF16:.0f} with bf16 weights and {_X_W8:.0f} with 8-bit ones, and 4-bit weights halve it "
             "again, so at the same context verification stops being nearly free at a smaller batch."),
            ("The bf16 model's law, since rejection repairs any error", False,
             "It repairs the draft's errors against the verifier; the verifier itself is the int4 model."),
            ("Nothing: quantisation breaks the rule, so the output is biased", False,
             "The rule holds for any verifier; this is simply a different verifier."),
            ("The bf16 law, as long as the draft is quantised to int4 too", False,
             "Quantising the draft changes the acceptance, not the verifier's law."),
        ),
        "the exact rule; the crossover batches are specdec_core.roofline.crossover_batch's",
    ),
    (
        "model_free_drafts",
        "a draft must be a model",
        "Suffix decoding and lookahead decoding use no draft model. Where do their drafts come from?",
        (
            ("A cached hidden state of the target, decoded by a small head", False,
             "That is EAGLE or Medusa; suffix and lookahead decoding train no head."),
            ("Suffix trees of past text; n-grams from the target's Jacobi steps", True,
             "Suffix decoding (Oliaro et al., 2024) matches the current suffix in a suffix tree of the prompt "
             "and earlier outputs, strong on repetitive agent work; lookahead decoding (Fu et al., 2024) runs "
             "Jacobi iterations of the target to grow an n-gram pool, verified in the same pass. Drafting costs "
             "almost nothing; acceptance depends on repetition."),
            ("A small model distilled online from the target while serving", False,
             "That is online distillation of a draft model; these two methods train nothing."),
            ("Random tokens, kept whenever the target happens to agree with them", False,
             "Random drafts would almost never be kept; these draft from text the target wrote or is iterating."),
        ),
        "Suffix decoding (Oliaro et al., 2024); lookahead decoding (Fu et al., 2024)",
    ),
)
