"""A roofline step-time model for a decoder, and from it c(B), v(B) and the speedup against batch.

One forward pass over B sequences of T new tokens each, at context L, takes
    t = max(FLOPs / peak, bytes / bandwidth)                 (perfect overlap, no launch overhead)
    bytes = params x bytes_per_weight                         weights, read once per pass
          + B x L x kv_bytes_per_token                        each sequence reads its whole KV cache
          + B x T x layers x 4 x hidden x 2                   activations (hidden state in and out of
                                                              the attention and MLP blocks, BF16)
    FLOPs = 2 x params x B x T                                linear layers (at the mode's peak)
          + B x T x 4 x layers x hidden x L                   attention QK^T and PV (BF16, as the KV is)
A plain decode step is T = 1; verifying gamma drafts is T = gamma + 1. The draft runs on the same
device in the same mode. c(B) = t_draft(B, 1) / t_target(B, 1) and v(B) = t_target(B, gamma + 1) /
t_target(B, 1), which feed the algebra's speedup E[N] / (gamma c + v).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specdec_core.algebra import speedup
from specdec_core.roofline import Hardware, bytes_per_weight
from specdec_core.validate import check_alpha, check_gamma

KV_BYTES = 2.0          # KV cache stored in BF16 in every mode
ACT_BYTES = 2.0         # activations in BF16
ACT_IO_PER_LAYER = 4    # hidden-sized reads + writes per token per layer (in/out of attention and MLP)


@dataclass(frozen=True)
class DecoderShape:
    """A decoder described by its shape; params is the total count, hidden = query heads x head_dim."""

    name: str
    params: float
    layers: int
    hidden: int
    kv_heads: int
    head_dim: int
    max_context: int
    source: str = ""

    def __post_init__(self) -> None:
        for field_name in ("params", "layers", "hidden", "kv_heads", "head_dim", "max_context"):
            val = getattr(self, field_name)
            if not np.isfinite(val) or val <= 0:
                raise ValueError(f"{self.name}: {field_name} must be > 0; got {val!r}")

    @property
    def kv_bytes_per_token(self) -> float:
        """KV cache bytes per token of context: 2 (K and V) x layers x kv_heads x head_dim x 2 bytes."""
        return 2.0 * self.layers * self.kv_heads * self.head_dim * KV_BYTES


_HF = "config.json of the Hugging Face release; params counted from the shape"
SHAPES: dict[str, DecoderShape] = {
    "Llama-3.1-8B": DecoderShape(
        "Llama-3.1-8B", 8_030_261_248, 32, 4096, 8, 128, 131_072,
        source=f"meta-llama/Llama-3.1-8B {_HF}: 32 layers, hidden 4096, 32 query / 8 KV heads of 128, "
               "FFN 14336, vocab 128256, 128k context (Llama-3-8B has the same shape, 8k context)"),
    "Llama-3.1-70B": DecoderShape(
        "Llama-3.1-70B", 70_553_706_496, 80, 8192, 8, 128, 131_072,
        source=f"meta-llama/Llama-3.1-70B {_HF}: 80 layers, hidden 8192, 64 query / 8 KV heads of 128, "
               "FFN 28672, 128k context"),
    "Llama-3.2-1B (draft)": DecoderShape(
        "Llama-3.2-1B (draft)", 1_235_814_400, 16, 2048, 8, 64, 131_072,
        source=f"meta-llama/Llama-3.2-1B {_HF}: 16 layers, hidden 2048, 32 query / 8 KV heads of 64, "
               "FFN 8192, tied embeddings, 128k context; a common draft for the 8B and 70B"),
}


@dataclass(frozen=True)
class StepTime:
    """Time of one forward pass, split by what bounds it; arrays broadcast over batch."""

    weights_s: NDArray[np.float64]
    kv_s: NDArray[np.float64]
    activations_s: NDArray[np.float64]
    compute_s: NDArray[np.float64]
    flops: NDArray[np.float64]
    bytes: NDArray[np.float64]

    @property
    def memory_s(self) -> NDArray[np.float64]:
        """bytes / bandwidth = weights + KV + activations time."""
        return self.weights_s + self.kv_s + self.activations_s

    @property
    def total_s(self) -> NDArray[np.float64]:
        """max(FLOPs / peak, bytes / bandwidth)."""
        return np.maximum(self.memory_s, self.compute_s)

    @property
    def compute_bound(self) -> NDArray[np.bool_]:
        """True where compute time exceeds memory time."""
        return self.compute_s > self.memory_s


def check_batch(batch: ArrayLike) -> NDArray[np.float64]:
    """batch >= 1 (real values allowed, for root finding)."""
    b = np.asarray(batch, dtype=np.float64)
    if not np.all(np.isfinite(b)) or np.any(b < 1):
        raise ValueError(f"batch must be >= 1; got {batch!r}")
    return b


def check_context(shape: DecoderShape, context: ArrayLike) -> NDArray[np.float64]:
    """context an integer count of cached tokens in [0, shape.max_context]."""
    ctx = np.asarray(context, dtype=np.float64)
    if not np.all(np.isfinite(ctx)) or np.any(ctx < 0) or np.any(ctx != np.round(ctx)):
        raise ValueError(f"context must be an integer >= 0 tokens; got {context!r}")
    if np.any(ctx > shape.max_context):
        raise ValueError(
            f"context {int(np.max(ctx)):,} is longer than {shape.name} allows: 0 to {shape.max_context:,} tokens")
    return ctx


def step_time(shape: DecoderShape, hw: Hardware, mode: str, batch: ArrayLike, tokens: int,
              context: ArrayLike) -> StepTime:
    """One pass of B sequences x T new tokens at context L: max(FLOPs / peak, bytes / bandwidth), split."""
    b = check_batch(batch)
    t = int(check_gamma(tokens, "tokens"))
    if t < 1:
        raise ValueError(f"tokens per sequence must be an integer >= 1; got {tokens!r}")
    ctx = check_context(shape, context)
    n_tok = b * t                                                          # tokens in the pass
    w_bytes = np.full_like(n_tok, shape.params * bytes_per_weight(mode))
    kv_bytes = b * ctx * shape.kv_bytes_per_token
    act_bytes = n_tok * shape.layers * ACT_IO_PER_LAYER * shape.hidden * ACT_BYTES
    lin_flops = 2.0 * shape.params * n_tok
    attn_flops = n_tok * 4.0 * shape.layers * shape.hidden * ctx
    bw = hw.bandwidth
    compute = lin_flops / hw.peak_flops(mode) + attn_flops / hw.peak_flops("bf16")
    w_bytes, kv_bytes, act_bytes, compute = np.broadcast_arrays(w_bytes, kv_bytes, act_bytes, compute)
    return StepTime(
        weights_s=w_bytes / bw, kv_s=kv_bytes / bw, activations_s=act_bytes / bw, compute_s=compute,
        flops=np.broadcast_to(lin_flops + attn_flops, compute.shape),
        bytes=w_bytes + kv_bytes + act_bytes,
    )


@dataclass(frozen=True)
class SpecCurve:
    """Speculation under the step-time model, against batch."""

    batch: NDArray[np.float64]
    decode_s: NDArray[np.float64]     # target, plain decode step (T = 1)
    verify_s: NDArray[np.float64]     # target, gamma + 1 tokens per sequence
    draft_s: NDArray[np.float64]      # draft, one token per sequence
    c: NDArray[np.float64]            # draft_s / decode_s
    v: NDArray[np.float64]            # verify_s / decode_s
    speedup: NDArray[np.float64]      # E[N] / (gamma c + v)


def spec_curve(target: DecoderShape, draft: DecoderShape, hw: Hardware, mode: str, gamma: int,
               alpha: float, context: int, batch: ArrayLike) -> SpecCurve:
    """c(B) = t_draft(B,1)/t_target(B,1), v(B) = t_target(B,gamma+1)/t_target(B,1), speedup from the algebra."""
    g = int(check_gamma(gamma))
    check_alpha(alpha)
    b = check_batch(batch)
    check_context(draft, context)
    dec = step_time(target, hw, mode, b, 1, context).total_s
    ver = step_time(target, hw, mode, b, g + 1, context).total_s
    dra = step_time(draft, hw, mode, b, 1, context).total_s
    c, v = dra / dec, ver / dec
    s = np.asarray(speedup(alpha, g, c, v), dtype=np.float64)
    return SpecCurve(b, dec, ver, dra, c, v, s)


def speedup_crossing(target: DecoderShape, draft: DecoderShape, hw: Hardware, mode: str, gamma: int,
                     alpha: float, context: int, max_batch: float = 4096.0) -> float | None:
    """Smallest batch B in [1, max_batch] with speedup(B) <= 1; 1.0 if already so at B = 1; None if never."""
    def s(bb: float) -> float:
        return float(spec_curve(target, draft, hw, mode, gamma, alpha, context, bb).speedup)

    grid = np.geomspace(1.0, float(max_batch), 257)
    vals = spec_curve(target, draft, hw, mode, gamma, alpha, context, grid).speedup
    below = np.nonzero(vals <= 1.0)[0]
    if below.size == 0:
        return None
    k = int(below[0])
    if k == 0:
        return 1.0
    lo, hi = float(grid[k - 1]), float(grid[k])
    for _ in range(60):                                  # bisection: s(lo) > 1 >= s(hi)
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if s(mid) > 1.0 else (lo, mid)
    return hi


def memory_needed_gb(target: DecoderShape, draft: DecoderShape | None, mode: str, batch: ArrayLike,
                     context: ArrayLike) -> float | NDArray[np.float64]:
    """HBM needed, GB: weights of target (and draft) + B x L x KV bytes per token for each model."""
    b, ctx = check_batch(batch), check_context(target, context)
    models = [target] + ([draft] if draft is not None else [])
    total = sum(m.params * bytes_per_weight(mode) + b * ctx * m.kv_bytes_per_token for m in models)
    out = np.asarray(total, dtype=np.float64) / 1e9
    return float(out) if out.ndim == 0 else out


def linear_stack_time(n_weights: float, tokens: ArrayLike, weight_bytes: float, peak_flops: float,
                      bandwidth: float, act_bytes_per_token: float = 0.0) -> NDArray[np.float64]:
    """A stack of linears on T tokens: max(2 n T / peak, (n x weight_bytes + T x act_bytes) / bandwidth)."""
    if min(n_weights, weight_bytes, peak_flops, bandwidth) <= 0:
        raise ValueError("n_weights, weight_bytes, peak_flops and bandwidth must all be > 0")
    t = np.asarray(tokens, dtype=np.float64)
    compute = 2.0 * n_weights * t / peak_flops
    return np.maximum(compute, (n_weights * weight_bytes + t * act_bytes_per_token) / bandwidth)


def knee_tokens(peak_flops: float, bandwidth: float, weight_bytes: float) -> float:
    """Tokens per pass where weight reads and compute take equal time: peak x weight_bytes / (2 x bandwidth)."""
    return peak_flops * weight_bytes / (2.0 * bandwidth)


def fit_knee(tokens: ArrayLike, times: ArrayLike, n_grid: int = 400) -> tuple[float, float]:
    """Fit t(T) = t0 x max(1, T / K) in log space by a grid over K; returns (K, t0). K >= max T: no knee seen."""
    t = np.asarray(tokens, dtype=np.float64)
    y = np.log(np.asarray(times, dtype=np.float64))
    if t.shape != y.shape or t.size < 2 or np.any(t <= 0) or not np.all(np.isfinite(y)):
        raise ValueError("need at least two positive token counts with positive, finite times")
    ks = np.geomspace(t.min() / 2.0, t.max() * 2.0, n_grid)                      # (K,)
    shape_term = np.log(np.maximum(1.0, t[None, :] / ks[:, None]))              # (K, N)
    log_t0 = (y[None, :] - shape_term).mean(axis=1)                             # (K,)
    sse = ((y[None, :] - shape_term - log_t0[:, None]) ** 2).sum(axis=1)        # (K,)
    best = int(np.argmin(sse))
    return float(ks[best]), float(np.exp(log_t0[best]))


def max_batch_in_memory(hw: Hardware, target: DecoderShape, draft: DecoderShape | None, mode: str,
                        context: int) -> float | None:
    """Largest B whose weights + KV fit in HBM: (memory - weights) / (L x KV bytes per token); None if unknown."""
    if hw.memory_gb is None:
        return None
    ctx = float(check_context(target, context))
    models = [target] + ([draft] if draft is not None else [])
    free = hw.memory_gb * 1e9 - sum(m.params * bytes_per_weight(mode) for m in models)
    per_seq = ctx * sum(m.kv_bytes_per_token for m in models)
    if free <= 0:
        return 0.0
    return float("inf") if per_seq == 0 else free / per_seq
