"""A per-kernel roofline step-time model for a decoder: c(B), v(gamma, B) and the speedup against batch.

One forward pass over B sequences of T new tokens each, at context L, runs one kernel class after the
other, so its time is the SUM over kernel classes of each class's own roofline (perfect overlap inside
a kernel, none between them, no launch overhead):
    t = sum_k max(FLOPs_k / peak_k, bytes_k / bandwidth)
    linear       bytes = P_lin x bytes_per_weight                 weights, read once per pass
                 FLOPs = 2 x P_lin x B x T                         at the precision mode's peak
    attention    bytes = B x L x kv_bytes_per_token                each sequence reads its whole KV cache
                 FLOPs = 4 x B x T x layers x hidden x L           QK^T and PV, at the KV cache's precision
    activations  bytes = B x T x layers x 4 x hidden x 2           hidden state in and out of attention and
                                                                   MLP, BF16; no FLOPs worth a roofline
P_lin counts every weight that multiplies a token: the input embedding table is a gather of B x T rows,
not a matmul, so it is left out; a tied head is counted once, as the head. A plain decode step is T = 1;
verifying gamma drafts is T = gamma + 1. The draft runs on the same device in the same precision.
c(B) = t_draft(B, 1) / t_target(B, 1) and v(gamma, B) = t_target(B, gamma + 1) / t_target(B, 1) feed the
algebra's speedup E[N] / (gamma c + v).

Charging the whole pass as one kernel, max(all FLOPs / peak, all bytes / bandwidth), would let the
linear layers' compute hide under the attention's KV reads, which a real pass cannot do: the attention
kernel waits for the QKV projection and the MLP waits for the attention. ``StepTime.one_roofline_s``
keeps that figure only to show the difference.

What the roofline leaves out (a fixed cost per pass, imperfect overlap, logits traffic) is opt-in through
``Overheads``; specdec_core.measured_steps sets the model beside step times fitted to a measured engine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specdec_core.algebra import expected_tokens, speedup
from specdec_core.knee import fit_knee, knee_tokens, linear_stack_time  # noqa: F401  (the probe's imports)
from specdec_core.roofline import Hardware, bytes_per_weight, check_mode
from specdec_core.validate import check_alpha, check_gamma

ACT_BYTES = 2.0         # activations in BF16
LOGIT_BYTES = 8.0       # a float32 logit written by the head and read back by the sampler (Overheads.logits)
ACT_IO_PER_LAYER = 4    # hidden-sized reads + writes per token per layer (in/out of attention and MLP)

# KV cache precision -> (bytes per element, tensor-core precision its QK^T and PV run at)
KV_PRECISIONS: dict[str, tuple[float, str]] = {"bf16": (2.0, "bf16"), "fp8": (1.0, "fp8")}
KV_LABELS: dict[str, str] = {"bf16": "BF16 KV cache", "fp8": "FP8 KV cache (attention in FP8)"}
KV_BYTES = KV_PRECISIONS["bf16"][0]     # the default KV cache, BF16


def check_kv(kv: str) -> str:
    """kv one of 'bf16', 'fp8' (the KV cache's storage and attention precision)."""
    if kv not in KV_PRECISIONS:
        raise ValueError(f"kv must be one of {', '.join(KV_PRECISIONS)}; got {kv!r}")
    return kv


@dataclass(frozen=True)
class DecoderShape:
    """A decoder described by its shape; params is the total count, hidden = query heads x head_dim.

    vocab and tied place the input embedding table: with vocab None the split is unknown and every
    parameter is treated as a linear weight.
    """

    name: str
    params: float
    layers: int
    hidden: int
    kv_heads: int
    head_dim: int
    max_context: int
    source: str = ""
    vocab: int | None = None
    tied: bool = False

    def __post_init__(self) -> None:
        for field_name in ("params", "layers", "hidden", "kv_heads", "head_dim", "max_context"):
            val = getattr(self, field_name)
            if not np.isfinite(val) or val <= 0:
                raise ValueError(f"{self.name}: {field_name} must be > 0; got {val!r}")
        if self.vocab is not None and (self.vocab <= 0 or self.embedding_params >= self.params):
            raise ValueError(f"{self.name}: vocab must be > 0 and its embedding table smaller than params")

    @property
    def embedding_params(self) -> float:
        """The input embedding table, vocab x hidden, when it is its own matrix; 0 if tied or unknown."""
        return 0.0 if self.vocab is None or self.tied else float(self.vocab) * self.hidden

    @property
    def linear_params(self) -> float:
        """P_lin = params - input embedding table: the weights a token is multiplied by (norms included)."""
        return float(self.params) - self.embedding_params

    @property
    def kv_bytes_per_token(self) -> float:
        """KV cache bytes per token of context in BF16: 2 (K and V) x layers x kv_heads x head_dim x 2 bytes."""
        return self.kv_bytes("bf16")

    def kv_bytes(self, kv: str = "bf16") -> float:
        """KV cache bytes per token of context: 2 (K and V) x layers x kv_heads x head_dim x bytes(kv)."""
        return 2.0 * self.layers * self.kv_heads * self.head_dim * KV_PRECISIONS[check_kv(kv)][0]

    @property
    def group(self) -> float:
        """Query heads per KV head (grouped-query attention): hidden / (kv_heads x head_dim)."""
        return self.hidden / (self.kv_heads * self.head_dim)


_HF = "config.json of the Hugging Face release; params counted from the shape"
SHAPES: dict[str, DecoderShape] = {
    "Llama-3.1-8B": DecoderShape(
        "Llama-3.1-8B", 8_030_261_248, 32, 4096, 8, 128, 131_072,
        source=f"meta-llama/Llama-3.1-8B {_HF}: 32 layers, hidden 4096, 32 query / 8 KV heads of 128, "
               "FFN 14336, vocab 128256 (untied head), 128k context (Llama-3-8B has the same shape, 8k context)",
        vocab=128_256),
    "Llama-3.1-70B": DecoderShape(
        "Llama-3.1-70B", 70_553_706_496, 80, 8192, 8, 128, 131_072,
        source=f"meta-llama/Llama-3.1-70B {_HF}: 80 layers, hidden 8192, 64 query / 8 KV heads of 128, "
               "FFN 28672, vocab 128256 (untied head), 128k context",
        vocab=128_256),
    "Llama-3.2-1B (draft)": DecoderShape(
        "Llama-3.2-1B (draft)", 1_235_814_400, 16, 2048, 8, 64, 131_072,
        source=f"meta-llama/Llama-3.2-1B {_HF}: 16 layers, hidden 2048, 32 query / 8 KV heads of 64, "
               "FFN 8192, vocab 128256, tied embeddings, 128k context; a common draft for the 8B and 70B",
        vocab=128_256, tied=True),
}


@dataclass(frozen=True)
class KernelTime:
    """One kernel class's roofline in a pass: its FLOPs, bytes and the two times; arrays broadcast over batch."""

    name: str
    flops: NDArray[np.float64]
    bytes: NDArray[np.float64]
    compute_s: NDArray[np.float64]    # FLOPs / peak at this kernel's precision
    memory_s: NDArray[np.float64]     # bytes / bandwidth

    @property
    def total_s(self) -> NDArray[np.float64]:
        """max(FLOPs / peak, bytes / bandwidth)."""
        return np.maximum(self.compute_s, self.memory_s)

    @property
    def compute_bound(self) -> NDArray[np.bool_]:
        """True where compute time exceeds memory time."""
        return self.compute_s > self.memory_s


@dataclass(frozen=True)
class Overheads:
    """What the roofline leaves out, each term opt-in (the defaults are the pure roofline):

    fixed_s   seconds per pass whatever its size: kernel launches, scheduling, sampling. SpecDecode-Bench's fit of
              vLLM on an H100 (specdec_core.measured_steps) charges 1.21 ms of host overhead per engine step; for a
              small draft a fixed cost like this is most of its step.
    overlap   the fraction of the shorter of a kernel's compute and memory times hidden under the longer: 1 is the
              roofline's perfect overlap, 0 runs them one after the other: t_k = max + (1 - overlap) x min.
    logits    charge the head's logits as traffic: B x T x vocab float32 values written by the head and read by the
              sampler, 8 bytes each (about 1 GB per pass for Llama-3.1-8B at B = 256, T = 4).
    """

    fixed_s: float = 0.0
    overlap: float = 1.0
    logits: bool = False

    def __post_init__(self) -> None:
        if not (np.isfinite(self.fixed_s) and self.fixed_s >= 0) or not 0.0 <= self.overlap <= 1.0:
            raise ValueError(f"fixed cost must be >= 0 s and overlap in [0, 1]; got {self.fixed_s!r}, {self.overlap!r}")


ROOFLINE_ONLY = Overheads()


@dataclass(frozen=True)
class StepTime:
    """Time of one forward pass as the sum of its kernel classes' rooflines (plus any Overheads)."""

    linear: KernelTime
    attention: KernelTime
    activations: KernelTime
    logits: KernelTime | None = None      # the head's logits as traffic (Overheads.logits)
    fixed_s: float = 0.0                  # Overheads.fixed_s
    overlap: float = 1.0                  # Overheads.overlap

    @property
    def kernels(self) -> tuple[KernelTime, ...]:
        """(linear, attention, activations), and logits where charged."""
        return (self.linear, self.attention, self.activations) + ((self.logits,) if self.logits is not None else ())

    @property
    def total_s(self) -> NDArray[np.float64]:
        """sum_k [max(FLOPs_k / peak_k, bytes_k / bw) + (1 - overlap) min(...)] + fixed: the roofline by default."""
        t = sum(k.total_s for k in self.kernels) + self.fixed_s
        if self.overlap < 1.0:
            t = t + (1.0 - self.overlap) * sum(np.minimum(k.compute_s, k.memory_s) for k in self.kernels)
        return t

    @property
    def compute_s(self) -> NDArray[np.float64]:
        """All FLOPs at their kernels' peaks, summed."""
        return sum(k.compute_s for k in self.kernels)

    @property
    def memory_s(self) -> NDArray[np.float64]:
        """All bytes / bandwidth, summed."""
        return sum(k.memory_s for k in self.kernels)

    @property
    def one_roofline_s(self) -> NDArray[np.float64]:
        """The pass charged as one kernel, max(all compute, all memory): the under-estimate this model replaces."""
        return np.maximum(self.compute_s, self.memory_s)


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


def _kernel(name: str, flops: ArrayLike, nbytes: ArrayLike, peak: float, bandwidth: float,
            shape: tuple[int, ...]) -> KernelTime:
    """A KernelTime with every array broadcast to ``shape``."""
    f = np.broadcast_to(np.asarray(flops, dtype=np.float64), shape)
    m = np.broadcast_to(np.asarray(nbytes, dtype=np.float64), shape)
    return KernelTime(name, f, m, f / peak, m / bandwidth)


def step_time(shape: DecoderShape, hw: Hardware, mode: str, batch: ArrayLike, tokens: ArrayLike,
              context: ArrayLike, kv: str = "bf16", overheads: Overheads = ROOFLINE_ONLY) -> StepTime:
    """One pass of B sequences x T new tokens at context L: sum over kernels of max(FLOPs / peak, bytes / bw).

    batch, tokens and context broadcast together (tokens an integer >= 1); `overheads` adds what the roofline omits.
    """
    b = check_batch(batch)
    t = check_gamma(tokens, "tokens").astype(np.float64)
    if np.any(t < 1):
        raise ValueError(f"tokens per sequence must be an integer >= 1; got {tokens!r}")
    ctx = check_context(shape, context)
    kv_prec = KV_PRECISIONS[check_kv(kv)][1]
    n_tok = b * t                                                          # tokens in the pass
    out = np.broadcast_shapes(b.shape, t.shape, ctx.shape)
    bw = hw.bandwidth
    linear = _kernel("linear layers", 2.0 * shape.linear_params * n_tok,
                     shape.linear_params * bytes_per_weight(mode), hw.peak_flops(mode), bw, out)
    attention = _kernel("attention", 4.0 * n_tok * shape.layers * shape.hidden * ctx,
                        b * ctx * shape.kv_bytes(kv), hw.peak_flops(kv_prec), bw, out)
    act = _kernel("activations", 0.0, n_tok * shape.layers * ACT_IO_PER_LAYER * shape.hidden * ACT_BYTES,
                  1.0, bw, out)
    logit_bytes = n_tok * (shape.vocab or 0) * LOGIT_BYTES
    logits = _kernel("logits", 0.0, logit_bytes, 1.0, bw, out) if overheads.logits else None
    return StepTime(linear, attention, act, logits, overheads.fixed_s, overheads.overlap)


def attention_intensity(shape: DecoderShape, tokens: ArrayLike, kv: str = "bf16") -> float | NDArray[np.float64]:
    """FLOP per byte of the attention kernel: 4 T layers hidden L / (L x kv_bytes) = 2 T x group / bytes(kv).

    It does not depend on batch or context: every sequence reads its own cache, so a bigger batch brings
    more bytes with its FLOPs. Grouped-query attention raises it by the group size.
    """
    t = check_gamma(tokens, "tokens").astype(np.float64)
    out = 2.0 * t * shape.group / KV_PRECISIONS[check_kv(kv)][0]
    return float(out) if out.ndim == 0 else out


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
               alpha: float, context: int, batch: ArrayLike, kv: str = "bf16",
               overheads: Overheads = ROOFLINE_ONLY) -> SpecCurve:
    """c(B) = t_draft(B,1)/t_target(B,1), v(B) = t_target(B,gamma+1)/t_target(B,1), speedup from the algebra.

    `overheads` applies to every pass, the draft's too (a fixed cost per pass weighs most on the small draft).
    """
    g = int(check_gamma(gamma))
    check_alpha(alpha)
    b = check_batch(batch)
    check_context(draft, context)
    dec = step_time(target, hw, mode, b, 1, context, kv, overheads).total_s
    ver = step_time(target, hw, mode, b, g + 1, context, kv, overheads).total_s
    dra = step_time(draft, hw, mode, b, 1, context, kv, overheads).total_s
    c, v = dra / dec, ver / dec
    s = np.asarray(speedup(alpha, g, c, v), dtype=np.float64)
    return SpecCurve(b, dec, ver, dra, c, v, s)


def one_roofline_v(target: DecoderShape, hw: Hardware, mode: str, gamma: int, context: int, batch: ArrayLike,
                   kv: str = "bf16") -> float | NDArray[np.float64]:
    """v if each pass were charged as one kernel, max(all FLOPs / peak, all bytes / bandwidth): the figure that
    hides the linear layers' compute under the attention's KV reads (kept to show the difference)."""
    g = int(check_gamma(gamma))
    ver = step_time(target, hw, mode, batch, g + 1, context, kv).one_roofline_s
    out = ver / step_time(target, hw, mode, batch, 1, context, kv).one_roofline_s
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class GammaCosts:
    """c and v(gamma) at one batch and context, for gamma = 0..max_gamma: what the algebra's search needs."""

    gammas: NDArray[np.int64]         # 0..max_gamma
    c: float                          # draft step / target decode step (the same for every gamma)
    v: NDArray[np.float64]            # v(gamma) = t_target(B, gamma + 1) / t_target(B, 1); v(0) = 1
    decode_s: float
    draft_s: float


def gamma_costs(target: DecoderShape, draft: DecoderShape, hw: Hardware, mode: str, context: int, batch: float,
                max_gamma: int = 16, kv: str = "bf16") -> GammaCosts:
    """c(B) and v(gamma, B) = t_target(B, gamma + 1) / t_target(B, 1) for every gamma in 0..max_gamma."""
    gmax = int(check_gamma(max_gamma, "max_gamma"))
    b = float(check_batch(batch))
    check_context(draft, context)
    gammas = np.arange(gmax + 1)
    ver = step_time(target, hw, mode, b, gammas + 1, context, kv).total_s         # (G,)
    dec, dra = float(ver[0]), float(step_time(draft, hw, mode, b, 1, context, kv).total_s)
    return GammaCosts(gammas, dra / dec, ver / dec, dec, dra)


def best_gamma_against_batch(target: DecoderShape, draft: DecoderShape, hw: Hardware, mode: str, alpha: float,
                             context: int, batch: ArrayLike, max_gamma: int = 16,
                             kv: str = "bf16", c: float | None = None,
                             one_pass: bool = False) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """For each B: argmax over gamma in 0..max_gamma of E[N](alpha, gamma) / (gamma c(B) + v(gamma, B)).

    v grows with gamma once the linear layers are compute-bound, so the search re-prices every gamma;
    gamma = 0 (do not speculate) scores exactly 1; ties go to the smaller gamma. A given `c` (target steps per
    draft pass) replaces the modelled draft, e.g. a launch-bound draft whose pass costs the same at any batch.
    one_pass: the draft proposes all gamma tokens in one pass (Medusa heads), so the round pays c, not gamma c.
    """
    check_alpha(alpha)
    gmax = int(check_gamma(max_gamma, "max_gamma"))
    b = check_batch(batch)
    check_context(draft, context)
    g = np.arange(gmax + 1).reshape((-1,) + (1,) * b.ndim)                       # (G, 1...)
    dec = step_time(target, hw, mode, b, 1, context, kv).total_s                  # (*B)
    ver = step_time(target, hw, mode, b[None], g + 1, context, kv).total_s       # (G, *B)
    if c is None:
        c_b = step_time(draft, hw, mode, b, 1, context, kv).total_s / dec         # (*B)
    else:
        c_b = np.full_like(dec, check_draft_pass(c))                              # (*B)
    passes = np.minimum(g, 1) if one_pass else g                                  # draft passes per round
    s = np.asarray(expected_tokens(alpha, g)) / (passes * c_b[None] + ver / dec[None])  # (G, *B)
    best = np.argmax(s, axis=0)                                                   # first maximum: smaller gamma
    return best.astype(np.int64), np.take_along_axis(s, best[None], axis=0)[0]


def check_draft_pass(c: float) -> float:
    """A draft pass's cost in target decode steps: a finite number in [0, 10]."""
    if not isinstance(c, (int, float, np.floating)) or not np.isfinite(c) or not 0.0 <= c <= 10.0:
        raise ValueError(f"a draft pass's cost must be in [0, 10] target decode steps; got {c!r}")
    return float(c)


def best_gamma_for_shape(target: DecoderShape, draft: DecoderShape, hw: Hardware, mode: str, alpha: float,
                         context: int, batch: float, max_gamma: int = 16, kv: str = "bf16") -> tuple[int, float]:
    """(gamma*, speedup) maximising E[N] / (gamma c(B) + v(gamma, B)) over integers 0..max_gamma (0: no drafts)."""
    g, s = best_gamma_against_batch(target, draft, hw, mode, alpha, context, float(check_batch(batch)), max_gamma, kv)
    return int(g), float(s)


def speedup_crossing(target: DecoderShape, draft: DecoderShape, hw: Hardware, mode: str, gamma: int,
                     alpha: float, context: int, max_batch: float = 4096.0, kv: str = "bf16") -> float | None:
    """Smallest batch B in [1, max_batch] with speedup(B) <= 1; 1.0 if already so at B = 1; None if never.

    The bracket s(lo) > 1 >= s(hi) from a 257-point geometric grid is narrowed 64-fold per vectorised pass (one
    spec_curve call on 63 points) until no double lies inside it: within a few units in the last place of what 60
    scalar bisections give, in a tenth of the calls."""
    def first_below(grid: NDArray[np.float64]) -> int:
        """Index of the first grid point with speedup <= 1; grid.size if none."""
        vals = spec_curve(target, draft, hw, mode, gamma, alpha, context, grid, kv).speedup
        below = np.nonzero(vals <= 1.0)[0]
        return int(below[0]) if below.size else grid.size

    grid = np.geomspace(1.0, float(max_batch), 257)
    k = first_below(grid)
    if k == grid.size:
        return None
    if k == 0:
        return 1.0
    lo, hi = float(grid[k - 1]), float(grid[k])
    for _ in range(12):                                  # 64^12 > 2^60: down to adjacent doubles
        inner = np.unique(np.clip(np.linspace(lo, hi, 65)[1:-1], lo, hi))
        inner = inner[(inner > lo) & (inner < hi)]
        if inner.size == 0:
            break
        j = first_below(inner)
        lo, hi = (float(inner[j - 1]) if j > 0 else lo), (float(inner[j]) if j < inner.size else hi)
    return hi


def kv_read_batch(shape: DecoderShape, mode: str, context: ArrayLike, kv: str = "bf16") -> float | NDArray[np.float64]:
    """B where a decode step's KV reads equal its weight reads: B L kv_bytes = P_lin bytes_per_weight.

    It falls as 1 / L: past it the pass is KV-bound. For a draft, c then tends to its KV bytes per token over the
    target's (MagicDec: the draft's KV is the large-batch, long-context bottleneck; that is a separate draft model's:
    an EAGLE or MTP head keeps one layer of KV, head_kv_ratio = 1 / layers of the target's). L = 0 gives inf.
    """
    check_mode(mode)
    ctx = check_context(shape, context)
    per_seq = ctx * shape.kv_bytes(kv)                                  # KV bytes one sequence reads per step
    weights = shape.linear_params * bytes_per_weight(mode)
    with np.errstate(divide="ignore"):
        out = np.where(per_seq > 0, weights / np.where(per_seq > 0, per_seq, 1.0), np.inf)
    return float(out) if out.ndim == 0 else out


def memory_needed_gb(target: DecoderShape, draft: DecoderShape | None, mode: str, batch: ArrayLike,
                     context: ArrayLike, kv: str = "bf16") -> float | NDArray[np.float64]:
    """HBM needed, GB: weights of target (and draft) + B x L x KV bytes per token for each model."""
    check_mode(mode)
    b, ctx = check_batch(batch), check_context(target, context)
    models = [target] + ([draft] if draft is not None else [])
    total = sum(m.params * bytes_per_weight(mode) + b * ctx * m.kv_bytes(kv) for m in models)
    out = np.asarray(total, dtype=np.float64) / 1e9
    return float(out) if out.ndim == 0 else out


def max_batch_in_memory(hw: Hardware, target: DecoderShape, draft: DecoderShape | None, mode: str,
                        context: int, kv: str = "bf16") -> float | None:
    """Largest B whose weights + KV fit in HBM: (memory - weights) / (L x KV bytes per token); None if unknown."""
    if hw.memory_gb is None:
        return None
    ctx = float(check_context(target, context))
    models = [target] + ([draft] if draft is not None else [])
    free = hw.memory_gb * 1e9 - sum(m.params * bytes_per_weight(mode) for m in models)
    per_seq = ctx * sum(m.kv_bytes(kv) for m in models)
    if free <= 0:
        return 0.0
    return float("inf") if per_seq == 0 else free / per_seq


def kv_ratio(draft: DecoderShape, target: DecoderShape, kv: str = "bf16") -> float:
    """Draft KV bytes per token over the target's: where c tends at large B x L (0.25 for Llama-3.2-1B on 3.1-8B)."""
    return draft.kv_bytes(kv) / target.kv_bytes(kv)


def head_kv_ratio(target: DecoderShape, layers: int = 1) -> float:
    """A feature-level head's KV ratio (EAGLE, MTP: `layers` decoder layers with the target's attention shape):
    layers / target.layers, so 1/32 for Llama-3.1-8B and 1/30 for SmolLM2-135M."""
    if isinstance(layers, bool) or not isinstance(layers, int) or not 1 <= layers <= target.layers:
        raise ValueError(f"a head has 1 to {target.layers} layers; got {layers!r}")
    return layers / target.layers


def head_kv_gb(target: DecoderShape, batch: float, context: int, layers: int = 1, kv: str = "bf16") -> float:
    """A feature-level head's KV for B sequences at context L, GB: B L kv_bytes(target) x layers / target.layers."""
    ctx = float(check_context(target, context))
    return float(check_batch(batch)) * ctx * target.kv_bytes(kv) * head_kv_ratio(target, layers) / 1e9


@dataclass(frozen=True)
class GpuPlacement:
    """B sequences at context L on GPUs of gpu_gb each: what HBM they need and the fewest GPUs that hold it."""

    kv_gb: float          # B x L x KV bytes per token, summed over the models (1e9 bytes)
    weights_gb: float     # every model's weights, once
    gpu_gb: float
    capacity_gpus: int    # ceil((weights + KV) / gpu_gb): no layout holds it on fewer
    tp: int               # tensor-parallel degree of each replica (a power of two)
    replicas: int         # data-parallel replicas, each holding ceil(B / replicas) sequences
    per_gpu_gb: float     # HBM each GPU holds in that layout
    tp_max_gb: float      # HBM per GPU with the whole batch on one replica at the largest TP tried

    @property
    def total_gb(self) -> float:
        """Weights + KV."""
        return self.kv_gb + self.weights_gb

    @property
    def gpus(self) -> int:
        """tp x replicas."""
        return self.tp * self.replicas


def _per_gpu_bytes(models: list[DecoderShape], mode: str, seqs: float, ctx: float, tp: int, kv: str) -> float:
    """HBM per GPU at tensor parallelism tp: sum_m W_m / tp + seqs L kv_m / min(tp, kv_heads_m) (KV heads past
    kv_heads GPUs are replicated, not split)."""
    return sum(m.params * bytes_per_weight(mode) / tp + seqs * ctx * m.kv_bytes(kv) / min(tp, m.kv_heads)
               for m in models)


def gpu_placement(target: DecoderShape, draft: DecoderShape | None, mode: str, batch: int, context: int,
                  gpu_gb: float = 80.0, kv: str = "bf16", max_tp: int = 8) -> GpuPlacement:
    """Fewest GPUs holding weights + KV: r replicas of TP t (t = 1, 2, 4 .. max_tp), each GPU holding
    sum_m W_m / t + ceil(B / r) L kv_m / min(t, kv_heads_m) <= gpu_gb; ties go to fewer replicas. A lower bound:
    activations, the engine's reserve and fragmentation are left out. ValueError when one sequence fits nowhere.
    """
    check_mode(mode)
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValueError(f"batch must be an integer >= 1; got {batch!r}")
    if not (np.isfinite(gpu_gb) and gpu_gb > 0) or max_tp < 1:
        raise ValueError(f"gpu_gb must be > 0 and max_tp >= 1; got {gpu_gb!r}, {max_tp!r}")
    ctx = float(check_context(target, context))
    models = [target] + ([draft] if draft is not None else [])
    kv_b = batch * ctx * sum(m.kv_bytes(kv) for m in models)
    w_b = sum(m.params * bytes_per_weight(mode) for m in models)
    cap, best = gpu_gb * 1e9, None
    tps = [2 ** k for k in range(int(np.log2(max_tp)) + 1)]
    for t in tps:
        free = cap - _per_gpu_bytes(models, mode, 0.0, ctx, t, kv)
        per_seq = _per_gpu_bytes(models, mode, 1.0, ctx, t, kv) - _per_gpu_bytes(models, mode, 0.0, ctx, t, kv)
        fits = 0 if free <= 0 else batch if per_seq <= 0 else int(free // per_seq)   # sequences one replica holds
        if fits < 1:
            continue
        r = -(-batch // fits)
        if best is None or (r * t, r) < (best[0] * best[1], best[1]):
            best = (t, r)
    if best is None:
        raise ValueError(f"one sequence of {int(ctx):,} tokens with the weights needs more than {gpu_gb:g} GB per GPU "
                         f"at every tensor-parallel degree up to {max_tp}")
    t, r = best
    return GpuPlacement(kv_b / 1e9, w_b / 1e9, float(gpu_gb), int(-(-(kv_b + w_b) // cap)), t, r,
                        _per_gpu_bytes(models, mode, -(-batch // r), ctx, t, kv) / 1e9,
                        _per_gpu_bytes(models, mode, batch, ctx, tps[-1], kv) / 1e9)
