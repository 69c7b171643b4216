"""The prepared GPU script runs here first (--device cpu --quick), so the GPU run is its second run; and the
transfer tool splits a file into parts, joins it back only when every checksum matches, and plans the device calls
so each fits the trip limit."""

from __future__ import annotations

import importlib.util
import json
import shlex
import shutil
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


def test_the_plan_cuts_every_call_under_the_trip_limit_and_the_last_call_joins_and_runs(tmp_path: Path) -> None:
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    big, small = tmp_path / "big.whl", tmp_path / "small.whl"
    big.write_bytes(bytes(range(256)) * (10 * 1024))  # 2.5 MiB
    small.write_bytes(b"s" * 100_000)
    mib = gpu_transfer.MIB
    tree = gpu_transfer.TRIP_BYTES - gpu_transfer.MARGIN_BYTES - mib  # 1 MiB of room a call
    rep = gpu_transfer.plan([big, small], here, "python3 -c pass", tree=tree)
    calls = rep["calls"]
    assert len(calls) == 3 and all(c["bytes"] <= mib and len(c["carry"]) <= 8 for c in calls)
    carried = [p for c in calls for p in c["carry"] if not p.endswith(gpu_transfer.MANIFEST)]
    assert len(carried) == len(set(carried)) == 4 and carried[-1].endswith("small.whl")  # 3 parts, then the small file
    assert all(c["command"].endswith("receive") for c in calls[:-1]) and "remote --then" in calls[-1]["command"]
    # there: every call's carried paths arrive in turn; before the last, one part is still missing
    shutil.copytree(here, there)
    part = there / calls[-1]["carry"][1]
    part.unlink()
    assert gpu_transfer.receive(there) == "received 2 of 3 parts"
    shutil.copy(here / calls[-1]["carry"][1], part)
    out = tmp_path / "ran.txt"
    code = f"import pathlib; pathlib.Path({str(out)!r}).write_text('ok')"
    assert gpu_transfer.remote(there, f"{sys.executable} -c {shlex.quote(code)}", install=False) == 0
    assert out.read_text() == "ok"
    assert (there / ".xfer" / "joined" / "big.whl").read_bytes() == big.read_bytes()
    with pytest.raises(ValueError, match="no room"):
        gpu_transfer.plan([big], here, "true", tree=gpu_transfer.TRIP_BYTES)


def test_the_working_tree_fits_one_device_trip_with_room_for_a_part() -> None:
    """Every device call sends the whole tree: past about 60 MiB, no part of the SmolLM2 wheel could travel."""
    assert 0 < gpu_transfer.tree_bytes(ROOT) < gpu_transfer.TRIP_BYTES - 4 * gpu_transfer.MIB
