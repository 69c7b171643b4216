"""What one H200 measured of the lab's own engine, read from the committed JSON, and the models set beside it.

The file `measured/h200-2026-12-04.json` holds two runs of gpu_demo on one NVIDIA H200 (batch 1 unless a row
says B, eager PyTorch, bf16 SmolLM2-135M target), copied verbatim with their provenance: every pair's plain and
speculative decoding, the verify cost v(T, B) of the SmolLM2 target, and its decode step eager against the same
call replayed from a CUDA graph. Every number the pages show of that run is read here, so each is traceable to
the file.

The verify cost of a small model is set beside two models (specdec_core.steptime on the H200's achievable
ceilings):

    pure roofline          t(T, B) = sum over kernels of max(FLOPs / peak, bytes / bandwidth)
    with the measured cost t(T, B) + t_fixed + logits traffic,  t_fixed = the measured plain step at B = 1

A 135M model's weights are read in 0.06 ms, so the pure roofline has v rise near the ridge (a few hundred tokens
per pass); the measured step is about 11 ms of launches and host work, so v stays flat until the pass's own
compute and logits grow comparable to that fixed cost.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from specdec_core import roofline, steptime

DATA = Path(__file__).resolve().parent / "measured" / "h200-2026-12-04.json"
GPU_LABEL = "measured on one NVIDIA H200"
KNEE_V = 1.25          # a pass "costs more than a step" once v reaches this: 25 % above the flat level

SMOLLM2_135M = steptime.DecoderShape(
    "SmolLM2-135M", 134_515_008, 30, 576, 3, 64, 8192,
    source="HuggingFaceTB/SmolLM2-135M-Instruct config.json: 30 layers, hidden 576, 9 query / 3 KV heads of 64, "
           "FFN 1536, vocab 49152, tied embeddings; params counted from the GGUF the lab loads",
    vocab=49_152, tied=True)


@dataclass(frozen=True)
class Provenance:
    """Where the numbers come from: the GPU, the software, the project's commit and the commands."""

    gpu: str
    torch: str
    cuda: str
    commit: str
    dates: dict[str, str]
    commands: dict[str, str]
    workload: dict[str, str]

    def line(self) -> str:
        """One line a page can print under every table or chart of this run."""
        day = min(self.dates.values())[:10]
        return (f"{GPU_LABEL} on {day} (torch {self.torch}, CUDA {self.cuda}), the project's engine at commit "
                f"{self.commit}; file specdec_core/measured/{DATA.name}")


@dataclass(frozen=True)
class VerifyPoints:
    """v(T, B) of the SmolLM2 target: one entry per measured (tokens per sequence T, batch B) at one context."""

    tokens: NDArray[np.int64]        # T, new tokens per sequence in the pass (gamma + 1)
    batch: NDArray[np.int64]         # B, sequences
    v: NDArray[np.float64]           # verify pass / plain decode step at the same B
    decode_ms: NDArray[np.float64]   # the plain decode step at that B
    context: int

    @property
    def per_pass(self) -> NDArray[np.int64]:
        """Tokens computed in one pass: T x B."""
        return self.tokens * self.batch


@dataclass(frozen=True)
class PairRow:
    """One pair at one temperature: plain decoding, and speculation at its best measured gamma."""

    pair: str
    dtype: str
    temperature: float
    ar_tok_s: float
    target_step_ms: float
    gamma: int
    alpha: float
    c: float
    v: float
    predicted: float
    measured: float


@dataclass(frozen=True)
class GraphStep:
    """The SmolLM2 decode step at T new tokens: eager, and the same call replayed from a CUDA graph."""

    tokens: int
    eager_ms: float
    graph_ms: float
    max_abs_diff: float


@lru_cache(maxsize=1)
def load(path: Path = DATA) -> dict:
    """The committed run (both files and their provenance), read once per process."""
    return json.loads(path.read_text())


def provenance() -> Provenance:
    """The run's GPU, software versions, commit, dates and commands."""
    p = load()["provenance"]
    return Provenance(p["gpu"], p["torch"], p["cuda"], p["commit"], dict(p["dates"]), dict(p["commands"]),
                      dict(p["workload"]))


def verify_points() -> VerifyPoints:
    """Every measured v(T, B) of the SmolLM2 target, flattened in the file's order."""
    stage = load()["engine"]["stages"]["verify_cost"]
    rows = [(int(t), r) for t, rs in stage["v"].items() for r in rs]
    return VerifyPoints(np.array([t for t, _ in rows]), np.array([r["batch"] for _, r in rows]),
                        np.array([r["v"] for _, r in rows], dtype=np.float64),
                        np.array([r["decode_ms"] for _, r in rows], dtype=np.float64), int(stage["context"]))


def flat_and_knee(points: VerifyPoints, threshold: float = KNEE_V) -> tuple[int, int | None]:
    """(largest T x B below which every measured v < threshold, smallest T x B with v >= threshold or None)."""
    n = points.per_pass
    high = n[points.v >= threshold]
    knee = int(high.min()) if high.size else None
    below = n[n < knee] if knee is not None else n
    return int(below.max()), knee


def model_v(points: VerifyPoints, with_costs: bool) -> NDArray[np.float64]:
    """v(T, B) of SMOLLM2_135M on the H200's achievable ceilings: the pure roofline, or with the measured costs.

    with_costs adds, per pass, the median measured plain step at B = 1 as a fixed cost and the logits' traffic."""
    hw = roofline.achievable(roofline.HARDWARE["H200 SXM"])
    fixed = float(np.median(points.decode_ms[points.batch == 1])) / 1e3 if with_costs else 0.0
    over = steptime.Overheads(fixed_s=fixed, logits=with_costs)
    ver = steptime.step_time(SMOLLM2_135M, hw, "bf16", points.batch, points.tokens, points.context, overheads=over)
    dec = steptime.step_time(SMOLLM2_135M, hw, "bf16", points.batch, 1, points.context, overheads=over)
    return np.asarray(ver.total_s / dec.total_s, dtype=np.float64)


def model_knee(points: VerifyPoints, with_costs: bool, threshold: float = KNEE_V) -> int | None:
    """The smallest measured T x B at which the model's v reaches the threshold (None if it never does)."""
    n = points.per_pass[model_v(points, with_costs) >= threshold]
    return int(n.min()) if n.size else None


def _finite(x: object) -> float:
    """A JSON number as a float, NaN for null."""
    return float("nan") if x is None else float(x)


def pair_rows() -> list[PairRow]:
    """Each pair at T = 0 and T = 1: plain tok/s and speculation at the best measured gamma (its alpha, c, v)."""
    out = []
    for name, res in load()["engine"]["stages"]["pairs"].items():
        if not isinstance(res, dict):       # the stage's own "seconds"
            continue
        for label, temp in (("T=0", 0.0), ("T=1", 1.0)):
            if label not in res:
                continue
            r = res[label]
            best = next(row for row in r["rows"] if row["gamma"] == r["best_gamma"])
            out.append(PairRow(name, str(res["info"]["dtype"]), temp, _finite(r["ar_tok_s"]),
                               _finite(r["target_step_ms"]), int(r["best_gamma"]), _finite(best["alpha"]),
                               _finite(best["c"]), _finite(best["v"]), _finite(best["predicted_speedup"]),
                               _finite(best["measured_speedup"])))
    return out


def alpha_by_position(pair: str, temperature: str, gamma: int) -> list[float]:
    """The measured acceptance at each draft position (1..gamma) of one pair's run, e.g. ("smollm2-eagle", "T=1", 3)."""
    rows = load()["engine"]["stages"]["pairs"][pair][temperature]["rows"]
    return [_finite(a) for a in next(r for r in rows if r["gamma"] == gamma)["alpha_per_position"]]


def graph_steps() -> list[GraphStep]:
    """The decode step at 1, 4, 16 and 64 new tokens, eager against replayed from a CUDA graph (same logits)."""
    stage = load()["graph_step"]["graph_step"]
    return [GraphStep(int(k.split("=")[1]), float(r["eager_ms"]), float(r["graph_ms"]),
                      float(r["graph_matches_eager_max_abs"]))
            for k, r in stage.items() if k.startswith("T=")]


def step_floor() -> dict[str, float]:
    """The eager step's median, a bare chain of the same GEMV shapes in a CUDA graph, and the weight-read floor (ms)."""
    s = load()["engine"]["stages"]["step_floor"]
    return {"eager_ms": float(s["eager_step_ms_median"]),
            "gemv_chain_graph_ms": float(s["same_shape_gemv_chain_graph_ms"]),
            "weight_read_ms": float(s["bf16_weight_read_floor_ms"])}


def launch_share() -> float:
    """The share of the eager step that a graph replay removes: 1 - graph / eager at T = 1 (host launch overhead)."""
    one = next(g for g in graph_steps() if g.tokens == 1)
    return 1.0 - one.graph_ms / one.eager_ms


def tok_s(step_ms: float) -> float:
    """Tokens per second of a decoder taking step_ms per token; NaN for a non-positive or missing step."""
    return 1e3 / step_ms if math.isfinite(step_ms) and step_ms > 0 else float("nan")
