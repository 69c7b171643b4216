"""Bounded, one-line refusals of hostile constraint sources, in the library and in the CLI.

Before: a deeply nested schema raised RecursionError (a traceback on /live, exit 1 in the CLI);
``--json-schema /dev/zero`` ended in MemoryError; a lone surrogate printed a codec error; the Lark
repetition ``start: "a"{100000}`` passed the build and failed later as "the prompt already violates".
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from cli_support import one_line_run

from gpu_demo import compile_worker, constraints
from gpu_demo.pairs import load_pair

NESTED_LIST = "[" * 2000
NESTED_SCHEMA = '{"type":"array","items":' * 1000 + "{}" + "}" * 1000


@pytest.fixture(scope="module")
def pair():
    return load_pair("builtin", "cpu")


@pytest.mark.parametrize(("kind", "source", "message"), [
    ("json", NESTED_LIST, "nested too deeply"),
    ("json", NESTED_SCHEMA, "nested too deeply"),
    ("json", json.loads('{"type":"array","items":' * 40 + "{}" + "}" * 40), "more than 32 levels"),
    ("regex", "a\udc80b", "lone surrogate U+DC80"),
    ("regex", "a" * (constraints.MAX_SOURCE_BYTES + 1), f"the limit is {constraints.MAX_SOURCE_BYTES:,} bytes"),
    ("lark", 'start: "a"{100000}', "beyond the constraint engine's limits: parser error: Too many items"),
])
def test_hostile_sources_raise_one_constraint_error_naming_the_cause(pair, kind, source, message) -> None:
    t0 = time.perf_counter()
    with pytest.raises(constraints.ConstraintError) as info:
        constraints.build(kind, source, pair.tokenizer, pair.target.vocab_size)
    assert message in str(info.value) and "\n" not in str(info.value)
    assert time.perf_counter() - t0 < 5  # refused, not compiled


def test_lark_item_limit_is_named_when_the_prompt_is_the_prefix(pair) -> None:
    ids = pair.tokenizer.encode("a")
    with pytest.raises(constraints.ConstraintError, match="beyond the constraint engine's limits") as info:
        constraints.build("lark", 'start: "a"{100000}', pair.tokenizer, pair.target.vocab_size, prefix=ids)
    assert "already violates" not in str(info.value)


def test_a_source_at_the_cap_still_builds(pair) -> None:
    """The size cap alone: a schema of MAX_SOURCE_BYTES that is cheap to compile (a long description)."""
    head = '{"type": "integer", "description": "'
    source = head + "x" * (constraints.MAX_SOURCE_BYTES - len(head) - 2) + '"}'
    assert len(source.encode()) == constraints.MAX_SOURCE_BYTES
    assert constraints.build("json", source, pair.tokenizer, pair.target.vocab_size).kind == "json"


# 11 KB, under the size cap: 300 patternProperties compiled for 35 s here (llguidance's budgets do not stop it)
SLOW_SCHEMA = json.dumps({"type": "object",
                          "patternProperties": {f"^k{i}[a-z]*$": {"type": "integer"} for i in range(300)}})


def test_a_slow_compilation_is_stopped_at_the_time_limit_and_the_next_one_runs(pair) -> None:
    constraints.build("regex", "[a-z]+", pair.tokenizer, pair.target.vocab_size)  # the worker is up
    workers = [w.proc for w in compile_worker._POOL if w.proc is not None]
    assert len(SLOW_SCHEMA.encode()) < constraints.MAX_SOURCE_BYTES and workers
    t0 = time.perf_counter()
    with pytest.raises(constraints.ConstraintError) as info:
        constraints.build("json", SLOW_SCHEMA, pair.tokenizer, pair.target.vocab_size, compile_limit_s=0.3)
    elapsed = time.perf_counter() - t0
    assert str(info.value).startswith("the json took longer than 0.3 s to compile (the time limit")
    assert "\n" not in str(info.value)
    assert elapsed < 10, elapsed  # the limit plus a kill, not the 35 s compile
    assert any(w.poll() is not None for w in workers)  # the worker doing the compile was killed: the work stopped
    assert constraints.build("regex", "[a-z]+", pair.tokenizer, pair.target.vocab_size).kind == "regex"  # a fresh one


def test_cli_slow_schema_gives_the_time_limit_line(tmp_path: Path, capsys) -> None:
    path = tmp_path / "schema.json"
    path.write_text(SLOW_SCHEMA)
    rc, line = _cli(GEN + ["--json-schema", str(path)], capsys)
    assert rc == 2 and f"took longer than {compile_worker.COMPILE_LIMIT_S:g} s to compile" in line


def _cli(argv: list[str], capsys) -> tuple[int, str]:
    return one_line_run(argv, capsys)


GEN = ["generate", "--prompt", "It is", "--max-new-tokens", "3", "--plain"]


def test_cli_json_schema_dev_zero_is_refused_by_size(capsys) -> None:
    rc, line = _cli(GEN + ["--json-schema", "/dev/zero"], capsys)
    assert rc == 2 and "/dev/zero" in line and "limit" in line


@pytest.mark.parametrize(("text", "message"), [(NESTED_LIST, "nested too deeply"),
                                               (NESTED_SCHEMA, "nested too deeply"),
                                               ("x" * (constraints.MAX_SOURCE_BYTES + 1), "over the limit")])
def test_cli_hostile_schema_files_give_one_line(tmp_path: Path, text: str, message: str, capsys) -> None:
    path = tmp_path / "schema.json"
    path.write_text(text)
    rc, line = _cli(GEN + ["--json-schema", str(path)], capsys)
    assert rc == 2 and message in line


def test_cli_lark_limit_names_the_limit(tmp_path: Path, capsys) -> None:
    path = tmp_path / "g.lark"
    path.write_text('start: "a"{100000}\n')
    argv = ["generate", "--prompt", "aaa", "--max-new-tokens", "3", "--plain", "--lark", str(path)]
    rc, line = _cli(argv + ["--constrain-prompt"], capsys)  # a prompt the grammar accepts: the limit is the cause
    assert rc == 2 and "limits" in line and "already violates" not in line


def test_cli_lone_surrogate_in_regex(capsys) -> None:
    rc, line = _cli(GEN + ["--regex", "a\udced"], capsys)
    assert rc == 2 and "lone surrogate" in line
