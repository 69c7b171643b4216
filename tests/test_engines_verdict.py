"""The Engines page's prediction counts the target passes that drafted nothing, and the result ends in a verdict.

A stand-in result (no llama.cpp needed): 100 target passes of which 25 drafted (gamma 4, lookup c = 0, v = 1),
so 75 % of the passes were plain steps yielding one token each.
"""

from __future__ import annotations

import pytest

from engines.client import Completion
from engines.workload import SideRun, Workload, WorkloadResult, measured_for
from specdec_core import algebra
from specdec_core.pays import speedup_with_empty_rounds
from specdec_core.repeats import summarise_repeats
from specdec_core.vllm_counts import SpecDecodeCounts


def _result() -> WorkloadResult:
    counts = SpecDecodeCounts(25, 100, 40, (15, 12, 8, 5))   # drafts, drafted, accepted, per position
    spec = SideRun((Completion("a", 64, 1.0), Completion("b", 64, 1.0)), counts, passes=100)
    base = SideRun((Completion("a", 64, 0.96), Completion("b", 64, 0.96)), None, passes=128)
    work = Workload(2, 64, 0.0, 1)
    summary = summarise_repeats([measured_for(spec, base, 4, 0.0, 1.0)])
    return WorkloadResult("llamacpp", work, 4, 0.0, 1.0, (spec,), (base,), summary, counts, (2, 2),
                          {"kind": "ngram", "engine": "llama.cpp (stand-in)"})


def test_prediction_counts_rounds_that_drafted_nothing() -> None:
    from ui.engines.panel import prediction_and_verdict

    r = _result()
    a = r.pooled.conditional_alphas()
    old = algebra.speedup_positional(a, 0.0, 1.0)
    new = speedup_with_empty_rounds(a, 0.0, 1.0, 0.75)
    assert r.summary.predicted.median == pytest.approx(old)        # the table's number ignores the empty passes
    assert new < old
    head, verdict = prediction_and_verdict(r)
    assert f"Predicted {new:.2f}x" in head and "75 of 100 passes (75%)" in head
    assert verdict.startswith("**Verdict.** n-gram lookup (ngram-simple) does not pay here")   # measured 0.96x


def test_the_page_shows_the_prediction_and_a_verdict(app_test, monkeypatch) -> None:
    from ui.engines import panel

    monkeypatch.setattr(panel, "run_embedded", lambda mode, work: _result())
    at = app_test("views/engines.py", kind="n-gram lookup (ngram-simple)", gamma="4")
    next(b for b in at.button if b.label == "Run the workload").click().run()
    assert not at.exception, [e.value for e in at.exception]
    text = " ".join(m.value for m in at.markdown)
    assert "drafted nothing" in text and "**Verdict.**" in text and "does not pay here" in text
