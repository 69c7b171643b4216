"""Training from stored token shards: teacher-forced features equal the sampled ones; acceptance at both rules."""

from __future__ import annotations

import torch

from gpu_demo.training.eagle import EagleTrainConfig, evaluate
from gpu_demo.training.eagle_scale import alpha_both_rules, features_for
from tests.eagle_support import tiny_head, tiny_target, trained_head


def test_teacher_forced_features_equal_the_sampled_ones() -> None:
    """Re-reading stored ids gives the features and log Z the sampling pass saw (float32, padded batches), in the
    order asked although the batches are formed shortest first."""
    target = tiny_target(48)
    _, _, samples = trained_head(target, 16, steps=1)
    rows = [(s.ids, s.prompt_len) for s in samples[:7]]
    lengths = [x.numel() for x, _ in rows]
    assert lengths != sorted(lengths)  # so the batches' order is not the order asked
    redo = features_for(target, rows, batch=3)
    for a, b in zip(samples[:7], redo, strict=True):
        assert torch.equal(a.ids, b.ids) and a.prompt_len == b.prompt_len
        assert torch.allclose(a.feats.float(), b.feats.float(), atol=2e-2)
        tail = slice(a.prompt_len - 1, None)
        assert torch.allclose(a.logz[tail], b.logz[tail], atol=1e-3)


def test_alpha_both_rules_matches_evaluate_and_training_raises_greedy_alpha() -> None:
    """Its T = 1 alpha is evaluate()'s; a trained head agrees with the target's argmax more than a random head."""
    target = tiny_target(48)
    head, _, samples = trained_head(target, 16, steps=120)
    val = samples[20:]
    cfg = EagleTrainConfig(batch=8, max_len=128, unroll=2)
    got = alpha_both_rules(head, target.tok_embeddings.weight, val, cfg)
    ref = evaluate(head, val, cfg)["val_alpha_t1_per_position"]
    assert [round(x, 3) for x in got["alpha_t1_per_position"]] == [round(x, 3) for x in ref]
    rand = alpha_both_rules(tiny_head(target, 16), target.tok_embeddings.weight, val, cfg)
    assert got["alpha_t0_per_position"][0] > rand["alpha_t0_per_position"][0] + 0.1
