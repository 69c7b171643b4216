"""AppTest: the Engines page renders, runs a short workload on the embedded llama.cpp, and shows its result."""

from __future__ import annotations

import pytest

pytest.importorskip("xllamacpp")


def _run(at):
    btn = next(b for b in at.button if b.label == "Run the workload")
    btn.click().run(timeout=240)
    return at


def test_page_runs_a_workload_and_shows_counters_and_equivalents(app_test):
    at = app_test("views/engines.py", kind="same model as draft", gamma="3", prompts="1", tokens="16",
                  repeats="1")
    assert not at.exception and at.title[0].value.startswith("Speculative decoding in a real engine")
    _run(at)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    table = at.dataframe[0].value
    values = dict(zip(table["quantity"], table["value"]))
    assert values["acceptance rate"] == "1.000"                  # T = 0, the target as its own draft
    assert values["greedy text identical on/off"] == "1 of 1"
    assert "measured speedup" in values and "predicted (c = 1, v = 1)" in values
    codes = " ".join(c.value for c in at.code)
    assert "--spec-draft-n-max 3" in codes and '"num_speculative_tokens": 3' in codes
    assert "--speculative-num-steps 3" in codes


def test_own_server_is_off_without_the_allow_list(app_test, monkeypatch):
    monkeypatch.delenv("SPECDEC_ENGINE_URLS", raising=False)
    at = app_test("views/engines.py", url="http://127.0.0.1:9")     # a query string cannot turn it on
    assert not at.exception
    assert any("off on this server" in i.value for i in at.info)
    assert not [b for b in at.button if b.label == "Run the workload on that server"]
