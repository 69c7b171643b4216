"""A mixture-of-experts target under speculation: verifying more tokens at once routes them to more experts.

Each of T tokens in a pass picks top_k of E routed experts. Under uniform, independent routing (the simplest
model; real routers are skewed, which lowers the count), an expert is untouched by all T tokens with
probability (1 - k/E)^T, so a pass reads the weights of
    E[experts touched] = E (1 - (1 - k/E)^T)
experts, against k for one decode token. At batch 1 a dense target's verify pass of gamma + 1 tokens reads the
same weights as one decode step (v near 1); an MoE layer's reads grow almost linearly in T while T k << E.
"""

from __future__ import annotations

from specdec_core.validate import check_count

MAX_EXPERTS = 4096
MAX_TOKENS = 1_000_000


def expected_experts(n_experts: int, top_k: int, tokens: int) -> float:
    """E (1 - (1 - k/E)^T): distinct routed experts a pass of T tokens touches, uniform independent routing."""
    e = check_count(n_experts, "experts", 1, MAX_EXPERTS)
    k = check_count(top_k, "top-k", 1, e)
    t = check_count(tokens, "tokens", 1, MAX_TOKENS)
    return e * (1.0 - (1.0 - k / e) ** t)


def expert_read_ratio(n_experts: int, top_k: int, tokens: int) -> float:
    """E[experts touched by T tokens] / k: how many times one decode token's routed-expert weights a pass reads."""
    return expected_experts(n_experts, top_k, tokens) / top_k
