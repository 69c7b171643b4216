"""The CLI refuses bad input in one line with exit code 2, before any work, and writes nothing on refusal."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from gpu_demo.__main__ import main
from gpu_demo.pairs import ASSETS


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """(exit code, stderr) of main(argv), whether it returns or argparse exits."""
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = int(exc.code or 0)
    return rc, capsys.readouterr().err


def assert_refused(argv: list[str], capsys: pytest.CaptureFixture[str], names: str) -> str:
    rc, err = run_cli(argv, capsys)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert names in lines[0], lines[0]
    return lines[0]


GEN = ["generate", "--prompt", "It is a truth"]


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (GEN + ["--device", "tpu"], "--device"),
        (GEN + ["--threads", "-1"], "--threads"),
        (GEN + ["--pair-option", "nonsense=1"], "nonsense"),
        (GEN + ["--pair-option", "dtype=banana"], "dtype=banana"),
        (GEN + ["--pair-option", "noequals"], "KEY=VALUE"),
        (GEN + ["--seed", str(2**70)], "--seed"),
        (GEN + ["--seed", "2^70"], "--seed"),
        (GEN + ["--gamma", "17"], "--gamma"),
        (GEN + ["--gamma", "-1"], "--gamma"),
        (GEN + ["--temperature", "inf"], "--temperature"),
        (GEN + ["--top-p", "0"], "--top-p"),
        (GEN + ["--max-new-tokens", "0"], "--max-new-tokens"),
        (GEN + ["--pair", "no-such-pair"], "--pair"),
        (["bench", "--repeats", "0"], "--repeats"),
        (["bench", "--gamma", "1-100000000"], "--gamma"),
        (["bench", "--gamma", "8-1"], "--gamma"),
        (["bench", "--gamma", "x"], "--gamma"),
        (["train", "--steps", "0"], "--steps"),
        (["train", "--steps", "-1"], "--steps"),
        (["train", "--stop-after", "-3"], "--stop-after"),
        (["train", "--distill-steps", "-5"], "--distill-steps"),
        (["probe", "--max-tokens", "0"], "--max-tokens"),
    ],
)
def test_bad_arguments_are_refused_in_one_line(argv, names, capsys) -> None:
    assert_refused(argv, capsys, names)


def test_empty_json_path_is_refused(capsys) -> None:
    assert_refused(["bench", "--json", ""], capsys, "--json")


def test_unwritable_json_is_refused_before_the_bench_runs(tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    line = assert_refused(["bench", "--json", str(blocker / "out.json")], capsys, "--json")
    assert "cannot write" in line and not (blocker / "out.json").exists()


def test_unwritable_out_is_refused_before_training(tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    assert_refused(["train", "--which", "expert", "--steps", "2", "--out", str(blocker / "sub")], capsys, "--out")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def _digest(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


def test_training_refuses_to_overwrite_the_shipped_weights(capsys) -> None:
    before = _digest(ASSETS)
    line = assert_refused(["train", "--which", "expert", "--steps", "1"], capsys, "--force")
    assert "shipped weights" in line and _digest(ASSETS) == before


def test_training_without_its_teacher_is_refused_before_any_step(tmp_path: Path, capsys) -> None:
    line = assert_refused(["train", "--which", "draft", "--steps", "2", "--out", str(tmp_path)], capsys, "target")
    assert "train it first" in line and list(tmp_path.iterdir()) == []


def test_truncated_weights_name_the_file(tmp_path: Path, capsys) -> None:
    for f in ASSETS.iterdir():
        if f.suffix in (".json", ".safetensors") and not f.name.startswith("smollm2"):
            (tmp_path / f.name).write_bytes(f.read_bytes())
    (tmp_path / "target.safetensors").write_bytes((ASSETS / "target.safetensors").read_bytes()[:1000])
    line = assert_refused(GEN + ["--pair-option", f"assets={tmp_path}"], capsys, "target.safetensors")
    assert str(tmp_path) in line


def test_assets_option_is_a_path_and_works(tmp_path: Path, capsys) -> None:
    """--pair-option assets=DIR used to fail with str / str; it now loads the pair from DIR."""
    for f in ASSETS.iterdir():
        if f.suffix in (".json", ".safetensors") and not f.name.startswith("smollm2"):
            (tmp_path / f.name).write_bytes(f.read_bytes())
    rc, _ = run_cli(GEN + ["--pair-option", f"assets={tmp_path}", "--max-new-tokens", "5", "--plain"], capsys)
    assert rc == 0


def test_gamma_zero_prints_no_alpha_nan(capsys) -> None:
    rc = main(GEN + ["--gamma", "0", "--max-new-tokens", "5", "--plain"])
    out = capsys.readouterr().out
    assert rc == 0 and "nan" not in out and "no draft" in out


def _nan_copy(tmp_path: Path, name: str) -> Path:
    """The built-in assets copied to tmp_path, with every data byte after name's safetensors header set to 0xFF."""
    for f in ASSETS.iterdir():
        if f.suffix in (".json", ".safetensors") and not f.name.startswith("smollm2"):
            (tmp_path / f.name).write_bytes(f.read_bytes())
    raw = (ASSETS / name).read_bytes()
    start = 8 + int.from_bytes(raw[:8], "little")  # u64 header length, then the JSON header, then the data
    (tmp_path / name).write_bytes(raw[:start] + b"\xff" * (len(raw) - start))  # 0xFFFFFFFF is a float32 NaN
    return tmp_path / name


@pytest.mark.parametrize("name", ["target.safetensors", "draft.safetensors"])
def test_nan_weights_are_refused_by_name(tmp_path: Path, name: str, capsys) -> None:
    """Before: a file of NaN weights loaded, printed garbage and exited 0."""
    bad = _nan_copy(tmp_path, name)
    rc, err = run_cli(GEN + ["--pair-option", f"assets={tmp_path}", "--max-new-tokens", "3", "--plain"], capsys)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and str(bad) in lines[0] and "NaN" in lines[0], err


@pytest.mark.parametrize(("option", "names"), [("max_len=0", "max_len"), ("max_len=-5", "max_len"),
                                               ("dtype=int64", "floating-point"), ("max_ngram=0", "max_ngram")])
def test_bad_pair_options_are_not_reported_as_damaged_files(option: str, names: str, capsys) -> None:
    line = assert_refused(GEN + ["--pair", "smollm2-lookup", "--pair-option", option], capsys, names)
    assert "option" in line and "safetensors" not in line and "damaged" not in line


def test_builtin_dtype_int64_is_refused(capsys) -> None:
    line = assert_refused(GEN + ["--pair-option", "dtype=int64"], capsys, "floating-point")
    assert "safetensors" not in line


def test_a_target_json_without_vocab_names_the_file(tmp_path: Path, capsys) -> None:
    for f in ASSETS.iterdir():
        if f.suffix in (".json", ".safetensors") and not f.name.startswith("smollm2"):
            (tmp_path / f.name).write_bytes(f.read_bytes())
    meta = json.loads((tmp_path / "target.json").read_text())
    del meta["vocab"]
    (tmp_path / "target.json").write_text(json.dumps(meta))
    line = assert_refused(GEN + ["--pair-option", f"assets={tmp_path}"], capsys, "target.json")
    assert "no 'vocab'" in line
