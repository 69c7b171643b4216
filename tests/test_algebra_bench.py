"""bench/algebra_bench.py runs to its table (it drives the algebra page through the widget key the page binds)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_algebra_bench_quick_runs_and_writes_its_report(tmp_path: Path) -> None:
    out = tmp_path / "algebra.json"
    proc = subprocess.run([sys.executable, "bench/algebra_bench.py", "--quick", "--json", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = [r["name"] for r in json.loads(out.read_text())["results"]]
    assert names == ["heatmap", "heatmap_grid", "monte_carlo", "paste_hostile", "page_rerun"]
    assert "page_rerun" in proc.stdout
