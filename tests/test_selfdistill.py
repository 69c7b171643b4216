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
