"""Export of a live run: JSON (settings, device, versions, every event) and CSV metrics."""

from __future__ import annotations

import csv
import io
import json
import math
import platform
import subprocess
from functools import lru_cache
from importlib import metadata
from pathlib import Path

from gpu_demo.live.runner import RunRecord
from specdec_core.measure import Measured

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("torch", "numpy", "streamlit", "plotly", "safetensors")


@lru_cache(maxsize=1)
def versions() -> dict[str, str]:
    """Python, package and app (git commit) versions for the export."""
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    try:
        out["specdec-lab commit"] = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=5,
        ).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        out["specdec-lab commit"] = "unknown"
    return out


def _clean(x: object) -> object:
    """JSON-safe: NaN/inf become None, numpy scalars and arrays become Python values."""
    if hasattr(x, "tolist"):
        x = x.tolist()
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, list):
        return [_clean(v) for v in x]
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    return x


def metrics_dict(m: Measured) -> dict:
    """The measured summary as plain values."""
    return _clean({k: getattr(m, k) for k in m.__dataclass_fields__})  # type: ignore[return-value]


def run_json(rec: RunRecord, m: Measured, versions_: dict[str, str]) -> str:
    """The whole run as JSON: settings, device, versions, status, metrics, and both runs' events."""
    doc = {
        "settings": rec.settings.to_dict(), "device": rec.device_name, "versions": versions_,
        "status": rec.status, "prompt_ids": rec.prompt_ids, "metrics": metrics_dict(m),
        "speculative": {"events": [e.to_dict() for e in rec.events], "wall_s": rec.spec_wall},
        "autoregressive": {"events": [e.to_dict() for e in rec.base_events], "wall_s": rec.base_wall},
    }
    return json.dumps(_clean(doc), indent=1, allow_nan=False)


def metrics_csv(m: Measured) -> str:
    """CSV with one row per metric (scalars, then alpha_j, then the accepted-length counts and pmf)."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["metric", "position", "value"])
    d = metrics_dict(m)
    for key in ("gamma", "rounds", "tokens", "alpha_const", "tokens_per_pass", "c", "v", "spec_tokens_per_s",
                "base_tokens_per_s", "expected_tokens", "predicted_speedup", "predicted_speedup_const",
                "measured_speedup"):
        w.writerow([key, "", d[key]])
    for j, (a, r) in enumerate(zip(d["alphas"], d["reached"]), start=1):
        w.writerow(["alpha_j", j, a])
        w.writerow(["reached_j", j, r])
    for k, (n, pc, pp) in enumerate(zip(d["length_counts"], d["pmf_const"], d["pmf_positional"]), start=1):
        w.writerow(["length_count", k, n])
        w.writerow(["pmf_const", k, pc])
        w.writerow(["pmf_positional", k, pp])
    return buf.getvalue()
