"""Linear layers with oneDNN-prepacked weights for CPU inference: the same y = x W^T, a cheaper kernel where it pays.

On one CPU thread a decode step is a chain of matrix-vector products that stream the weights from memory. The BLAS
behind ``F.linear`` is fastest for 1-3 rows but switches kernel at 4 rows, where a verify pass of T = 4 tokens
suddenly costs 1.6x a single token (bench/verify_cost.py). oneDNN's inner product over a weight reordered once into
its blocked layout grows far more slowly with the rows (4 tokens: 1.34x one token's cost instead of 1.65x; 8 tokens:
1.53x instead of 2.20x, on this repo's 2-core CPU). :class:`PackedLinear` keeps the plain
weight (training, the state dict, rows below ``min_rows``) and a packed copy used for ``min_rows`` rows or more,
in inference only; with ``dtype=torch.bfloat16`` the packed copy is bf16 (half the bytes to stream; for a small
draft whose weights the target's pass has just evicted from the caches) and x is rounded to bf16 on the way in.

oneDNN packs bf16 weights only on CPUs with AVX-512 (BW, VL, DQ) or AVX-NE-CONVERT; elsewhere (many laptops, AMD
EPYC without AVX-512) it refuses. :func:`bf16_unavailable_reason` asks once, by packing and multiplying a tiny
bf16 weight; gpu_demo.models.quant.draft_packing picks a draft's kernel (fbgemm's fp16 first, then bf16 here, then
float32) and says why where one is refused (or skipped: ``SPECDEC_DRAFT_KERNEL``, ``SPECDEC_CPU_BF16=0``), so every
caller takes a path this CPU can run and can say which.

    y = x W^T    (rows < min_rows, or autograd on, or not a CPU float32 input: F.linear on W itself)
    y = x W~^T   (otherwise: W~ = W reordered (and rounded to `dtype`) once, at pack time)
"""

from __future__ import annotations

import functools
import os

import torch
import torch.nn.functional as F
from torch import nn

from gpu_demo.models.linears import swap_linears, unswap_linears


def packing_available() -> bool:
    """True where torch was built with oneDNN (mkldnn) and its CPU linear ops exist."""
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")


PACK_MIN_ROWS = 4  # F.linear's BLAS kernel is the fastest up to 3 rows and switches at 4 (bench/verify_cost.py)
BF16_ENV = "SPECDEC_CPU_BF16"  # "0": never pack in bf16 (forces the float32 fallback, for tests and comparisons)


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags from /proc/cpuinfo's first flags line (empty where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            line = next((ln for ln in f if ln.startswith("flags")), "")
    except OSError:
        return frozenset()
    return frozenset(line.partition(":")[2].split())


@functools.cache
def _bf16_probe() -> str | None:
    """None where oneDNN packs and multiplies a bf16 weight on AMX tiles on this CPU, else why not (one line).

    Greedy exactness needs a verify row's logits to equal a single step's bit for bit; the exactness tests pass on
    AMX tiles only, so bf16 is offered only where the CPU lists amx_bf16."""
    if "amx_bf16" not in cpu_flags():
        return ("this CPU has no AMX bf16 tiles, and without them bf16 verify rows did not equal single steps "
                "(greedy output would not stay exact)")
    try:
        packed_linear(torch.ones(2, 16), pack_weight(torch.ones(16, 16), torch.bfloat16, 1))
    except RuntimeError as exc:
        return str(exc).strip().splitlines()[0][:200]
    return None


def bf16_unavailable_reason() -> str | None:
    """None where bf16 packed copies run here; else why not (forced off, no oneDNN, or the CPU lacks the ISA)."""
    if os.environ.get(BF16_ENV, "").strip() == "0":
        return f"bf16 packing forced off ({BF16_ENV}=0)"
    if not packing_available():
        return "torch was built without oneDNN"
    return _bf16_probe()


def pack_weight(w: torch.Tensor, dtype: torch.dtype, rows_hint: int) -> torch.Tensor:
    """W (out, in) on the CPU -> oneDNN's packed copy in `dtype` (opaque layout; only packed_linear reads it)."""
    return torch.ops.mkldnn._reorder_linear_weight(w.detach().to(dtype).contiguous(), rows_hint)


def packed_linear(x: torch.Tensor, packed: torch.Tensor) -> torch.Tensor:
    """x (..., in) @ W~^T -> (..., out) in x's dtype, W~ a pack_weight result."""
    dt = packed.dtype
    return torch.ops.mkldnn._linear_pointwise(x.to(dt), packed, None, "none", [], "").to(x.dtype)


class PackedLinear(nn.Module):
    """A bias-free linear map y = x W^T with a packed inference copy (see the module docstring).

    Wrapping an nn.Linear keeps its Parameter under the same name, so state dicts and training are unchanged;
    a tied output head wraps the embedding table the same way. Pack after the weights are loaded.
    """

    def __init__(self, weight: torch.Tensor, min_rows: int, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        if min_rows < 1 or dtype not in (torch.float32, torch.bfloat16):
            raise ValueError(f"min_rows must be >= 1 and dtype float32 or bfloat16; got {min_rows!r}, {dtype}")
        self.out_features, self.in_features = weight.shape
        if isinstance(weight, nn.Parameter):
            self.weight = weight  # the same Parameter (a wrapped nn.Linear's)
        else:
            self.register_buffer("weight", weight, persistent=False)  # borrowed (a tied head's table)
        self.min_rows = min_rows
        self.packed = pack_weight(weight, dtype, min_rows)

    @classmethod
    def from_linear(cls, linear: nn.Linear, min_rows: int, dtype: torch.dtype = torch.float32) -> PackedLinear:
        """Wrap a bias-free nn.Linear (its weight stays its Parameter)."""
        if linear.bias is not None:
            raise ValueError("PackedLinear packs bias-free layers only")
        return cls(linear.weight, min_rows, dtype)

    def use_packed(self, x: torch.Tensor) -> bool:
        """The packed copy serves x (..., in): inference, a CPU float32 input of at least min_rows rows."""
        rows = x.numel() // max(x.shape[-1], 1)
        return rows >= self.min_rows and not torch.is_grad_enabled() and x.device.type == "cpu" \
            and x.dtype == torch.float32

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (..., in) -> (..., out)."""
        return packed_linear(x, self.packed) if self.use_packed(x) else F.linear(x, self.weight)

    def plain(self) -> nn.Linear:
        """An nn.Linear over the same parameter."""
        lin = nn.Linear(self.in_features, self.out_features, bias=False, device=self.weight.device,
                        dtype=self.weight.dtype)
        lin.weight = self.weight
        return lin


def pack_linears(module: nn.Module, min_rows: int, dtype: torch.dtype = torch.float32) -> int:
    """Every bias-free CPU float32 nn.Linear under `module` -> a PackedLinear over the same weight; returns how many."""
    return swap_linears(module, lambda _name, lin: PackedLinear.from_linear(lin, min_rows, dtype), PackedLinear)


def unpack_linears(module: nn.Module) -> int:
    """Undo pack_linears: every PackedLinear back to the nn.Linear it wraps; returns how many."""
    return unswap_linears(module, PackedLinear)
