"""The "measure it here" probe on CPU, on a tiny shape: structure, sane numbers, and a correct stack.

Timings are not asserted (they belong in bench/); only that they are positive and finite, and that
the model's prediction, which is a formula, behaves as one.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from gpu_demo.measure.probe import (
    PROBE_SHAPES,
    ProbeShape,
    format_table,
    linear_maps,
    make_stack,
    probe,
    run_stack,
    run_to_end,
)
from gpu_demo.models import quant
from specdec_core.knee import knee_tokens

TINY = PROBE_SHAPES["tiny (d=64)"]


@pytest.fixture(scope="module")
def run():
    events = list(probe(TINY, device="cpu", max_tokens=16, budget_s=4.0))
    return events, events[-1].result


def test_events_progress_and_finish_with_a_result(run):
    events, res = run
    fractions = [e.fraction for e in events]
    assert all(0.0 <= f <= 1.0 for f in fractions)
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert all(e.result is None for e in events[:-1]) and res is not None
    assert all(e.message for e in events)


def test_result_structure_and_sane_numbers(run):
    _, res = run
    assert res.device.startswith("CPU") and res.dtype == "float32" and res.weight_bytes == 4.0
    assert res.tokens[:3] == [1, 2, 4] and res.tokens == [2**k for k in range(len(res.tokens))]
    assert max(res.tokens) <= 16
    n = len(res.tokens)
    assert len(res.measured_s) == len(res.model_s) == len(res.spread_s) == len(res.n_samples) == n
    assert min(res.n_samples) == max(res.n_samples) >= 3        # round-robin: every T timed equally often
    for m, (lo, hi), p in zip(res.measured_s, res.spread_s, res.model_s):
        assert 0 < lo <= m <= hi and math.isfinite(hi)
        assert 0 < p and math.isfinite(p)
    assert res.peak_flops > 1e8 and res.bandwidth > 1e8          # any real CPU beats 0.1 GFLOP/s, 0.1 GB/s
    assert np.all(np.diff(res.model_s) >= 0)                     # the model never gets faster with more tokens
    assert res.knee_model == pytest.approx(res.peak_flops * 4.0 / (2 * res.bandwidth))
    assert res.knee_measured > 0 and res.knee_reached == (res.knee_measured < max(res.tokens))
    assert res.n_weights == TINY.n_weights
    json.dumps(res.to_dict())                                   # JSON-ready
    assert "measured ms" in format_table(res)


def test_tiny_shape_counts():
    # per layer: QKV 64 x 96, O 64 x 64, gate+up 64 x 512, down 256 x 64; two layers
    assert TINY.n_weights == 2 * (64 * 96 + 64 * 64 + 64 * 512 + 256 * 64)
    assert TINY.act_elems_per_token == 2 * ((64 + 96) + (64 + 64) + (64 + 512) + (256 + 64))


def test_stack_matches_a_float64_numpy_reference():
    shape = ProbeShape("t", 16, 4, 24, 2)
    weights = make_stack(shape, torch.device("cpu"), torch.float64, seed=3)
    x = torch.randn(5, 16, dtype=torch.float64, generator=torch.Generator().manual_seed(1))   # (T, d)
    got = run_stack(x, weights, shape).numpy()
    ref = x.numpy().copy()
    w = [wt.numpy() for wt in weights]
    for layer in range(2):
        qkv_w, o_w, gu_w, down_w = w[4 * layer: 4 * layer + 4]
        qkv = ref @ qkv_w.T                                    # (T, d + 2 kv)
        ref = ref + qkv[:, :16] @ o_w.T
        gu = ref @ gu_w.T                                      # (T, 2 f)
        gate, up = gu[:, :24], gu[:, 24:]
        ref = ref + (gate / (1 + np.exp(-gate)) * up) @ down_w.T
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


def test_bad_arguments():
    with pytest.raises(ValueError, match="max_tokens"):
        run_to_end(probe(TINY, device="cpu", max_tokens=1))
    with pytest.raises(ValueError, match="budget_s"):
        run_to_end(probe(TINY, device="cpu", budget_s=0))
    with pytest.raises(ValueError, match="threads"):
        run_to_end(probe(TINY, device="cpu", threads=0))
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA"):
            run_to_end(probe(TINY, device="cuda"))


@pytest.mark.parametrize("fmt", ["fp16", "int8", "int4"])
def test_quantised_stack_computes_its_own_dequantised_weights(fmt):
    """The probe's fp16/int8/int4 stack is the float32 stack over the weights each kernel stands for."""
    shape = ProbeShape("t", 64, 16, 96, 1)
    weights = make_stack(shape, torch.device("cpu"), torch.float32, seed=3)
    x = torch.randn(4, 64, generator=torch.Generator().manual_seed(2))   # (T, d)
    with torch.inference_mode():
        got = run_stack(x, linear_maps(weights, fmt), shape)
        want = run_stack(x, [quant.reference_weight(fmt, w) for w in weights], shape)
        exact = run_stack(x, weights, shape)
    tol = 5e-2 if fmt in ("int8", "int4") else 1e-4  # int8 and int4 also round the activations per block
    assert float((got - want).norm() / want.norm()) < tol
    assert float((got - exact).norm() / exact.norm()) > 1e-6  # a different weight format, not float32 again


def test_probe_on_fp16_weights_models_two_bytes_per_weight():
    res = run_to_end(probe(TINY, device="cpu", max_tokens=8, budget_s=2.0, weights="fp16"))
    assert res.weights == "fp16" and res.weight_bytes == 2.0
    assert res.knee_model == pytest.approx(knee_tokens(res.peak_flops, res.bandwidth, 2.0))
    assert "fp16, 2 bytes each" in format_table(res)
    with pytest.raises(ValueError, match="weights must be one of"):
        run_to_end(probe(TINY, device="cpu", weights="int3"))


def test_the_probe_leaves_out_bf16_whose_amx_peak_its_model_does_not_measure():
    from gpu_demo.__main__ import build_parser
    from gpu_demo.measure.probe import PROBE_FORMATS
    from ui.roofline.probe import formats_here

    assert "bf16" not in PROBE_FORMATS and "fp16" in PROBE_FORMATS and "bf16" not in formats_here("cpu")
    with pytest.raises(ValueError, match="weights must be one of float32, fp16, int8, int4; got 'bf16'"):
        run_to_end(probe(TINY, device="cpu", weights="bf16"))
    with pytest.raises(SystemExit):
        build_parser().parse_args(["probe", "--weights", "bf16"])


def test_the_probe_restores_torchs_thread_count():
    """threads= applies while the probe runs; torch's process-wide count is back afterwards, also when a caller
    abandons the probe after its first event (the live page's Stop)."""
    before = torch.get_num_threads()
    other = 1 if before != 1 else 2
    seen = []
    gen = probe(TINY, device="cpu", max_tokens=4, budget_s=1.0, threads=other)
    next(gen)
    seen.append(torch.get_num_threads())
    gen.close()
    assert seen == [other] and torch.get_num_threads() == before
    run_to_end(probe(TINY, device="cpu", max_tokens=4, budget_s=1.0, threads=other))
    assert torch.get_num_threads() == before
