"""`python -m gpu_demo generate|bench` on the built-in pair: output format, JSON report, clear errors."""

from __future__ import annotations

import json

import pytest

from gpu_demo.__main__ import main

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_generate_marks_kinds_in_plain_mode(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["generate", "--prompt", "It is a truth", "--gamma", "4", "--max-new-tokens", "40", "--plain",
               "--device", "cpu", "--seed", "3"])
    out = capsys.readouterr().out
    assert rc == 0
    text, _, stats = out.partition("\n-- markers")
    assert text.startswith("It is a truth")
    assert "[" in text or "{" in text  # every round ends with a correction [x] or a bonus {x}
    assert "40 tokens in" in stats and "tokens/pass" in stats and "alpha" in stats


def test_generate_greedy_speculative_equals_autoregressive(capsys: pytest.CaptureFixture[str]) -> None:
    def text(gamma: str) -> str:
        main(["generate", "--prompt", "Emma", "--gamma", gamma, "--temperature", "0", "--max-new-tokens", "60",
              "--plain", "--device", "cpu"])
        body = capsys.readouterr().out.partition("\n-- markers")[0]
        return body.replace("[", "").replace("]", "").replace("{", "").replace("}", "")
    assert text("5") == text("0")


def test_bench_writes_a_json_report(tmp_path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bench.json"
    rc = main(["bench", "--gamma", "1,3", "--max-new-tokens", "12", "--repeats", "1", "--device", "cpu",
               "--prompt", "It is a truth", "--json", str(path)])
    assert rc == 0
    report = json.loads(path.read_text())
    assert [r["gamma"] for r in report["rows"]] == [1, 3]
    for r in report["rows"]:
        assert len(r["alpha_per_position"]) == r["gamma"]
        assert r["c"] > 0 and r["v"] > 0 and r["predicted_speedup"] > 0 and r["measured_speedup"] > 0
    assert report["best_gamma"] in (1, 3)
    assert "<- best" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["generate", "--prompt", "Hello ~", "--device", "cpu"], "'~'"),
        (["generate", "--prompt", "Hi", "--gamma", "17", "--device", "cpu"],
         "--gamma: 17 is outside the allowed range 0 to 16"),
        (["generate", "--prompt", "Hi", "--temperature", "-1", "--device", "cpu"],
         "--temperature: -1 is outside the allowed range 0 to 100"),
        (["generate", "--prompt", "Hi", "--max-new-tokens", "100000", "--device", "cpu"], "max_new_tokens must be"),
        (["generate", "--prompt", "x" * 600, "--device", "cpu"], "context allows at most"),
        (["generate", "--prompt", "Hi", "--pair", "nope"], "--pair: invalid choice: 'nope'"),
    ],
)
def test_bad_input_gives_one_line_error(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Refused in one line with exit 2: by argparse for an argument out of range, by main for the rest."""
    try:
        rc = main(argv)
    except SystemExit as exc:  # argparse refuses an argument before any work
        rc = exc.code
    assert rc == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "error: " in err and message in err
