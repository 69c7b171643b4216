"""The Engines page's prose: what the counters mean, and the two lessons the embedded llama.cpp shows."""

INTRO = (
    "This page runs **llama.cpp's own server** inside the app (xllamacpp, on the same SmolLM2-135M Q4_1 GGUF the "
    "live page uses) with speculation off and on, scrapes its `/metrics` counters before and after, and reads "
    "them with the same `SpecDecodeCounts` the Algebra page uses for vLLM: alpha_j, E[N], the measured speedup "
    "and the algebra's prediction for those alpha_j."
)

COUNTERS = (
    "llama.cpp counts what vLLM counts: `llamacpp:spec_decode_num_drafts_total` (rounds that proposed a draft), "
    "`..._num_draft_tokens_total`, `..._num_accepted_tokens_total` and `..._num_accepted_tokens_per_pos_total"
    "{position=\"j-1\"}` (drafts whose first j tokens were all accepted). So r_j = per_pos_j / drafts is "
    "*unconditional*; the app's alpha_j = r_j / r_(j-1) is conditional, and"
)
EN_LATEX = (r"E[N] = 1 + \frac{\text{accepted}}{\text{drafts}} = 1 + \sum_{j=1}^{\gamma} r_j"
            r" = 1 + \sum_{i=1}^{\gamma}\prod_{j\le i}\alpha_j")

SELF_DRAFT = (
    "**Why the same model as its own draft does not reach alpha = 1.** At temperature 0 it almost does: both "
    "sides take the argmax of the same weights, so almost every draft token is accepted; not every one, because "
    "the draft's single-token step and the target's batched verify pass sum in different orders and round "
    "differently, so a near-tie can flip (in vLLM's docs' words \"theoretically lossless up to the precision "
    "limits of hardware numerics\": not bit-identical). "
    "At T > 0 the target *samples* from p "
    "(its sampler chain: temperature, top-k 40, top-p 0.95, min-p 0.05), while the draft proposes from its own "
    "sampler: with the *greedy* draft rule q is a point mass on the draft's argmax, and with the *probabilistic* "
    "rule q is the draft sampler's distribution, whose settings are not the target's. The weights are the same; "
    "q is not p, and alpha = sum_x min(p(x), q(x)) = 1 - TV(p, q) < 1."
)
RULES = (
    "**Why sample-and-compare keeps fewer tokens than min(1, p/q), yet is exact.** llama.cpp's default "
    "(`--spec-draft-sampling greedy`) drafts the argmax x* and keeps it while the target's own sample equals it: "
    "it accepts with probability p(x*). Whatever happens, the token emitted is the target's own sample, so the "
    "output law is p exactly; the draft is only a guess of it. The probabilistic rule samples x ~ q and keeps it "
    "with probability min(1, p(x)/q(x)), else draws from (p - q)+: exact too (the Proof page), and it accepts "
    "sum_x min(p, q), which is 1 when q = p. At T > 0 with a draft close to the target, p(x*) is well below "
    "1 - TV(p, q): the greedy rule throws away tokens the rejection rule would keep."
)
COST = (
    "The prediction prices a draft token at c = 1 target step when the target drafts for itself (it is the same "
    "model) and c = 0 for an n-gram lookup, and a verify pass at v = 1 (the memory-bound ideal). With c = 1 the "
    "algebra says E[N] / (gamma + 1) < 1: the same model as its own draft **never pays**; it is a measuring "
    "instrument for acceptance. The gap splits as on the live page: *acceptance draw* = tokens per target pass "
    "/ E[N] (prefill and passes with no draft count here) and *per-round cost* = what a round really costs "
    "against gamma c + v."
)
OWN_SERVER_OFF = (
    "Connecting to your own vLLM, SGLang, llama.cpp or TensorRT-LLM server is **off on this server**: a shared "
    "classroom server does not fetch addresses people type. Its operator can allow origins in the "
    "`SPECDEC_ENGINE_URLS` environment variable (comma-separated, e.g. `http://10.0.0.5:8000`); run "
    "`python -m engines --url ...` on your own machine meanwhile."
)
