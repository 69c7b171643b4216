"""Batch view helpers on CPU (the page shows the view on CUDA only; the measuring code is device-agnostic)."""

from __future__ import annotations

import pytest
import torch

from gpu_demo.measure import batch
from gpu_demo.models.char import CharConfig, CharTransformer
from specdec_core.roofline import HARDWARE


def test_measure_v_returns_positive_ratios_and_leaves_an_empty_cache():
    torch.manual_seed(0)
    model = CharTransformer(CharConfig(vocab_size=20, n_layer=1, n_head=2, d_model=32, max_seq_len=96)).eval()
    rows = batch.measure_v(model, 3, batches=(1, 4), context=16, repeats=2)
    assert [r[0] for r in rows] == [1, 4]
    for _, t1, tv, v in rows:
        assert t1 > 0 and tv > 0 and v == tv / t1
    assert model.cache_len == 0


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
