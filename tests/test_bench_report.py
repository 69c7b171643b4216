"""`gpu_demo.measure.bench`: the report quotes medians with their spread over repeats, and vLLM's quantities.

Runs the real bench on the built-in pair (2 gammas, 3 repeats, 16 tokens: a couple of seconds), then checks
each statistic against the report's own per-repeat rows and each vLLM quantity against its definition.
No timing is asserted.
"""

from __future__ import annotations

import json
import math
import platform
import statistics

import pytest
import torch

from gpu_demo.measure.bench import SPREAD_KEYS, format_table, measure
from gpu_demo.pairs import load_pair

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def report() -> dict:
    pair = load_pair("builtin", "cpu")
    return measure(pair, ["It is a truth universally"], [1, 3], max_new_tokens=16, repeats=3, progress=False)


def test_rows_quote_the_median_and_range_of_the_repeats(report):
    assert report["repeats"] == 3 and report["batch"] == 1
    for row in report["rows"]:
        per = report["per_repeat"][str(row["gamma"])]
        assert len(per) == 3
        for key in SPREAD_KEYS:
            xs = [r[key] for r in per]
            sp = row["spread"][key]
            assert sp["median"] == pytest.approx(statistics.median(xs)) == pytest.approx(row[key])
            assert (sp["min"], sp["max"], sp["n"]) == (pytest.approx(min(xs)), pytest.approx(max(xs)), 3)
        f = row["gap_factors"]  # measured / predicted = accept x spec_round x base_step, per repeat
        # positive and finite, never compared with 1: c and v are timed apart from the rounds, so on a loaded
        # machine the modelled round can outlast the measured one (the CI run saw 1.017)
        assert all(0 < f[k]["min"] <= f[k]["max"] < math.inf for k in ("accept", "spec_round", "base_step"))
        assert row["rounds_min"] >= 1


def test_rows_carry_vllm_quantities_by_their_definitions(report):
    for row in report["rows"]:
        v = row["vllm"]
        g = row["gamma"]
        assert len(v["accepted_per_position"]) == g == len(v["per_position_rates"])
        assert v["acceptance_rate"] == pytest.approx(v["num_accepted_tokens"] / v["num_draft_tokens"])
        assert v["mean_acceptance_length"] == pytest.approx(1 + v["num_accepted_tokens"] / v["num_drafts"])
        assert v["per_position_rates"] == pytest.approx([a / v["num_drafts"] for a in v["accepted_per_position"]])
        assert sum(v["accepted_per_position"]) == v["num_accepted_tokens"]
        r = v["per_position_rates"]
        assert all(a >= b for a, b in zip(r, r[1:]))  # unconditional rates cannot increase
        cond = [x for x in v["conditional_alphas"] if x is not None]
        assert math.prod(cond) == pytest.approx(r[len(cond) - 1])  # r_j = alpha_1 ... alpha_j
    json.dumps(report, default=str)  # the CLI writes it as JSON


def test_table_says_median_min_max_batch_one_and_vllm(report):
    table = format_table(report)
    assert "batch 1" in table and "median (min-max) of 3 repeats" in table
    assert "acc.rate" in table and "mean len" in table and "<- best" in table
    row = report["rows"][0]
    sp = row["spread"]["measured_speedup"]
    assert f"{sp['median']:.2f} ({sp['min']:.2f}-{sp['max']:.2f})" in table


def test_repeats_out_of_range_are_refused_before_any_work():
    pair = load_pair("builtin", "cpu")
    with pytest.raises(ValueError, match=r"repeats must be an integer in \[1, 100\]"):
        measure(pair, ["It is"], [1], max_new_tokens=4, repeats=0, progress=False)


def test_report_names_the_cpu_and_the_isa_its_timings_ran_on(report):
    env = report["environment"]
    assert env["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
    assert env["cpu_capability"] in {"DEFAULT", "NO AVX", "AVX2", "AVX512", "ZVECTOR", "VSX", "SVE256"}
    try:
        names = [ln.partition(":")[2].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")]
    except OSError:
        names = []
    assert env["cpu"] == (names[0] if names else platform.processor() or platform.machine())
