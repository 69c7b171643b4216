"""Quantised linear maps for CPU inference: fp16 weights (fbgemm), int8 blocks of 32 (ONNX Runtime) and int4 (the
GGUF's own Q4_1 blocks).

A batch-1 decode step streams every weight once, so on a CPU its time follows the bytes per weight: float32 4,
fp16 2, int8 1 (+ a scale per block of 32), int4 0.5 (+ a scale and a minimum per group of 32). The kernels:

    fp16:  y = x W16^T, W16 = fp16(W), float32 x and accumulation     (fbgemm, F16C + AVX2: weight-only)
    bf16:  y = bf16(bf16(x) Wb^T), Wb = bf16(W), float32 sums         (oneDNN's packed inner product on AMX
                                                                        tiles; float32 on a CPU without them)
    int8:  W = s q per block of 32 weights, x rounded to int8 per row  (ONNX Runtime MatMulNBits, llama.cpp's
           and block of 32, integer dot products per block             Q8_0 arithmetic: gpu_demo.models.ort_blocks)
    int4:  W = d q + m per block of 32 (the GGUF's Q4_1 numbers),      (ONNX Runtime MatMulNBits at zero point 8,
           x rounded to int8 per row and block of 32                   + float32 block sums of x times m + 8 d)

PyTorch's weight-only int8/int4 kernels (_weight_int8pack_mm, _weight_int4pack_mm_for_cpu, the ones gpt-fast and
torchao call) are vectorised for AVX-512; on an AVX2-only CPU they run 3-7x *slower* than float32 BLAS
(bench/quant_kernels.py). fbgemm's dynamic int8 is fast but rounds x per call over the whole tensor, which
SmolLM2's outlier channels make far from the float32 law (mean TV 0.58), and a verify pass's rows then depend on
each other. So int8 and int4 run on ONNX Runtime's MLAS kernels (gpu_demo.models.ort_blocks); torch's int4 and
int8 kernels and fbgemm's dynamic int8 stay here only as bench/quant_kernels.py's comparisons.

:class:`QuantLinear` keeps the float32 Parameter it wraps (training, the state dict) and uses the quantised copy
in inference: the model's law is then whatever the kernel computes, which is what p must be.
:func:`quant_unavailable_reason` probes each kernel once on a tiny weight, so a CPU or a torch build without one
falls back to float32 and says why; :func:`draft_packing` picks a draft's copies among fp16, bf16 and float32 the same
way.
"""

from __future__ import annotations

import functools
import os
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from gpu_demo.models.linears import swap_linears, unswap_linears
from gpu_demo.models.ort_blocks import Q4Map, Q8Map, ort_linear, q8_dequant, q8_from_float
from gpu_demo.models.packed import PACK_MIN_ROWS, bf16_unavailable_reason, pack_weight, packed_linear

FORMATS = ("float32", "fp16", "bf16", "int8", "int4")  # weight formats of a CPU target, most bytes first
GROUP = 32  # GGUF Q4_1/Q8_0 block length
# bytes a kernel streams per weight: int8 adds a float32 scale per block of 32, int4 a float32 scale and a float32
# minimum term per block of 32 (8 bytes per 32 weights, gpu_demo.models.ort_blocks.Q4Map)
BYTES_PER_WEIGHT = {"float32": 4.0, "fp16": 2.0, "bf16": 2.0, "int8": 1.0 + 4 / 32, "int4": 0.5 + 8 / 32}
# formats whose kernels round the activations too: a Llama on them runs a verify pass as single steps, bit for bit
# (Llama._as_steps; gpu_demo.models.ort_blocks says why), so greedy speculative output stays greedy autoregressive
ROWWISE_FORMATS = ("int8", "int4")
QUANT_ENV = "SPECDEC_CPU_QUANT"  # "0": never quantise (forces the float32 fallback, for tests and comparisons)
INNER_K_TILES = 2  # argument of the int4 packer (its CPU layout does not depend on it)
DRAFT_KERNELS = ("fp16", "bf16", "float32")  # a draft's weight copies, in the order they are preferred
DRAFT_ENV = "SPECDEC_DRAFT_KERNEL"  # one of DRAFT_KERNELS: prefer it and those after it (tests, comparisons)


# ---------------------------------------------------------------------------- int4 --
def int4_from_min_scale(q: torch.Tensor, d: torch.Tensor, m: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Q4_1 blocks -> (packed weight (N, K/2) uint8, scales-and-zeros (K/G, N, 2) float32) for W = d q + m.

    q (N, K) integers 0..15; d, m (N, K/G) per-group scale and minimum. The kernel computes s (q - 8) + z with
    s = d and z = m + 8 d.
    """
    if q.dim() != 2 or q.shape[1] % GROUP or d.shape != (q.shape[0], q.shape[1] // GROUP) or d.shape != m.shape:
        raise ValueError(f"need q (N, K) with K a multiple of {GROUP} and d, m (N, K/{GROUP}); got "
                         f"{tuple(q.shape)}, {tuple(d.shape)}, {tuple(m.shape)}")
    packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q.to(torch.int32).contiguous(), INNER_K_TILES)
    sz = torch.stack((d.float().t(), (m.float() + 8 * d.float()).t()), dim=-1).contiguous()  # (K/G, N, 2)
    return packed, sz


def int4_from_float(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """W (N, K) -> (q, d, m) asymmetric 4-bit per group of 32 as Q4_1 makes it: d = (max - min) / 15, m = min."""
    N, K = w.shape
    wg = w.detach().float().reshape(N, K // GROUP, GROUP)  # (N, K/G, G)
    lo, hi = wg.amin(-1), wg.amax(-1)  # (N, K/G)
    d = (hi - lo) / 15
    q = torch.round((wg - lo[..., None]) / torch.where(d > 0, d, 1)[..., None]).clamp(0, 15)  # (N, K/G, G)
    return q.reshape(N, K).to(torch.int32), d, lo


def int4_dequant(q: torch.Tensor, d: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """W = d q + m per group of 32 columns: q (N, K), d, m (N, K/G) -> (N, K) float32."""
    N, K = q.shape
    return (q.float().reshape(N, K // GROUP, GROUP) * d.float()[..., None] + m.float()[..., None]).reshape(N, K)


@functools.cache
def _op(namespace: str, name: str):
    """The C++ function behind torch.ops.<namespace>.<name>: the packet's Python __call__ first scans the arguments
    for fake script objects, ~10 us a call, which on a CPU decode step of 121 small products is ~4% of it."""
    packet = getattr(getattr(torch.ops, namespace), name)
    return getattr(packet, "_op", packet)


def int4_linear(x: torch.Tensor, packed: torch.Tensor, sz: torch.Tensor) -> torch.Tensor:
    """x (M, K) float32 @ W^T -> (M, N) with W the int4 weight above."""
    return _op("aten", "_weight_int4pack_mm_for_cpu")(x, packed, GROUP, sz)


# ---------------------------------------------------------------------------- int8 --
def int8_from_float(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """W (N, K) -> (q (N, K) int8, s (N,) float32) with s = max_k |W| / 127, q = round(W / s); zero rows keep s = 1."""
    wf = w.detach().float()
    s = wf.abs().amax(-1) / 127  # (N,)
    s = torch.where(s > 0, s, torch.ones_like(s))
    return torch.round(wf / s[:, None]).clamp(-127, 127).to(torch.int8).contiguous(), s.contiguous()


def int8_weight_only_linear(x: torch.Tensor, q: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """x (M, K) float32 @ (s q)^T -> (M, N) on torch's weight-only int8 kernel (slow without AVX-512; measured)."""
    return torch.ops.aten._weight_int8pack_mm(x, q, s)


def fbgemm_int8_pack(w: torch.Tensor) -> torch.Tensor:
    """W (N, K) -> fbgemm's packed per-channel int8 copy (opaque; only fbgemm_int8_linear reads it; bench only)."""
    q, s = int8_from_float(w)
    with warnings.catch_warnings():  # quantised tensors are deprecated in torch 2.13 but their fbgemm ops stay
        warnings.simplefilter("ignore")
        qw = torch._make_per_channel_quantized_tensor(q, s.double(), torch.zeros(len(s), dtype=torch.long), 0)
        return torch.ops.quantized.linear_prepack(qw, None)


def fbgemm_int8_linear(x: torch.Tensor, packed: torch.Tensor) -> torch.Tensor:
    """x (M, K) float32 -> (M, N): x rounded to 7-bit unsigned over its own range, int8 W, float32 result."""
    return _op("quantized", "linear_dynamic")(x, packed, True)


# ---------------------------------------------------------------------------- fp16 --
def fbgemm_fp16_pack(w: torch.Tensor) -> torch.Tensor:
    """W (N, K) -> fbgemm's packed fp16 copy (opaque; only fbgemm_fp16_linear reads it)."""
    return torch.ops.quantized.linear_prepack_fp16(w.detach().float().contiguous(), None)


def fbgemm_fp16_linear(x: torch.Tensor, packed: torch.Tensor) -> torch.Tensor:
    """x (M, K) float32 @ fp16(W)^T -> (M, N), float32 accumulation."""
    return _op("quantized", "linear_dynamic_fp16")(x, packed)


# ---------------------------------------------------------------------------- bf16 --
def onednn_bf16_pack(w: torch.Tensor) -> torch.Tensor:
    """W (N, K) -> oneDNN's packed bf16 copy for one-row products (opaque; only packed.packed_linear reads it)."""
    return pack_weight(w.detach().float(), torch.bfloat16, 1)


# ----------------------------------------------------------------------- the probe --
def pack(fmt: str, w: torch.Tensor, q4: tuple[torch.Tensor, ...] | None = None) -> tuple[torch.Tensor, ...]:
    """W (N, K) float32 (or int4's (q, d, m) blocks) -> the tensors `fmt`'s kernel reads."""
    if fmt == "fp16":
        return (fbgemm_fp16_pack(w),)
    if fmt == "bf16":
        return (onednn_bf16_pack(w),)
    if fmt == "int8":
        return (Q8Map(w),)
    if fmt == "int4":
        return (Q4Map.from_blocks(*(q4 if q4 is not None else int4_from_float(w))),)
    raise ValueError(f"quantised formats are fp16, bf16, int8 and int4; got {fmt!r}")


def kernel(fmt: str):
    """`fmt`'s linear kernel: a function (x (M, K) float32, *pack()'s tensors) -> (M, N)."""
    return {"fp16": fbgemm_fp16_linear, "bf16": packed_linear, "int8": ort_linear, "int4": ort_linear}[fmt]


def run(fmt: str, x: torch.Tensor, packed: tuple[torch.Tensor, ...]) -> torch.Tensor:
    """x (M, K) float32 -> (M, N) on `fmt`'s kernel over pack()'s tensors."""
    return kernel(fmt)(x, *packed)


def reference_weight(fmt: str, w: torch.Tensor) -> torch.Tensor:
    """The float32 weight (N, K) `fmt`'s kernel stands for: fp16(W), bf16(W), s q per block (int8), d q + m (int4)."""
    if fmt == "fp16":
        return w.half().float()
    if fmt == "bf16":
        return w.bfloat16().float()
    if fmt == "int8":
        return q8_dequant(*q8_from_float(w), w.shape[1])
    return int4_dequant(*int4_from_float(w))


@functools.cache
def _probe(fmt: str) -> str | None:
    """None where the `fmt` kernel runs here and matches x W^T of its own weight on a tiny case, else why not.

    int8 and int4 round x as well, so they get 5% relative error; bf16 rounds x and y to 8 bits, 2%; fp16 1e-4.
    A missing kernel library (ONNX Runtime
    for int8 and int4) counts as a missing kernel.
    """
    g = torch.Generator().manual_seed(0)
    w = torch.randn(16, 2 * GROUP, generator=g)  # (N, K)
    x = torch.randn(3, 2 * GROUP, generator=g)  # (M, K)
    try:
        y = run(fmt, x, pack(fmt, w))
    except Exception as exc:  # any failure means "not here" (ONNX Runtime raises its own classes)
        return f"the {fmt} kernel is not available here ({str(exc).strip().splitlines()[0][:160]})"
    ref = x @ reference_weight(fmt, w).t()
    tol = {"int8": 0.05, "int4": 0.05, "bf16": 0.02}.get(fmt, 1e-4)
    if not bool(torch.isfinite(y).all()) or float((y - ref).norm() / ref.norm()) > tol:
        return f"the {fmt} kernel's result is off on this CPU"
    return None


def quant_unavailable_reason(fmt: str) -> str | None:
    """None where `fmt` weights run on this CPU; else why not (float32 needs nothing; forced off; kernel missing)."""
    if fmt not in FORMATS:
        raise ValueError(f"weight format must be one of {FORMATS}; got {fmt!r}")
    if fmt == "float32":
        return None
    if os.environ.get(QUANT_ENV, "").strip() == "0":
        return f"quantised weights forced off ({QUANT_ENV}=0)"
    if fmt == "bf16" and (why := bf16_unavailable_reason()) is not None:
        return f"the bf16 kernel is not available here ({why})"
    return _probe(fmt)


def cpu_weight_format(wanted: str) -> tuple[str, str]:
    """(format that runs, in words): `wanted` where its kernel runs here, else float32 with the reason."""
    why = quant_unavailable_reason(wanted)
    if why is None:
        return wanted, describe(wanted)
    return "float32", f"float32 weights: {why}"


def describe(fmt: str) -> str:
    """The weight format in words."""
    return {"float32": "float32 weights",
            "fp16": "fp16 weights, float32 compute (fbgemm)",
            "bf16": "bf16 weights and activations, float32 sums (oneDNN; AMX tiles where the CPU has them)",
            "int8": f"int8 weights and activations per block of {GROUP}, llama.cpp's Q8_0 arithmetic "
                    "(ONNX Runtime MatMulNBits, one graph per step; a verify pass runs as single steps)",
            "int4": f"int4 weights from the GGUF's Q4_1 blocks (scale and minimum per {GROUP}), int8 activations "
                    f"per block of {GROUP} (ONNX Runtime MatMulNBits, one graph per step; a verify pass runs as single "
                    "steps)"}[fmt]


def draft_packing() -> tuple[str, int, str]:
    """(kernel, min_rows, the path in words) for a draft's weight copies on this CPU: the first of DRAFT_KERNELS, from
    $SPECDEC_DRAFT_KERNEL's on, that runs here.

    A draft step streams its weights from memory (the target's pass has just evicted them), at one row. fp16 weights
    with float32 compute (fbgemm, the target's own kernel; any x86 CPU with F16C) halve the bytes and keep float32
    sums; bench/draft_kernels.py times a draft step on each kernel this CPU runs. Where fbgemm is refused, bf16 copies
    (oneDNN, AVX-512 or AVX-NE-CONVERT); else float32 from PACK_MIN_ROWS rows, like the target: one-row draft steps
    keep the BLAS, which bench/verify_cost.py finds the faster float32 kernel below PACK_MIN_ROWS rows.
    """
    wanted = os.environ.get(DRAFT_ENV, "").strip() or DRAFT_KERNELS[0]
    if wanted not in DRAFT_KERNELS:
        raise ValueError(f"{DRAFT_ENV} must be one of {', '.join(DRAFT_KERNELS)}; got {wanted!r}")
    refused = []
    for kernel in DRAFT_KERNELS[DRAFT_KERNELS.index(wanted):-1]:
        why = quant_unavailable_reason("fp16") if kernel == "fp16" else bf16_unavailable_reason()
        if why is None:
            words = describe("fp16") if kernel == "fp16" else "bf16 packed weights (oneDNN)"
            return kernel, 1, words + (f"; {'; '.join(refused)}" if refused else "")
        refused.append(why)
    return "float32", PACK_MIN_ROWS, (f"float32 weights, BLAS below {PACK_MIN_ROWS} rows and oneDNN-packed from "
                                      f"{PACK_MIN_ROWS}" + (f": {'; '.join(refused)}" if refused else ""))


# ---------------------------------------------------------------------- the module --
class QuantLinear(nn.Module):
    """A bias-free y = x W^T whose inference path runs on an fp16, bf16, int8 or int4 copy of W (module docstring).

    Training (autograd on) and non-float32 or non-CPU inputs use the float32 weight.
    """

    def __init__(self, fmt: str, weight: torch.Tensor, q4: tuple[torch.Tensor, ...] | None = None,
                 packed: tuple | None = None) -> None:
        """`packed`: the kernel's copy where it is already made (fused int4 blocks); else packed from weight (or q4)."""
        super().__init__()
        self.fmt = fmt
        self.out_features, self.in_features = weight.shape
        if isinstance(weight, nn.Parameter):
            self.weight = weight  # the wrapped nn.Linear's Parameter: state dicts and training unchanged
        else:
            self.register_buffer("weight", weight, persistent=False)  # borrowed (a tied head's table)
        self._packed: tuple | None = packed or pack(fmt, weight, q4)  # a tuple: not in the state dict

    @property
    def packed(self) -> tuple[torch.Tensor, ...]:
        """The tensors the kernel reads (packed again from the float32 weight after release_packed)."""
        if self._packed is None:
            self._packed = pack(self.fmt, self.weight)
        return self._packed

    def release_packed(self) -> None:
        """Drop the packed copy (a fused map serves the decode path); the next quantised call packs it again.

        Not for int4: its copy may hold the GGUF's own blocks, which packing from the float32 weight would not
        reproduce (fused() keeps int4 maps packed, so they are never released)."""
        if self.fmt == "int4":
            raise ValueError("an int4 map keeps its packed blocks (they may be the GGUF's own)")
        self._packed = None

    def use_quant(self, x: torch.Tensor) -> bool:
        """The quantised copy serves x: inference on a CPU float32 input."""
        return not torch.is_grad_enabled() and x.device.type == "cpu" and x.dtype == torch.float32

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (..., in) -> (..., out)."""
        if not self.use_quant(x):
            return F.linear(x, self.weight)
        y = run(self.fmt, x.reshape(-1, self.in_features).contiguous(), self.packed)  # (M, out)
        return y.reshape(*x.shape[:-1], self.out_features)

    def plain(self) -> nn.Linear:
        """An nn.Linear over the same float32 weight."""
        lin = nn.Linear(self.in_features, self.out_features, bias=False, device=self.weight.device,
                        dtype=self.weight.dtype)
        lin.weight = self.weight
        return lin


def fused(fmt: str, maps: list[QuantLinear]) -> tuple[QuantLinear, ...]:
    """One quantised map for W = [W_1; ...; W_n] stacked by rows: x W^T = [x W_1^T, ..., x W_n^T].

    One kernel call instead of n on the decode path; each output column is the same dot product over k, so
    the law is unchanged (each format's kernel computes every output column alone). int4 stacks the maps' own
    blocks (they may be the GGUF's) and keeps the separate maps packed; the others pack the stacked float32
    weight and release the separate copies. Returns () where the maps are not quantised alike.
    """
    if fmt not in ("fp16", "bf16", "int8", "int4") or any(not isinstance(m, QuantLinear) or m.fmt != fmt for m in maps):
        return ()
    with torch.no_grad():
        w = torch.cat([m.weight.detach() for m in maps])  # (sum N_i, K): only packed, not kept
    blocks = (Q4Map.stack([m.packed[0] for m in maps]),) if fmt == "int4" else None
    out = QuantLinear(fmt, w, packed=blocks)
    out.weight = None  # the float32 stack is not kept: non-quantised inputs use the separate maps
    for m in maps:
        if fmt != "int4":
            m.release_packed()
    return (out,)  # a tuple: not a submodule, not in the state dict


def quantize_linears(module: nn.Module, fmt: str, q4: dict[str, tuple[torch.Tensor, ...]] | None = None) -> int:
    """Every bias-free CPU float32 nn.Linear under `module` -> a QuantLinear in `fmt`; returns how many.

    q4 maps a linear's qualified name to its int4 blocks (q, d, m) (the GGUF's own); others are quantised here.
    """
    def make(name: str, lin: nn.Linear) -> QuantLinear:
        return QuantLinear(fmt, lin.weight, (q4 or {}).get(f"{name}.weight") if fmt == "int4" else None)

    return swap_linears(module, make, QuantLinear)


def dequantize_linears(module: nn.Module) -> int:
    """Undo quantize_linears: every QuantLinear back to the nn.Linear over its float32 weight; returns how many."""
    return unswap_linears(module, QuantLinear)
