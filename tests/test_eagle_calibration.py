"""bench/eagle_calibration.py: its bins and acceptance map (checked by DynamicTree), and its writer's guard."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from specdec_core.dynamic_tree import DynamicTree

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("eagle_calibration", ROOT / "bench/eagle_calibration.py")
cal = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cal)


def test_bins_average_q_and_acceptance_per_bin() -> None:
    q = np.array([0.01, 0.02, 0.5, 0.55, 1.0])
    a = np.array([0.0, 1.0, 0.4, 0.2, 1.0])
    rows = cal.binned(q, a)
    assert [r["n"] for r in rows] == [2, 2, 1]  # q = 1 falls in the last bin, not outside every bin
    assert rows[0]["mean_q"] == pytest.approx(0.015) and rows[0]["accept"] == pytest.approx(0.5)
    assert rows[1]["accept"] == pytest.approx(0.3) and rows[2]["q_hi"] == 1.0


def test_the_map_rises_from_zero_to_one_and_a_dynamic_tree_takes_it() -> None:
    rows = [{"mean_q": 0.1, "accept": 0.08}, {"mean_q": 0.4, "accept": 0.35}, {"mean_q": 0.6, "accept": 0.3},
            {"mean_q": 0.9, "accept": 0.85}]
    knots, values = cal.accept_map(rows)
    assert knots == [0.0, 0.1, 0.4, 0.6, 0.9, 1.0]
    assert values[:4] == [0.0, 0.08, 0.35, 0.35]  # a dip (noise) is lifted: the map never falls
    assert values[-1] == 1.0  # 0.85 + 0.1 x 1.67 (the last slope) stops at 1
    assert float(DynamicTree(accept=(tuple(knots), tuple(values))).edge(0.25)) == pytest.approx(0.215)


def test_the_bench_refuses_the_shipped_files_before_any_work() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "bench/eagle_calibration.py"), "--data", "bench/selfdistill_cpu",
                           "--json", "gpu_demo/assets/smollm2_eagle.json"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "ships" in lines[0], proc.stderr
