"""Every writer (the CLI's --json and --out, the bench scripts, training) refuses the project's own files.

A refusal is exit 2, one line, nothing written; an existing file that is not a report of ours needs --force.
Before these tests, `bench --json gpu_demo/assets/target.safetensors` wrote its report over the shipped target.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import one_line_run

from gpu_demo.pairs import ASSETS
from gpu_demo.reports import MARKER, RefusedPath, check_out_dir, check_report_path, is_report, write_report

ROOT = Path(__file__).resolve().parent.parent


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _refused(argv: list[str], capsys) -> str:
    rc, line = one_line_run(argv, capsys)
    assert rc == 2, line
    return line


def test_cli_bench_refuses_to_write_over_the_shipped_target(capsys) -> None:
    target = ASSETS / "target.safetensors"
    before = _sha(target)
    line = _refused(["bench", "--gamma", "1", "--max-new-tokens", "2", "--repeats", "1",
                     "--json", str(target)], capsys)
    assert "gpu_demo" in line and "ships" in line
    assert _sha(target) == before


@pytest.mark.parametrize("rel", ["gpu_demo/report.json", "specdec_core/r.json", "ui/r.json", "content/r.json",
                                 "views/r.json", "gpu_demo/assets/new/r.json"])
def test_cli_bench_refuses_any_path_inside_the_packages_even_with_force(rel: str, capsys) -> None:
    path = ROOT / rel
    line = _refused(["bench", "--json", str(path), "--force"], capsys)
    assert "ships" in line and not path.exists() and not (ROOT / "gpu_demo/assets/new").exists()


def test_train_refuses_an_out_folder_inside_the_packages(capsys) -> None:
    before = {p.name: _sha(p) for p in (ROOT / "gpu_demo/models").iterdir() if p.is_file()}
    line = _refused(["train", "--which", "expert", "--steps", "1", "--out", str(ROOT / "gpu_demo/models")], capsys)
    assert "--out" in line and "--force" in line
    assert {p.name: _sha(p) for p in (ROOT / "gpu_demo/models").iterdir() if p.is_file()} == before


def test_an_existing_foreign_file_needs_force(tmp_path: Path, capsys) -> None:
    foreign = tmp_path / "notes.txt"
    foreign.write_text("my notes")
    line = _refused(["bench", "--json", str(foreign)], capsys)
    assert "--force" in line and foreign.read_text() == "my notes"
    with pytest.raises(RefusedPath):
        check_report_path(foreign)
    assert check_report_path(foreign, force=True) == foreign


def test_a_report_of_ours_is_recognised_and_replaced(tmp_path: Path) -> None:
    path = write_report(tmp_path / "r.json", {"x": 1}, "test")
    assert json.loads(path.read_text()) == {MARKER: "test", "x": 1}
    write_report(path, {"x": 2}, "test")  # ours: replaced without --force
    assert json.loads(path.read_text())["x"] == 2
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps({"x": 1}))  # JSON, but without the marker: not ours
    with pytest.raises(RefusedPath, match="--force"):
        write_report(plain, {"x": 2}, "test")
    assert json.loads(plain.read_text()) == {"x": 1}


def test_out_folder_guard() -> None:
    with pytest.raises(RefusedPath, match="--force"):
        check_out_dir(ASSETS)
    assert check_out_dir(ASSETS, force=True) == ASSETS  # train --force rebuilds the shipped weights


@pytest.mark.parametrize("script", ["bench/proof_bench.py", "bench/algebra_bench.py", "bench/tree_bench.py"])
def test_bench_scripts_refuse_the_shipped_target_before_any_work(script: str) -> None:
    target = ASSETS / "target.safetensors"
    before = _sha(target)
    proc = subprocess.run([sys.executable, str(ROOT / script), "--json", str(target)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "ships" in lines[0], proc.stderr
    assert proc.stdout == "" and _sha(target) == before


def test_eagle_training_cli_refuses_the_assets_without_force() -> None:
    proc = subprocess.run([sys.executable, "-m", "gpu_demo.training.eagle", "--steps", "1"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "--force" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def _bench(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("flag", ["--html", "--png"])
def test_roofline_probe_figures_refuse_the_packages_before_any_work(flag: str) -> None:
    theme = ROOT / "ui/theme.py"
    before = _sha(theme)
    proc = _bench(["bench/roofline_probe_bench.py", "--runs", "1", flag, str(theme)])
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and "ships" in lines[0], proc.stderr
    assert proc.stdout == "" and _sha(theme) == before


def test_gpu_transfer_join_and_split_refuse_the_packages(tmp_path: Path) -> None:
    src = tmp_path / "blob.bin"
    src.write_bytes(b"x" * 1000)
    ok = _bench(["bench/gpu_transfer.py", "split", str(src), "--out", str(tmp_path / "parts")])
    assert ok.returncode == 0, ok.stderr
    theme = ROOT / "ui/theme.py"
    before = _sha(theme)
    join = _bench(["bench/gpu_transfer.py", "join", str(tmp_path / "parts/MANIFEST.json"), "--dest", str(theme)])
    assert join.returncode == 2 and "ships" in join.stderr and "Traceback" not in join.stderr, join.stderr
    assert _sha(theme) == before and not (ROOT / "ui/theme.py.joining").exists()
    split = _bench(["bench/gpu_transfer.py", "split", str(src), "--out", str(ROOT / "gpu_demo/assets/xfer")])
    assert split.returncode == 2 and "ships" in split.stderr, split.stderr
    assert not (ROOT / "gpu_demo/assets/xfer").exists()


def test_a_link_inside_an_allowed_folder_into_the_packages_is_refused(tmp_path: Path) -> None:
    expert = ASSETS / "expert.json"
    (tmp_path / "expert.json").symlink_to(expert)
    with pytest.raises(RefusedPath, match="link into the gpu_demo package"):
        check_out_dir(tmp_path)
    with pytest.raises(RefusedPath, match="ships"):
        check_report_path(tmp_path / "expert.json", force=True)
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "blob.bin.part0").symlink_to(ROOT / "ui/theme.py")
    with pytest.raises(RefusedPath, match="link into the ui package"):
        check_out_dir(parts)


def test_train_out_with_a_link_onto_the_shipped_expert_is_refused(tmp_path: Path, capsys) -> None:
    expert = ASSETS / "expert.json"
    before = _sha(expert)
    (tmp_path / "expert.json").symlink_to(expert)
    line = _refused(["train", "--which", "expert", "--steps", "1", "--out", str(tmp_path)], capsys)
    assert "link into the gpu_demo package" in line and _sha(expert) == before


def test_a_committed_bench_result_needs_force() -> None:
    committed = ROOT / "bench/vs_llamacpp.json"
    assert is_report(committed)
    with pytest.raises(RefusedPath, match="committed result"):
        check_report_path(committed)
    assert check_report_path(committed, force=True) == committed
