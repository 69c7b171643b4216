"""The roofline: hardware presets, precision modes, arithmetic intensity, the ridge and the crossover batch.

A kernel that does F FLOPs while moving M bytes has intensity I = F / M. On hardware with peak P
(FLOP/s) and bandwidth W (byte/s) it is memory-bound while I < P / W (the *ridge*) and compute-bound
above it. A decode step of the linear layers, weight-dominated, does 2 FLOPs per weight per token, so
at batch B with gamma draft tokens verified together its intensity is B (gamma + 1) x 2 / bytes-per-weight.

Precision modes (the seed's "where it breaks"):
  bf16   2-byte weights, BF16 tensor cores:  I = B (gamma + 1),   ridge = P_bf16 / W
  fp8    1-byte weights, FP8 tensor cores:   I = 2 B (gamma + 1), ridge = P_fp8 / W  (both double)
  w8a16  1-byte weights, BF16 compute:       I = 2 B (gamma + 1), ridge = P_bf16 / W (only I doubles)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specdec_core.validate import check_gamma, scalar_or_array

TERA = 1e12

# mode -> (bytes per stored weight, tensor-core precision whose peak applies)
MODES: dict[str, tuple[float, str]] = {
    "bf16": (2.0, "bf16"),
    "fp8": (1.0, "fp8"),
    "w8a16": (1.0, "bf16"),
}

MODE_LABELS: dict[str, str] = {
    "bf16": "BF16 weights and compute",
    "fp8": "native FP8 (weights and compute)",
    "w8a16": "8-bit weights, BF16 compute (weight-only)",
}

COMPUTE_PRECISIONS = ("bf16", "fp8")

# Plausible ranges for one device, wide enough for a laptop CPU and far beyond any accelerator; they keep
# every derived number (FLOP/s, ridge, step times) finite when a user types 1e308 or 1e-300.
PEAK_RANGE_TFLOPS = (1e-6, 1e6)
BANDWIDTH_RANGE_TBS = (1e-6, 1e4)


@dataclass(frozen=True)
class Hardware:
    """An accelerator: dense peak TFLOP/s per compute precision, HBM bandwidth in TB/s, and a source."""

    name: str
    peak_tflops: Mapping[str, float]   # dense (no sparsity), e.g. {"bf16": 989, "fp8": 1979}
    bandwidth_tbs: float               # HBM bandwidth, TB/s (1e12 byte/s)
    source: str = ""
    memory_gb: float | None = None     # HBM capacity, GB (1e9 byte), if known
    notes: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not self.peak_tflops:
            raise ValueError(f"{self.name}: give at least one peak (TFLOP/s > 0) for bf16 or fp8")
        for prec, peak in self.peak_tflops.items():
            if prec not in COMPUTE_PRECISIONS:
                raise ValueError(f"{self.name}: unknown precision {prec!r}; allowed: {', '.join(COMPUTE_PRECISIONS)}")
            if not _in_range(peak, PEAK_RANGE_TFLOPS):
                raise ValueError(f"{self.name}: {prec} peak must be a finite number > 0 TFLOP/s, from "
                                 f"{PEAK_RANGE_TFLOPS[0]:g} to {PEAK_RANGE_TFLOPS[1]:g}; got {peak!r}")
        if not _in_range(self.bandwidth_tbs, BANDWIDTH_RANGE_TBS):
            raise ValueError(f"{self.name}: bandwidth must be a finite number > 0 TB/s, from "
                             f"{BANDWIDTH_RANGE_TBS[0]:g} to {BANDWIDTH_RANGE_TBS[1]:g}; got {self.bandwidth_tbs!r}")
        if self.memory_gb is not None and not _positive_finite(self.memory_gb):
            raise ValueError(f"{self.name}: memory must be > 0 GB; got {self.memory_gb!r}")

    def supports(self, mode: str) -> bool:
        """True if the tensor-core precision that ``mode`` needs has a peak on this hardware."""
        return _compute_precision(mode) in self.peak_tflops

    def peak_flops(self, mode: str = "bf16") -> float:
        """Dense peak in FLOP/s for the compute precision of ``mode``; ValueError if the hardware lacks it."""
        prec = _compute_precision(mode)
        if prec not in self.peak_tflops:
            raise ValueError(
                f"{prec.upper()} compute is not supported by this hardware ({self.name}); "
                f"it has peaks for: {', '.join(p.upper() for p in self.peak_tflops)}"
            )
        return float(self.peak_tflops[prec]) * TERA

    @property
    def bandwidth(self) -> float:
        """HBM bandwidth in byte/s."""
        return float(self.bandwidth_tbs) * TERA


def _positive_finite(x: object) -> bool:
    """x is a real number, finite and > 0."""
    try:
        xf = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return math.isfinite(xf) and xf > 0.0


def _in_range(x: object, bounds: tuple[float, float]) -> bool:
    """x is a finite real number with lo <= x <= hi."""
    return _positive_finite(x) and bounds[0] <= float(x) <= bounds[1]  # type: ignore[arg-type]


def check_mode(mode: str) -> str:
    """mode one of 'bf16', 'fp8', 'w8a16'."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {mode!r}")
    return mode


def _compute_precision(mode: str) -> str:
    """The tensor-core precision a mode computes in: fp8 -> fp8, bf16 and w8a16 -> bf16."""
    return MODES[check_mode(mode)][1]


def bytes_per_weight(mode: str) -> float:
    """Bytes per stored weight: 2 in bf16, 1 in fp8 and w8a16."""
    return MODES[check_mode(mode)][0]


def flops_per_weight_byte(mode: str) -> float:
    """FLOPs per weight byte per token, 2 / bytes_per_weight: 1 in bf16, 2 in fp8 and w8a16."""
    return 2.0 / bytes_per_weight(mode)


def custom_hardware(bf16_tflops: float, bandwidth_tbs: float, fp8_tflops: float | None = None,
                    name: str = "Custom") -> Hardware:
    """A user-described accelerator; fp8_tflops None (or 0) means no FP8 tensor cores."""
    peaks = {"bf16": bf16_tflops}
    if fp8_tflops is not None and fp8_tflops != 0:
        peaks["fp8"] = fp8_tflops
    return Hardware(name, peaks, bandwidth_tbs, source="entered by the user")


def ridge(hardware: Hardware, mode: str = "bf16") -> float:
    """Ridge intensity P / W in FLOP/byte, P the dense peak of the mode's compute precision."""
    return hardware.peak_flops(mode) / hardware.bandwidth


def verify_intensity(batch: ArrayLike, gamma: ArrayLike, mode: str = "bf16") -> float | NDArray[np.float64]:
    """Weight-dominated intensity of verifying gamma drafts at batch B: B (gamma + 1) x 2 / bytes_per_weight."""
    b = np.asarray(batch, dtype=np.float64)
    if not np.all(np.isfinite(b)) or np.any(b <= 0):
        raise ValueError(f"batch must be > 0; got {batch!r}")
    return scalar_or_array(b * (check_gamma(gamma) + 1) * flops_per_weight_byte(mode))


def decode_intensity(batch: ArrayLike, mode: str = "bf16") -> float | NDArray[np.float64]:
    """Intensity of a plain decode step (gamma = 0): B x 2 / bytes_per_weight."""
    return verify_intensity(batch, 0, mode)


def crossover_batch(hardware: Hardware, gamma: int, mode: str = "bf16") -> float:
    """Batch where verify intensity meets the ridge: B* = ridge / ((gamma + 1) x 2 / bytes_per_weight).

    H100 SXM, gamma 3: bf16 295/4 = 74; fp8 591/8 = 74; w8a16 295/8 = 37. Below B* the linear
    layers are memory-bound and extra draft tokens ride on idle compute; above it they cost time.
    """
    g = int(check_gamma(gamma))
    return ridge(hardware, mode) / ((g + 1) * flops_per_weight_byte(mode))


def attainable_flops(hardware: Hardware, intensity: ArrayLike, mode: str = "bf16") -> float | NDArray[np.float64]:
    """The roofline: attainable FLOP/s = min(P, I x W)."""
    i = np.asarray(intensity, dtype=np.float64)
    if np.any(i <= 0):
        raise ValueError("intensity must be > 0 FLOP/byte")
    return scalar_or_array(np.minimum(hardware.peak_flops(mode), i * hardware.bandwidth))


_NV_DENSE = "dense = half the sparsity-marked figure"
HARDWARE: dict[str, Hardware] = {
    "H100 SXM": Hardware(
        "H100 SXM", {"bf16": 989, "fp8": 1979}, 3.35, memory_gb=80,
        source=f"NVIDIA H100 Tensor Core GPU datasheet (SXM5): BF16 1,979 and FP8 3,958 TFLOP/s with "
               f"sparsity, {_NV_DENSE}; HBM3 3.35 TB/s, 80 GB"),
    "H100 PCIe": Hardware(
        "H100 PCIe", {"bf16": 756, "fp8": 1513}, 2.0, memory_gb=80,
        source=f"NVIDIA H100 Tensor Core GPU datasheet (PCIe): BF16 1,513 and FP8 3,026 TFLOP/s with "
               f"sparsity, {_NV_DENSE}; HBM2e 2.0 TB/s, 80 GB"),
    "H200 SXM": Hardware(
        "H200 SXM", {"bf16": 989, "fp8": 1979}, 4.8, memory_gb=141,
        source=f"NVIDIA H200 Tensor Core GPU datasheet (SXM): BF16 1,979 and FP8 3,958 TFLOP/s with "
               f"sparsity, {_NV_DENSE}; HBM3e 4.8 TB/s, 141 GB"),
    "A100 SXM 80GB": Hardware(
        "A100 SXM 80GB", {"bf16": 312}, 2.04, memory_gb=80,
        source="NVIDIA A100 Tensor Core GPU datasheet (SXM 80GB): BF16 312 TFLOP/s dense (624 with "
               "sparsity); no FP8 tensor cores (INT8 624 TOPS dense); HBM2e 2,039 GB/s, 80 GB",
        notes="Ampere has no FP8 tensor cores."),
    "B200": Hardware(
        "B200", {"bf16": 2250, "fp8": 4500}, 8.0, memory_gb=180,
        source=f"NVIDIA HGX B200 specifications, per GPU at 1,000 W: BF16 4.5 and FP8 9 PFLOP/s with "
               f"sparsity, {_NV_DENSE}; HBM3e 1,440 GB and 64 TB/s across eight GPUs (DGX B200), so 180 GB "
               f"and 8 TB/s per GPU (the 192 GB often quoted is the full package, not what HGX exposes)"),
    "MI300X": Hardware(
        "MI300X", {"bf16": 1307, "fp8": 2615}, 5.3, memory_gb=192,
        source="AMD Instinct MI300X data sheet: BF16 1,307.4 and FP8 2,614.9 TFLOP/s dense "
               "(sparsity figures are twice these); HBM3 5.3 TB/s, 192 GB"),
    "L4": Hardware(
        "L4", {"bf16": 121, "fp8": 242}, 0.30, memory_gb=24,
        source=f"NVIDIA L4 Tensor Core GPU datasheet: BF16 242 and FP8 485 TFLOP/s with sparsity, "
               f"{_NV_DENSE}; GDDR6 300 GB/s, 24 GB"),
}

# A measured reference point (REFERENCE.md): ceilings sit below datasheet peaks.
H200_MEASURED = {"bf16_matmul_tflops": 790.0, "copy_tbs": 4.3,
                 "how": "bf16 8192^3 matmul and a device-to-device copy on one H200"}
# The fractions of the datasheet that measurement reached: 790 / 989 and 4.3 / 4.8.
ACHIEVABLE_COMPUTE = H200_MEASURED["bf16_matmul_tflops"] / HARDWARE["H200 SXM"].peak_tflops["bf16"]
ACHIEVABLE_BANDWIDTH = H200_MEASURED["copy_tbs"] / HARDWARE["H200 SXM"].bandwidth_tbs
CEILINGS = ("datasheet", "achievable")


def achievable(hw: Hardware, compute: float = ACHIEVABLE_COMPUTE, bandwidth: float = ACHIEVABLE_BANDWIDTH) -> Hardware:
    """hw with every peak scaled by ``compute`` and the bandwidth by ``bandwidth``, both fractions in (0, 1]."""
    for name, frac in (("compute", compute), ("bandwidth", bandwidth)):
        if not _positive_finite(frac) or frac > 1.0:
            raise ValueError(f"the achievable {name} fraction must be in (0, 1]; got {frac!r}")
    return Hardware(f"{hw.name} (achievable)", {p: x * compute for p, x in hw.peak_tflops.items()},
                    hw.bandwidth_tbs * bandwidth, f"{hw.source}; scaled to {compute:.0%} of peak compute and "
                    f"{bandwidth:.0%} of bandwidth", hw.memory_gb, hw.notes)


def ceilings(hw: Hardware, which: str, compute: float = ACHIEVABLE_COMPUTE,
             bandwidth: float = ACHIEVABLE_BANDWIDTH) -> Hardware:
    """The datasheet hw as is, or its achievable version; which one of 'datasheet', 'achievable'."""
    if which not in CEILINGS:
        raise ValueError(f"ceilings must be one of {', '.join(CEILINGS)}; got {which!r}")
    return hw if which == "datasheet" else achievable(hw, compute, bandwidth)
