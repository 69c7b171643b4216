"""Step times fitted to a real serving engine's measurements, set beside the roofline model (specdec_core.steptime).

The roofline model prices each kernel at max(FLOPs / peak, bytes / bandwidth), overlaps them perfectly and has no
fixed cost per step. A real engine pays more: kernel launches, scheduling and sampling per step, and kernels that
reach neither peak. A linear fit of measured forward-pass times captures this in three terms,

    t_pass(K, N) = K x s_kv + N x s_token + s_fixed        (K tokens of KV read, N tokens computed in the pass)

plus a host overhead o per engine step (scheduler, sampler, detokeniser) that both plain and speculative decoding
pay once per step. With a batch of B sequences at context L, gamma draft tokens and a draft round costing
t_draft(K, gamma):

    v = t_pass(B L, B (gamma + 1)) / t_pass(B L, B)        c = t_draft / (gamma x t_pass(B L, B))
    speedup = E[N] (t_pass(B L, B) + o) / (gamma c t_pass(B L, B) + v t_pass(B L, B) + o)

A fit holds where it was fitted: the batches and draft lengths of its data. A feature-level head (EAGLE) drafts in
gamma sequential passes, so past the longest fitted draft length g_max the round is priced per pass,
t_draft(gamma) = t_draft(g_max) gamma / g_max, and flagged as an extrapolation, as is every batch past the largest
fitted one.

The constants come from published fits; each names its source. They describe one engine, one model and one GPU:
what they show is how far a roofline is from a measured engine, not a law for every deployment.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specdec_core.algebra import expected_tokens
from specdec_core.validate import check_alpha, check_gamma


@dataclass(frozen=True)
class StepFit:
    """t_pass = K s_kv + N s_token + s_fixed, a draft round likewise, and o per engine step; all in seconds."""

    name: str
    engine: str
    model: str
    hardware: str
    s_kv: float              # per token of KV read in a pass
    s_token: float           # per token computed in a pass
    s_fixed: float           # per pass, whatever its size (weights streamed, launches)
    draft_s_kv: float        # the draft round: per token of KV (the draft reads its own KV)
    draft_s_token: float     # per token the round proposes (as the source counts it: gamma + 1 per sequence)
    draft_s_fixed: float     # per round
    overhead_s: float        # host overhead per engine step (scheduling, sampling), paid with or without a draft
    source: str
    batches: tuple[int, ...]       # the batches the fit was fitted on
    draft_gammas: tuple[int, ...]  # the draft lengths the fit was fitted on


FITS: dict[str, StepFit] = {
    "vLLM, H100, Llama-3.1-8B + EAGLE": StepFit(
        "vLLM, H100, Llama-3.1-8B + EAGLE", "vLLM", "Llama-3.1-8B-Instruct (EAGLE-3 draft)", "H100",
        s_kv=3.92645679e-08, s_token=2.10103129e-05, s_fixed=5.88590713e-03,
        draft_s_kv=2.37768493e-09, draft_s_token=8.41429603e-07, draft_s_fixed=2.13526175e-03,
        overhead_s=1.20683946e-03,
        source=("SpecDecode-Bench, simulator/predictor.py (class Llama8BH100, commit 260263c), fitted to vLLM "
                "forward passes on one H100 with InstructCoder prompts at batch 1, 8, 16, 32 and 64; its fixed "
                "draft lengths are 1, 3 and 5; the draft is EAGLE-3 (its README: proposer eagle3; predictor.py's "
                "enum calls it EAGLE)"),
        batches=(1, 8, 16, 32, 64), draft_gammas=(1, 3, 5),
    ),
}


@dataclass(frozen=True)
class Published:
    """A published serving speedup (throughput with speculation / without) at one batch."""

    proposer: str
    engine: str
    batch: int
    speedup: float
    source: str


PUBLISHED: tuple[Published, ...] = (
    Published("EAGLE-3", "SGLang", 1, 2.36, "EAGLE-3 (Li et al., 2025), SGLang on one H100, Llama-3.1-8B, batch 1"),
    Published("EAGLE-3", "SGLang", 64, 1.38, "EAGLE-3 (Li et al., 2025), SGLang on one H100, Llama-3.1-8B, batch 64"),
)


def check_fit(name: str) -> StepFit:
    """A fit by name, or a ValueError listing the known fits."""
    if name not in FITS:
        raise ValueError(f"unknown measured fit {name!r}; known: {', '.join(FITS)}")
    return FITS[name]


def _batch_context(batch: ArrayLike, context: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """batch >= 1 and context >= 0 tokens as float arrays (ValueError otherwise)."""
    b = np.asarray(batch, dtype=np.float64)
    ctx = np.asarray(context, dtype=np.float64)
    if not np.all(np.isfinite(b)) or np.any(b < 1):
        raise ValueError(f"batch must be >= 1; got {batch!r}")
    if not np.all(np.isfinite(ctx)) or np.any(ctx < 0):
        raise ValueError(f"context must be >= 0 tokens; got {context!r}")
    return b, ctx


def pass_s(fit: StepFit, kv_tokens: ArrayLike, tokens: ArrayLike) -> NDArray[np.float64]:
    """t_pass(K, N) = K s_kv + N s_token + s_fixed."""
    return np.asarray(kv_tokens, dtype=np.float64) * fit.s_kv + np.asarray(tokens, dtype=np.float64) * fit.s_token \
        + fit.s_fixed


def fitted_round_s(fit: StepFit, kv_tokens: ArrayLike, gamma: int) -> NDArray[np.float64]:
    """The fit's own round, K d_kv + (gamma + 1) d_token + d_fixed (the source charges gamma + 1 proposal slots)."""
    return np.asarray(kv_tokens, dtype=np.float64) * fit.draft_s_kv + (gamma + 1) * fit.draft_s_token \
        + fit.draft_s_fixed


def gamma_in_fit(fit: StepFit, gamma: int) -> bool:
    """Whether gamma is within the draft lengths the fit was fitted on (gamma <= g_max)."""
    return int(gamma) <= max(fit.draft_gammas)


def batch_in_fit(fit: StepFit, batch: ArrayLike) -> NDArray[np.bool_]:
    """Whether each batch is within the fitted batches (B <= the largest)."""
    return np.asarray(batch, dtype=np.float64) <= max(fit.batches)


def draft_round_s(fit: StepFit, kv_tokens: ArrayLike, gamma: int) -> NDArray[np.float64]:
    """t_draft(gamma): the fit's round up to g_max; past it t_draft(g_max) gamma / g_max (gamma sequential passes)."""
    g_max = max(fit.draft_gammas)
    if gamma_in_fit(fit, gamma):
        return fitted_round_s(fit, kv_tokens, gamma)
    return fitted_round_s(fit, kv_tokens, g_max) * (gamma / g_max)


@dataclass(frozen=True)
class MeasuredCurve:
    """Speculation under a measured fit, against batch (seconds, and c, v in target passes)."""

    batch: NDArray[np.float64]
    decode_s: NDArray[np.float64]    # plain decode pass, B tokens
    verify_s: NDArray[np.float64]    # verify pass, B (gamma + 1) tokens
    draft_s: NDArray[np.float64]     # one draft round (gamma tokens per sequence)
    overhead_s: float                # per engine step, paid by both
    c: NDArray[np.float64]           # draft_s / (gamma decode_s)
    v: NDArray[np.float64]           # verify_s / decode_s
    speedup: NDArray[np.float64]     # E[N] (decode_s + o) / (draft_s + verify_s + o)
    in_fit: NDArray[np.bool_]        # batch and gamma both within what the fit was fitted on


def measured_curve(fit: StepFit, gamma: int, alpha: float, context: int, batch: ArrayLike) -> MeasuredCurve:
    """c(B), v(B) and the speedup E[N] (t_dec + o) / (t_draft + t_ver + o) under the fit, each sequence at context L."""
    g = int(check_gamma(gamma))
    check_alpha(alpha)
    b, ctx = _batch_context(batch, context)
    kv = b * ctx                                                   # KV tokens read by the pass
    dec = pass_s(fit, kv, b)
    ver = pass_s(fit, kv, b * (g + 1))
    dra = draft_round_s(fit, kv, g) if g > 0 else np.zeros_like(dec)
    c = dra / (g * dec) if g > 0 else np.zeros_like(dec)
    s = expected_tokens(alpha, g) * (dec + fit.overhead_s) / (dra + ver + fit.overhead_s)
    in_fit = batch_in_fit(fit, b) & gamma_in_fit(fit, g)
    return MeasuredCurve(b, dec, ver, dra, fit.overhead_s, c, ver / dec, np.asarray(s, dtype=np.float64), in_fit)


def measured_v(fit: StepFit, gamma: int, context: int, batch: ArrayLike) -> NDArray[np.float64]:
    """v(B) = t_pass(B L, B (gamma + 1)) / t_pass(B L, B)."""
    return measured_curve(fit, gamma, 0.5, context, batch).v
