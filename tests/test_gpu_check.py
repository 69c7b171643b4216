"""The prepared GPU script runs here first (--device cpu --quick), so the GPU run is its second run; and the
transfer tool splits a file into parts and joins it back only when every checksum matches."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bench(name: str):
    """A bench/ script loaded as a module by its path (bench/ is scripts, not a package; sys.path stays as it is)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


gpu_check = _bench("gpu_check")
gpu_transfer = _bench("gpu_transfer")


@pytest.mark.slow
def test_gpu_check_quick_on_cpu_writes_every_stage(tmp_path: Path) -> None:
    pytest.importorskip("gguf")
    rc = gpu_check.main(["--out", str(tmp_path), "--device", "cpu", "--quick", "--limit-s", "3000",
                         "--pairs", "builtin,smollm2-lookup", "--tests", "tests/test_device_turn.py",
                         "--graph-pairs", "smollm2-lookup,smollm2-eagle"])
    assert rc == 0
    rep = json.loads((tmp_path / gpu_check.REPORT).read_text())
    st = rep["stages"]
    assert set(st) == {"cuda_tests", "pair:builtin", "pair:smollm2-lookup", "verify_cost", "graphs"}
    assert st["cuda_tests"]["returncode"] == 0 and "passed" in st["cuda_tests"]["summary"]
    for name in ("pair:builtin", "pair:smollm2-lookup"):
        for temp in ("T=0", "T=1"):
            row = st[name][temp]["rows"][0]
            assert st[name][temp]["ar_tok_s"] > 0 and row["gamma"] == 2 and row["c"] >= 0 and row["v"] > 0
    v = st["verify_cost"]["v"]
    assert set(v) == {"2", "4"} and [r["batch"] for r in v["2"]] == [1, 2] and all(r["v"] > 0 for r in v["4"])
    g = st["graphs"]
    assert g["capture"] is False and set(g) >= {"smollm2-lookup", "smollm2-eagle"}
    for name in ("smollm2-lookup", "smollm2-eagle"):
        e, s = g[name]["eager"], g[name]["static"]
        assert e["greedy_equal"] and s["greedy_equal"] and g[name]["same_text_as_eager"]
        assert all(x > 0 for x in e["step_ms"] + s["step_ms"]) and s["T=1"]["spec_tok_s"] > 0
        assert [1, 1] in s["shapes"] and [1, 4] in s["shapes"]  # the decode and the gamma 3 verify shapes were used
    assert "lookup:" in gpu_check.graphs_line(g) and "eagle:" in gpu_check.graphs_line(g)
    assert rep["environment"]["torch"] and rep["date"]


def test_gpu_check_refuses_a_device_that_is_not_here(tmp_path: Path, capsys) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert gpu_check.main(["--out", str(tmp_path), "--device", "cuda"]) == 2
    assert "cuda" in capsys.readouterr().err.lower() and not (tmp_path / gpu_check.REPORT).exists()


def test_split_then_join_gives_the_same_bytes(tmp_path: Path) -> None:
    src = tmp_path / "model.bin"
    src.write_bytes(bytes(range(256)) * 4097)  # 1,048,832 bytes: 3 parts of 400 kB
    m = gpu_transfer.split(src, tmp_path / "xfer", 400_000)
    assert [p["bytes"] for p in m["parts"]] == [400_000, 400_000, 248_832]
    out = gpu_transfer.join(tmp_path / "xfer" / gpu_transfer.MANIFEST, tmp_path / "there" / "model.bin")
    assert out.read_bytes() == src.read_bytes()


def test_join_refuses_a_missing_or_altered_part_and_writes_nothing(tmp_path: Path) -> None:
    src = tmp_path / "model.bin"
    src.write_bytes(b"x" * 1000 + b"y" * 1000)
    gpu_transfer.split(src, tmp_path / "xfer", 700)
    manifest, dest = tmp_path / "xfer" / gpu_transfer.MANIFEST, tmp_path / "out.bin"
    part = tmp_path / "xfer" / "model.bin.part1"
    good = part.read_bytes()
    part.write_bytes(b"z" + good[1:])  # same size, one byte changed
    with pytest.raises(ValueError, match="part1 does not match"):
        gpu_transfer.join(manifest, dest)
    part.unlink()
    with pytest.raises(ValueError, match="part1 is missing"):
        gpu_transfer.join(manifest, dest)
    assert not dest.exists()
    assert gpu_transfer.main(["join", str(manifest), "--dest", str(dest)]) == 2


def test_a_failing_test_stays_in_the_json_and_stdout_stays_one_short_line(tmp_path: Path) -> None:
    """A failing CUDA test's name and trace go in the JSON; its stage's stdout line is short and names it."""
    bad = tmp_path / "test_fails_here.py"
    bad.write_text("def test_fails():\n    assert 1 == 2, 'x' * 50000\n")
    res = gpu_check.cuda_tests([str(bad)], 120.0)
    assert res["returncode"] == 1 and res["failed"] and res["failed"][0].endswith("::test_fails")
    assert "assert 1 == 2" in res["output_tail"] and len(res["output_tail"]) <= gpu_check.TAIL_CHARS
    line = gpu_check.stage_line("cuda_tests", res)
    assert len(line) <= 200 and "failed" in line and "\n" not in line
