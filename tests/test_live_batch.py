"""Batch view helpers on CPU (the page shows the view on CUDA only; the measuring code is device-agnostic)."""

from __future__ import annotations

import pytest
import torch

from gpu_demo.measure import batch
from gpu_demo.models.char import CharConfig, CharTransformer
from gpu_demo.tree_decode import verify_mask
from specdec_core.roofline import HARDWARE
from specdec_core.trees import branching_tree, chain


def test_measure_v_returns_positive_ratios_and_leaves_an_empty_cache():
    torch.manual_seed(0)
    model = CharTransformer(CharConfig(vocab_size=20, n_layer=1, n_head=2, d_model=32, max_seq_len=96)).eval()
    rows = batch.measure_v(model, 3, batches=(1, 4), context=16, repeats=2)
    assert [r[0] for r in rows] == [1, 4]
    for _, t1, tv, v in rows:
        assert t1 > 0 and tv > 0 and v == tv / t1
    assert model.cache_len == 0


class _Recording(CharTransformer):
    """Records the (positions, tree_mask) of every multi-token forward."""

    def forward(self, idx, positions=None, tree_mask=None):
        if idx.shape[1] > 1 and self.cache_len > 0:
            self.seen.append((positions, tree_mask))
        return super().forward(idx, positions, tree_mask)


def test_measure_v_of_a_tree_times_the_tree_engines_verify_pass():
    """With a tree, the timed pass is the one tree_decode makes: positions context + depth and verify_mask."""
    model = _Recording(CharConfig(vocab_size=20, n_layer=1, n_head=2, d_model=32, max_seq_len=96)).eval()
    model.seen = []
    tree = branching_tree([2, 1])  # 4 nodes at depths 1, 1, 2, 2
    (b, t1, tv, v), = batch.measure_v(model, tree.n_nodes, batches=(1,), context=16, repeats=2, tree=tree)
    assert b == 1 and v == tv / t1 and model.seen
    for positions, mask in model.seen:
        assert positions.tolist() == [16, 17, 17, 18, 18]
        assert torch.equal(mask, verify_mask(tree))
    model.seen = []
    batch.measure_v(model, 4, batches=(1,), context=16, repeats=2)  # a chain: causal, no mask
    assert model.seen and all(p is None and m is None for p, m in model.seen)
    model.seen = []
    batch.measure_v(model, 2, batches=(1,), context=16, repeats=2, tree=chain(2))  # the engine verifies it causally
    assert model.seen and all(p is None and m is None for p, m in model.seen)
    with pytest.raises(ValueError, match="4 nodes"):
        batch.measure_v(model, 3, batches=(1,), context=16, repeats=1, tree=tree)


def test_gpu_names_map_to_roofline_presets():
    assert batch.gpu_preset("NVIDIA H200") is HARDWARE["H200 SXM"]
    assert batch.gpu_preset("NVIDIA H100 80GB HBM3") is HARDWARE["H100 SXM"]
    assert batch.gpu_preset("NVIDIA H100 PCIe") is HARDWARE["H100 PCIe"]
    assert batch.gpu_preset("NVIDIA GeForce RTX 4090") is None


def test_model_v_of_the_small_target_turns_compute_bound_past_the_ridge():
    """The linear layers' intensity is the tokens per pass, whatever the model's size: even a 3.3M target turns
    compute-bound past B x (gamma + 1) = 206 tokens on an H200 (the old single roofline hid it under KV reads)."""
    model = CharTransformer(CharConfig(vocab_size=81, n_layer=4, n_head=4, d_model=256, max_seq_len=512))
    shape = batch.target_shape(model, None)
    assert shape.params == model.num_params() and shape.layers == 4 and shape.hidden == 256
    v = batch.model_v(shape, HARDWARE["H200 SXM"], 4, [1, 16, 256])
    assert 1.0 <= v[0] <= v[1] < 1.1 and v[2] > 1.3
    assert v[0] == pytest.approx(1.0, abs=0.01)  # batch 1: the verify pass costs one decode step
