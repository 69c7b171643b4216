"""The self-distillation token store: batched replies equal one-at-a-time replies, shards extend, uint16 round trip."""

from __future__ import annotations

import numpy as np
import torch

from gpu_demo.training.selfdistill import (
    HELD_OUT_FIRST,
    extend,
    generate_ids,
    load_shards,
    pool_index,
    prompt_pool,
    shard_path,
    shard_prompts,
)
from tests.eagle_support import tiny_target


def test_batched_greedy_replies_equal_single_replies() -> None:
    """Left padding changes nothing: each greedy reply in a batch equals that prompt decoded alone (float32)."""
    target = tiny_target(64)
    prompts = [[1, 2, 3], [5, 6, 7, 8, 9, 10], [11]]
    g = torch.Generator().manual_seed(0)
    batched = generate_ids(target, prompts, 12, stop=-1, greedy=True, generator=g)
    for p, (ids, plen) in zip(prompts, batched):
        alone, _ = generate_ids(target, [p], 12, stop=-1, greedy=True, generator=g)[0]
        assert ids.dtype == np.uint16 and plen == len(p)
        assert ids.tolist() == alone.tolist()


def test_shards_extend_instead_of_restarting(tmp_path) -> None:
    """A second run over more shards keeps the first run's files and writes only the new ones, reproducibly."""
    target = tiny_target(64)

    def enc(text: str) -> list[int]:
        return [ord(c) % 64 for c in text[:8]]

    extend(target, enc, tmp_path, "t1", range(2), 4, 3, 6, stop=-1, log=lambda m: None)
    first = shard_path(tmp_path, "t1", 0).read_bytes()
    out = extend(target, enc, tmp_path, "t1", range(3), 4, 3, 6, stop=-1, log=lambda m: None)
    assert out["shards_written"] == 1 and shard_path(tmp_path, "t1", 0).read_bytes() == first
    again = tmp_path / "again"
    extend(target, enc, again, "t1", range(3), 4, 3, 6, stop=-1, log=lambda m: None)
    a, b = load_shards(tmp_path), load_shards(again)
    assert len(a) == 12 and [x[0].tolist() for x in a] == [x[0].tolist() for x in b]


def test_prompt_pool_is_diverse_and_shards_do_not_repeat() -> None:
    """The pool holds code prompts; consecutive shards take disjoint pool prompts."""
    pool = prompt_pool()
    assert any("Python function" in p for p in pool) and len(set(pool)) == len(pool)
    a, b = shard_prompts(0, 40, pool=pool), shard_prompts(1, 40, pool=pool)
    assert not set(a[:34]) & set(b[:34])
    held = {pool_index(HELD_OUT_FIRST + k, 40, i, len(pool)) for k in range(3) for i in range(34)}
    trained = {pool_index(k, 40, i, len(pool)) for k in range(200) for i in range(34)}  # wraps the pool
    assert held and trained and not held & trained


def test_open_pool_shards_hold_open_questions_and_keep_their_held_out_items_apart() -> None:
    """Open shards draw only open questions; training and held-out open shards never share one; none names a bench
    prompt's subject; the templated shards' prompts are what they were before the open pool existed."""
    from gpu_demo.training.eagle_data import BENCH_CHAT_PROMPTS
    from gpu_demo.training.open_prompts import BENCH_WORDS, open_pool
    from gpu_demo.training.selfdistill import OPEN_FIRST, OPEN_HELD_OUT_FIRST, pool_slot

    opens, templated = open_pool(), prompt_pool()
    assert len(opens) >= 600 and len(set(opens)) == len(opens) and not set(opens) & set(templated)
    assert not [p for p in opens if any(w in p.lower() for w in BENCH_WORDS)]
    assert not set(opens) & set(BENCH_CHAT_PROMPTS)
    assert all(w in " ".join(BENCH_CHAT_PROMPTS).lower() for w in BENCH_WORDS)  # the list names bench subjects
    assert set(shard_prompts(OPEN_FIRST, 64)) <= set(opens)
    assert set(shard_prompts(OPEN_HELD_OUT_FIRST, 64)) <= set(opens)
    n, m = len(templated), len(opens)
    held = {pool_slot(OPEN_HELD_OUT_FIRST + k, 64, i, n, m) for k in range(3) for i in range(64)}
    trained = {pool_slot(OPEN_FIRST + k, 64, i, n, m) for k in range(40) for i in range(64)}  # wraps the pool
    assert {s[0] for s in held | trained} == {"open"} and held and not held & trained
    assert pool_slot(3, 64, 5, n, m) == ("templated", pool_index(3, 64, 5, n))
    assert shard_prompts(3, 64, pool=templated)[0] == templated[pool_index(3, 64, 0, n)]


def test_held_out_shard_lists_parse_and_split_by_pool() -> None:
    """bench/eagle_scaling.py: '90000,95000' and ranges parse; held-out rows split into the two pools' sets."""
    import argparse
    import importlib.util
    from pathlib import Path

    import pytest

    path = Path(__file__).resolve().parents[1] / "bench" / "eagle_scaling.py"
    spec = importlib.util.spec_from_file_location("eagle_scaling", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.shard_range("90000,95000") == [90000, 95000] and mod.shard_range("3-5,4") == [3, 4, 5]
    with pytest.raises(argparse.ArgumentTypeError):
        mod.shard_range("90000;95000")
    rows = [(None, 0, "t1", 90000), (None, 0, "t1", 95000), (None, 0, "t1", 3)]
    sets = mod.held_out_sets(rows, [90000, 95000])
    assert [r[3] for r in sets["held_out"]] == [90000] and [r[3] for r in sets["held_out_open"]] == [95000]
    assert list(mod.held_out_sets(rows, [90000])) == ["held_out"]
    assert mod.pool_items([0], 64) and not mod.pool_items([30000], 64) & mod.pool_items([95000], 64)
