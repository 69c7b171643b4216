"""The committed H200 run: read back exactly, its knee found from the data, the models beside it, and both pages
showing the file's numbers (roofline's measured section, live's table)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specdec_core import h200_run as h200
from specdec_core import roofline, steptime


def raw() -> dict:
    return json.loads(h200.DATA.read_text())


def test_provenance_names_gpu_software_commit_and_commands():
    p = h200.provenance()
    assert p.gpu == "NVIDIA H200" and p.torch.startswith("2.11.0") and p.cuda == "13.0" and p.commit == "bfa7fe5"
    assert set(p.commands) == {"engine", "graph_step"} and all("gpu_probe" in c for c in p.commands.values())
    line = p.line()
    assert "measured on one NVIDIA H200 on 2026-12-04" in line and "bfa7fe5" in line and h200.DATA.name in line


def test_verify_points_are_the_files_rows():
    pts = h200.verify_points()
    stage = raw()["engine"]["stages"]["verify_cost"]
    assert pts.context == stage["context"] == 256
    assert len(pts.v) == sum(len(rows) for rows in stage["v"].values()) == 72
    i = int(np.flatnonzero((pts.tokens == 64) & (pts.batch == 256))[0])
    assert pts.v[i] == next(r["v"] for r in stage["v"]["64"] if r["batch"] == 256)
    assert pts.per_pass[i] == 64 * 256


def test_measured_knee_is_far_past_the_ridge_and_the_pure_roofline():
    pts = h200.verify_points()
    flat_until, knee = h200.flat_and_knee(pts)
    assert (flat_until, knee) == (4096, 8192)             # v(16, 256) = 1.12 < 1.25 <= v(32, 256) = 1.55
    assert np.all(pts.v[pts.per_pass <= flat_until] < h200.KNEE_V)
    pure, costed = h200.model_knee(pts, with_costs=False), h200.model_knee(pts, with_costs=True)
    assert pure is not None and pure <= 2 * roofline.ridge(
        roofline.HARDWARE["H200 SXM"]
    )  # the roofline: near the ridge
    assert costed is not None and costed >= 16 * pure  # a fixed cost moves it far out
    assert knee >= 16 * pure


def test_flat_and_knee_on_made_up_points():
    def pts(v):
        return h200.VerifyPoints(np.array([2, 4, 8]), np.array([1, 1, 1]), np.array(v, dtype=float), np.ones(3), 32)

    assert h200.flat_and_knee(pts([1.0, 1.3, 2.0])) == (2, 4)
    assert h200.flat_and_knee(pts([1.0, 1.1, 1.2])) == (8, None)  # never reached
    assert h200.flat_and_knee(pts([1.0, 1.1, 1.2]), threshold=1.15) == (4, 8)


def test_models_are_the_step_time_model_at_the_same_points():
    pts = h200.verify_points()
    hw = roofline.achievable(roofline.HARDWARE["H200 SXM"])
    i = int(np.flatnonzero((pts.tokens == 32) & (pts.batch == 8))[0])
    ver = steptime.step_time(h200.SMOLLM2_135M, hw, "bf16", 8, 32, 256).total_s
    dec = steptime.step_time(h200.SMOLLM2_135M, hw, "bf16", 8, 1, 256).total_s
    assert h200.model_v(pts, with_costs=False)[i] == pytest.approx(float(ver / dec), rel=1e-12)
    costed = h200.model_v(pts, with_costs=True)
    assert costed[i] < h200.model_v(pts, with_costs=False)[i]  # a fixed cost flattens v
    assert np.all(costed >= 1.0 - 1e-12)


def test_pair_rows_are_each_pairs_best_gamma():
    rows = h200.pair_rows()
    pairs = {k: v for k, v in raw()["engine"]["stages"]["pairs"].items() if isinstance(v, dict)}
    assert len(rows) == 2 * len(pairs) == 8
    eagle_t1 = next(r for r in rows if r.pair == "smollm2-eagle" and r.temperature == 1.0)
    assert eagle_t1.gamma == 3 and eagle_t1.measured == pytest.approx(1.2124372818341747)
    assert eagle_t1.alpha == pytest.approx(0.38603858867975444) and eagle_t1.c == pytest.approx(0.0652843082984002)
    for r in rows:
        src = next(x for x in pairs[r.pair][f"T={r.temperature:.0f}"]["rows"] if x["gamma"] == r.gamma)
        assert r.measured == src["measured_speedup"] and r.predicted == src["predicted_speedup"]
        assert r.measured == pytest.approx(pairs[r.pair][f"T={r.temperature:.0f}"]["best_measured_speedup"])


def test_graph_steps_and_launch_share_come_from_one_run():
    steps = {g.tokens: g for g in h200.graph_steps()}
    assert sorted(steps) == [1, 4, 16, 64] and all(g.max_abs_diff == 0.0 for g in steps.values())
    assert h200.launch_share() == pytest.approx(1 - 2.6323575000049004 / 16.51188049999064)
    assert h200.tok_s(2.5) == 400.0 and np.isnan(h200.tok_s(0.0)) and np.isnan(h200.tok_s(float("nan")))


def test_roofline_page_shows_the_h200_section_from_the_file(app_test):
    at = app_test("views/roofline.py")
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "up to 4,096 tokens a pass and first reached 1.25 at 8,192 tokens a pass" in text
    assert f"{h200.launch_share():.0%} of it was launch overhead" in text
    m = {x.label: x.value for x in at.metric}
    assert m["eager decode step"] == f"{h200.step_floor()['eager_ms']:.1f} ms"
    assert m["from a CUDA graph"] == "2.63 ms"
    assert any(h200.provenance().line() in c.value for c in at.caption)


def test_live_page_shows_every_pair_on_the_h200(app_test):
    at = app_test("views/live.py")
    assert not at.exception
    frame = next(d for d in at.dataframe if "best gamma" in d.value.columns)
    assert len(frame.value) == 8
    row = frame.value[(frame.value["pair"] == "smollm2-eagle") & (frame.value["T"] == 1.0)].iloc[0]
    assert row["speedup measured"] == pytest.approx(1.2124372818341747) and row["best gamma"] == 3
    assert row["weights"] == "bfloat16" and set(frame.value[frame.value["pair"] == "builtin"]["weights"]) == {"float32"}
    assert any("4 chat prompts" in c.value and "64 new tokens" in c.value for c in at.caption)
    assert any("speculative decoding with graphs has not been measured" in c.value for c in at.caption)
