"""Measure it here: time a stack of linear layers at 1, 2, 4, ... tokens and compare with the roofline.

The probe runs one decoder layer's linears (QKV, O, gate+up, down) of a chosen shape on this machine's
device (CUDA if present, else CPU), at token counts 1, 2, 4, ... per pass. It also measures this
machine's own ceilings, a large square matmul rate and a copy bandwidth, and predicts each time from
them with ``specdec_core.steptime.linear_stack_time``. Progress is yielded as events; the last one
carries the result. No streamlit here.

    python -m gpu_demo probe --shape "Llama-3.2-1B, 1 layer"
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
import torch.nn.functional as F

from gpu_demo.device import device_label, resolve_device, time_call, timed_once
from gpu_demo.models.quant import BYTES_PER_WEIGHT, FORMATS, QuantLinear, quant_unavailable_reason
from specdec_core.knee import knee_fit, knee_tokens, linear_stack_time


@dataclass(frozen=True)
class ProbeShape:
    """Per layer: QKV d -> d + 2 kv_dim, O d -> d, gate+up d -> 2 ffn, down ffn -> d; ``layers`` of them."""

    name: str
    hidden: int
    kv_dim: int
    ffn: int
    layers: int
    budget_s: float = 20.0     # default time budget for a probe of this shape, seconds

    def linears(self) -> list[tuple[int, int]]:
        """(in, out) of every linear, in order."""
        d, kv, f = self.hidden, self.kv_dim, self.ffn
        return [(d, d + 2 * kv), (d, d), (d, 2 * f), (f, d)] * self.layers

    @property
    def n_weights(self) -> int:
        """Total weights: sum of in x out."""
        return sum(i * o for i, o in self.linears())

    @property
    def act_elems_per_token(self) -> int:
        """Activation elements read + written per token: sum of in + out."""
        return sum(i + o for i, o in self.linears())


PROBE_SHAPES: dict[str, ProbeShape] = {
    "Llama-3.2-1B, 1 layer": ProbeShape("Llama-3.2-1B, 1 layer", 2048, 512, 8192, 1),
    "Llama-3.2-1B, 2 layers": ProbeShape("Llama-3.2-1B, 2 layers", 2048, 512, 8192, 2),
    "Llama-3.1-8B, 1 layer": ProbeShape("Llama-3.1-8B, 1 layer", 4096, 1024, 14336, 1),
    "tiny (d=64)": ProbeShape("tiny (d=64)", 64, 16, 256, 2, budget_s=4.0),
}


@dataclass
class ProbeResult:
    """What the probe measured and what the roofline built from its measured ceilings predicts."""

    device: str
    dtype: str
    shape: ProbeShape
    n_weights: int
    weight_bytes: float                              # bytes per weight
    tokens: list[int] = field(default_factory=list)
    measured_s: list[float] = field(default_factory=list)   # median per pass
    spread_s: list[tuple[float, float]] = field(default_factory=list)  # (25th, 75th percentile) per pass
    n_samples: list[int] = field(default_factory=list)      # timed passes per token count
    model_s: list[float] = field(default_factory=list)
    peak_flops: float = 0.0                          # measured matmul rate, FLOP/s
    bandwidth: float = 0.0                           # measured copy bandwidth, byte/s (read + write)
    knee_measured: float = float("nan")              # tokens, fitted t0 x max(1, T/K)
    knee_model: float = float("nan")
    knee_reached: bool = False                       # fitted knee lies inside the measured token range
    knee_reliable: bool = False                      # enough points on both sides and a good fit (knee_fit)
    knee_note: str = ""                              # why the fitted knee is not to be trusted, if it is not
    elapsed_s: float = 0.0
    weights: str = "float32"                         # the linears' weight format (gpu_demo.models.quant)

    def to_dict(self) -> dict:
        """JSON-ready dict."""
        d = asdict(self)
        d["shape"] = asdict(self.shape)
        return d


@dataclass(frozen=True)
class ProbeEvent:
    """Progress: a fraction in [0, 1], a message, and the result on the last event."""

    fraction: float
    message: str
    result: ProbeResult | None = None


def measure_matmul_rate(dev: torch.device, dtype: torch.dtype, n: int, repeats: int = 3) -> float:
    """FLOP/s of an n x n x n matmul: 2 n^3 / best time (a ceiling: noise only slows a run down)."""
    a = torch.randn(n, n, device=dev, dtype=dtype)   # (n, n)
    b = torch.randn(n, n, device=dev, dtype=dtype)   # (n, n)
    return 2.0 * n**3 / min(time_call(lambda: a @ b, dev, repeats))


def measure_copy_bandwidth(dev: torch.device, n_bytes: int, repeats: int = 3) -> float:
    """byte/s of a device-to-device copy, counting read + write: 2 x n_bytes / best time."""
    src = torch.empty(n_bytes // 4, device=dev, dtype=torch.float32).uniform_()  # (n,)
    dst = torch.empty_like(src)
    return 2.0 * n_bytes / min(time_call(lambda: dst.copy_(src), dev, repeats))


def make_stack(shape: ProbeShape, dev: torch.device, dtype: torch.dtype, seed: int = 0) -> list[torch.Tensor]:
    """Random weights (out, in) for every linear of the shape, scaled 1 / sqrt(in)."""
    g = torch.Generator(device="cpu").manual_seed(seed)
    return [(torch.randn(o, i, generator=g) / i**0.5).to(dev, dtype) for i, o in shape.linears()]


Linear = Callable[[torch.Tensor], torch.Tensor]


def linear_maps(weights: list[torch.Tensor], fmt: str = "float32") -> list[Linear]:
    """x -> x W^T for each weight: F.linear in float32, else the CPU kernel of `fmt` (gpu_demo.models.quant)."""
    if fmt == "float32":
        return [functools.partial(F.linear, weight=w) for w in weights]
    return [QuantLinear(fmt, w) for w in weights]


def run_stack(x: torch.Tensor, weights: list[torch.Tensor] | list[Linear], shape: ProbeShape) -> torch.Tensor:
    """One pass of x (T, d) through the stack: QKV, O on the query part, SwiGLU MLP, residuals.

    weights: the (out, in) tensors, or maps x -> x W^T (linear_maps) to run another weight format.
    """
    maps = linear_maps(weights) if isinstance(weights[0], torch.Tensor) else weights
    d, f = shape.hidden, shape.ffn
    for layer in range(shape.layers):
        m_qkv, m_o, m_gu, m_down = maps[4 * layer: 4 * layer + 4]
        qkv = m_qkv(x)                               # (T, d + 2 kv)
        x = x + m_o(qkv[:, :d])                      # (T, d)
        gu = m_gu(x)                                 # (T, 2 f)
        x = x + m_down(F.silu(gu[:, :f]) * gu[:, f:])  # (T, d)
    return x


# the weight formats the probe's model describes: not bf16, whose kernel runs on AMX tiles where the CPU has them, a
# peak the probe's float32 FLOP rate does not measure, so the model's knee for it would be wrong
PROBE_FORMATS = tuple(f for f in FORMATS if f != "bf16")


def probe(shape: ProbeShape, device: str = "auto", max_tokens: int = 512, budget_s: float | None = None,
          seed: int = 0, threads: int | None = None, weights: str = "float32") -> Iterator[ProbeEvent]:
    """Measure ceilings, then time the stack at T = 1, 2, 4, ... <= max_tokens within about budget_s.

    threads: CPU threads for torch while the probe runs (None keeps torch's setting); ceilings are measured with
    the same count, and torch's process-wide count is restored when the probe ends or is abandoned.
    weights: the linears' weight format (one of PROBE_FORMATS; on a CPU). The model reads that many
    bytes per weight at the measured copy bandwidth and computes at the measured float32 matmul rate, so its
    knee K = peak x bytes / (2 x bandwidth) halves with each halving of the bytes (the seed's claim).
    """
    before = torch.get_num_threads()
    try:
        yield from _probe(shape, device, max_tokens, budget_s, seed, threads, weights)
    finally:
        torch.set_num_threads(before)


def _probe(shape: ProbeShape, device: str, max_tokens: int, budget_s: float | None, seed: int, threads: int | None,
           weights: str) -> Iterator[ProbeEvent]:
    """probe's body: torch's thread count is set here and restored by probe."""
    if weights not in PROBE_FORMATS:
        raise ValueError(f"weights must be one of {', '.join(PROBE_FORMATS)}; got {weights!r}")
    if max_tokens < 2:
        raise ValueError(f"max_tokens must be >= 2; got {max_tokens}")
    budget_s = shape.budget_s if budget_s is None else budget_s
    if budget_s <= 0:
        raise ValueError(f"budget_s must be > 0; got {budget_s}")
    if threads is not None:
        if threads < 1:
            raise ValueError(f"threads must be >= 1; got {threads}")
        torch.set_num_threads(threads)
    start = time.perf_counter()
    dev = resolve_device(device)
    if weights != "float32" and (dev.type != "cpu" or quant_unavailable_reason(weights)):
        why = "they are CPU kernels" if dev.type != "cpu" else quant_unavailable_reason(weights)
        raise ValueError(f"{weights} weights do not run here: {why}")
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    elt = torch.finfo(dtype).bits // 8
    wbytes = BYTES_PER_WEIGHT[weights] if weights != "float32" else float(elt)
    torch.manual_seed(seed)
    res = ProbeResult(device_label(dev), str(dtype).removeprefix("torch."), shape, shape.n_weights, wbytes,
                      weights=weights)

    yield ProbeEvent(0.02, f"measuring the matmul rate on {res.device}")
    res.peak_flops = measure_matmul_rate(dev, dtype, 8192 if dev.type == "cuda" else 2048)
    yield ProbeEvent(0.08, "measuring copy bandwidth")
    res.bandwidth = measure_copy_bandwidth(dev, (1 << 30) if dev.type == "cuda" else (128 << 20))
    yield ProbeEvent(0.12, f"building {shape.name}: {shape.n_weights / 1e6:.1f}M weights in {res.dtype}")
    maps = linear_maps(make_stack(shape, dev, dtype, seed), weights)

    counts = [2**k for k in range(int(np.log2(max_tokens)) + 1)]
    sweep_budget = max(budget_s - (time.perf_counter() - start), 1.0)
    sweep_start = time.perf_counter()
    samples: dict[int, list[float]] = {}
    inputs: dict[int, torch.Tensor] = {}
    with torch.inference_mode():
        # Discovery: one warm-up and one timed pass per T, doubling while half the budget allows.
        for i, t in enumerate(counts):
            spent = time.perf_counter() - sweep_start
            last = samples[counts[i - 1]][0] if i else 0.0
            if i >= 3 and spent + 4 * last > sweep_budget / 2:   # the next pass takes up to ~2x the last
                break
            inputs[t] = torch.randn(t, shape.hidden, device=dev, dtype=dtype)  # (T, d)
            samples[t] = time_call(lambda t=t: run_stack(inputs[t], maps, shape), dev, 1)
            yield ProbeEvent(0.12 + 0.4 * (i + 1) / len(counts), f"T = {t}: {samples[t][0] * 1e3:.2f} ms (first pass)")
        # Round-robin repeats over every T in a shuffled order, so that load from other processes and
        # the wake-up after a long pass hit all T alike.
        rng = np.random.default_rng(seed)
        rounds, max_rounds = 1, 30
        round_s = sum(v[0] for v in samples.values())
        while rounds < max_rounds and (rounds < 3 or time.perf_counter() - sweep_start + round_s < sweep_budget):
            for t in rng.permutation(list(samples)).tolist():
                samples[t].append(timed_once(lambda t=t: run_stack(inputs[t], maps, shape), dev))
            rounds += 1
            left = max(sweep_budget - (time.perf_counter() - sweep_start), 0.0)
            yield ProbeEvent(min(0.52 + 0.45 * (1 - left / sweep_budget), 0.97),
                             f"round {rounds}: {len(samples)} token counts")
    for t, times in samples.items():
        res.tokens.append(t)
        res.measured_s.append(float(np.median(times)))
        res.spread_s.append((float(np.percentile(times, 25)), float(np.percentile(times, 75))))
        res.n_samples.append(len(times))

    act = shape.act_elems_per_token * elt
    res.model_s = [float(x) for x in linear_stack_time(shape.n_weights, res.tokens, wbytes, res.peak_flops,
                                                       res.bandwidth, act)]
    res.knee_model = knee_tokens(res.peak_flops, res.bandwidth, wbytes)
    fit = knee_fit(res.tokens, res.measured_s)
    res.knee_measured, res.knee_reached = fit.knee, fit.reached
    res.knee_reliable, res.knee_note = fit.reliable, fit.reason
    res.elapsed_s = time.perf_counter() - start
    yield ProbeEvent(1.0, f"done in {res.elapsed_s:.1f} s on {res.device}", res)


def run_to_end(events: Iterator[ProbeEvent], on_event: Callable[[ProbeEvent], None] | None = None) -> ProbeResult:
    """Drain a probe's events (calling on_event for each) and return the result."""
    result = None
    for ev in events:
        if on_event is not None:
            on_event(ev)
        result = ev.result or result
    assert result is not None, "the probe ended without a result"
    return result


def format_table(res: ProbeResult) -> str:
    """Tokens, measured median ms, model ms, measured/model."""
    lines = [f"device {res.device}, {res.dtype}, {res.shape.name}: {res.n_weights / 1e6:.1f}M weights "
             f"({res.weights}, {res.weight_bytes:g} bytes each)",
             f"measured ceilings: matmul {res.peak_flops / 1e9:.1f} GFLOP/s, copy {res.bandwidth / 1e9:.1f} GB/s",
             f"{'T':>6} {'measured ms':>12} {'model ms':>10} {'ratio':>7}"]
    for t, m, p in zip(res.tokens, res.measured_s, res.model_s):
        lines.append(f"{t:>6} {m * 1e3:>12.3f} {p * 1e3:>10.3f} {m / p:>7.2f}")
    seen = "inside" if res.knee_reached else "beyond"
    lines.append(f"knee: measured {res.knee_measured:.1f} tokens ({seen} the range), model {res.knee_model:.1f}")
    if not res.knee_reliable:
        lines.append(f"the measured knee is unreliable: {res.knee_note}")
    return "\n".join(lines)
