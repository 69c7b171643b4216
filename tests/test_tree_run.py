"""The measured tree run (specdec_core.tree_run) and the trees page's note on it: every number from the file."""

from __future__ import annotations

import json

import pytest

from specdec_core import tree_run
from specdec_core.dynamic_tree import DynamicTree

PAGE = "views/trees.py"


def test_the_committed_run_reads_back_with_its_provenance() -> None:
    raw = json.loads(tree_run.DATA.read_text())
    assert raw["provenance"]["command"].startswith("bench/eagle_trees.py") and raw["provenance"]["commit"]
    rows = tree_run.rows()
    assert [r.config for r in rows] == [r["config"] for r in raw["rows"] if r["config"] != "ar"]
    assert tree_run.best().speedup == max(r["speedup"]["median"] for r in raw["rows"] if r["config"] != "ar")
    v = tree_run.cpu_v()
    assert v[0] == 1.0 and v.size == 17 and v[8] > v[1] > 1.0  # this CPU: a longer pass costs more
    tokens, v_gpu = tree_run.h200_v_batch1()
    assert tokens.max() == 64 and v_gpu.max() < 1.1  # the H200 at batch 1: flat to 64 tokens


def test_the_acceptance_map_reads_back_and_serves_a_dynamic_tree() -> None:
    """The head's measured map: a top child is kept less often than a sampled draft at T = 1, and the map says why
    (a+(q) below q); it is a valid DynamicTree map for both rules, with expectations that fall with the rank."""
    raw = json.loads(tree_run.ACCEPT.read_text())
    assert raw["provenance"]["command"].startswith("bench/eagle_calibration.py") and raw["provenance"]["commit"]
    first = tree_run.top_child_acceptance(1)
    assert first["top1_t1"] < first["top1_top2_t1"] < first["chain_sampled_t1"]  # T = 1: sampling beats top-2
    assert first["top1_greedy"] > first["top1_t1"]
    for rule in tree_run.RULES:
        spec = DynamicTree(accept=tree_run.accept_map(rule), expect=tree_run.expected_by_rank(rule))
        e = spec.expect
        assert all(a >= b for a, b in zip(e, e[1:])) and 0 < sum(e) <= 1
    t1 = DynamicTree(accept=tree_run.accept_map("t1"))
    assert float(t1.edge(0.5)) < 0.45  # overconfident at T = 1: a child of q = 0.5 is kept well under half the time
    with pytest.raises(ValueError, match="rules"):
        tree_run.accept_map("t0.7")


def test_the_trees_page_says_why_no_tree_pays_here_with_the_files_numbers(app_test) -> None:
    at = app_test(PAGE, section="tree")
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    v, top = tree_run.cpu_v(), tree_run.best()
    _, v_gpu = tree_run.h200_v_batch1()
    assert f"v(2) = {v[1]:.2f}, v(9) = {v[8]:.2f}" in text
    assert tree_run.a_tree_pays() == (not top.config.startswith("chain"))
    verdict = "here a tree pays" if tree_run.a_tree_pays() else "here no tree pays"
    assert f"the best configuration is {top.config} at {top.speedup:.2f}x: {verdict}" in text
    q_lo, q_hi = tree_run.dynamic_draft_ms("draft-q")
    m_lo, m_hi = tree_run.dynamic_draft_ms("measured")
    assert f"drafts {q_lo:.1f}-{q_hi:.1f} ms a round" in text
    m_ms = f"{m_lo:.1f}" if f"{m_lo:.1f}" == f"{m_hi:.1f}" else f"{m_lo:.1f}-{m_hi:.1f}"  # this run: 5.0 ms each
    assert f"for {m_ms} ms" in text and f"against {top.draft_ms:.1f} ms for {top.config}" in text
    assert "5.0-5.0" not in text
    assert m_hi < q_lo  # the measured map grows fewer passes than the draft's own q, on every configuration
    kept = tree_run.top_child_acceptance(1)
    assert (f"{kept['top1_t1']:.2f} for the head's top child and {kept['top1_top2_t1']:.2f} for its top two, where a "
            f"draft sampled from q is kept with 1 - TV(p, q) = {kept['chain_sampled_t1']:.2f}") in text
    assert f"q = 0.5 is kept {tree_run.kept_at(0.5):.2f} of the time" in text
    assert f"stays between {v_gpu.min():.2f} and {v_gpu.max():.2f}" in text
    assert any(tree_run.DATA.name in c.value for c in at.caption)
    assert any(tree_run.ACCEPT.name in c.value for c in at.caption)
    head = tree_run.load()["provenance"]["head"]  # the run and the map are of one head, and both lines name it
    assert head == tree_run.load(tree_run.ACCEPT)["provenance"]["head"]
    assert sum(head in c.value for c in at.caption) == 2
