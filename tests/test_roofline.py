"""The roofline core: the seed's numbers, the presets, hand-computed step times, and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specdec_core import roofline, steptime
from specdec_core.algebra import expected_tokens

H100 = roofline.HARDWARE["H100 SXM"]
A100 = roofline.HARDWARE["A100 SXM 80GB"]
L8B = steptime.SHAPES["Llama-3.1-8B"]
L70B = steptime.SHAPES["Llama-3.1-70B"]
L1B = steptime.SHAPES["Llama-3.2-1B (draft)"]


# ------------------------------------------------------------------ the seed ----
def test_h100_ridge_is_295():
    assert roofline.ridge(H100, "bf16") == pytest.approx(989 / 3.35)
    assert round(roofline.ridge(H100, "bf16")) == 295
    assert round(roofline.ridge(H100, "fp8")) == 591            # 1979 / 3.35
    assert roofline.ridge(H100, "w8a16") == roofline.ridge(H100, "bf16")


@pytest.mark.parametrize("mode, expected", [("bf16", 74), ("fp8", 74), ("w8a16", 37)])
def test_seed_crossovers_at_gamma_3(mode, expected):
    b = roofline.crossover_batch(H100, 3, mode)
    assert round(b) == expected
    # the crossover is exactly where verify intensity meets the ridge
    assert roofline.verify_intensity(b, 3, mode) == pytest.approx(roofline.ridge(H100, mode))


def test_crossover_matches_seed_arithmetic():
    assert roofline.crossover_batch(H100, 3, "bf16") == pytest.approx(989 / 3.35 / 4)
    assert roofline.crossover_batch(H100, 3, "fp8") == pytest.approx(1979 / 3.35 / 8)
    assert roofline.crossover_batch(H100, 3, "w8a16") == pytest.approx(989 / 3.35 / 8)
    assert roofline.crossover_batch(H100, 0, "bf16") == pytest.approx(989 / 3.35)      # plain decode


def test_intensity_per_mode():
    b = np.array([1, 16, 74])
    np.testing.assert_allclose(roofline.verify_intensity(b, 3, "bf16"), b * 4)          # B (gamma + 1)
    np.testing.assert_allclose(roofline.verify_intensity(b, 3, "fp8"), 2 * b * 4)       # 2 B (gamma + 1)
    np.testing.assert_allclose(roofline.verify_intensity(b, 3, "w8a16"), 2 * b * 4)
    assert roofline.decode_intensity(16, "bf16") == 16


def test_attainable_is_min_of_peak_and_bandwidth_line():
    i = np.array([1.0, 295.0, 1000.0])
    np.testing.assert_allclose(roofline.attainable_flops(H100, i), [3.35e12, 295 * 3.35e12, 989e12])


# ------------------------------------------------------------------ presets ----
REFERENCE = {  # REFERENCE.md: dense BF16, dense FP8, TB/s
    "H100 SXM": (989, 1979, 3.35), "H100 PCIe": (756, 1513, 2.0), "H200 SXM": (989, 1979, 4.8),
    "A100 SXM 80GB": (312, None, 2.04), "B200": (2250, 4500, 8.0), "MI300X": (1307, 2615, 5.3),
    "L4": (121, 242, 0.30),
}


@pytest.mark.parametrize("name", list(REFERENCE))
def test_presets_are_dense_and_sourced(name):
    hw = roofline.HARDWARE[name]
    bf16, fp8, bw = REFERENCE[name]
    assert hw.peak_tflops["bf16"] == bf16
    assert hw.peak_tflops.get("fp8") == fp8
    assert hw.bandwidth_tbs == bw
    assert len(hw.source) > 40 and "dense" in hw.source
    assert hw.memory_gb is not None and f"{hw.memory_gb:,.0f} GB" in hw.source.replace("1,440 GB", "")
    if fp8 is not None:                       # FP8 dense is twice BF16 dense (within rounding)
        assert fp8 / bf16 == pytest.approx(2.0, rel=0.01)


def test_presets_cover_reference():
    assert set(roofline.HARDWARE) == set(REFERENCE)


# ------------------------------------------------------------------ bad input ----
def test_fp8_on_a100_is_not_supported():
    assert not A100.supports("fp8") and A100.supports("w8a16")
    with pytest.raises(ValueError, match="not supported by this hardware"):
        roofline.crossover_batch(A100, 3, "fp8")
    with pytest.raises(ValueError, match="not supported by this hardware"):
        roofline.ridge(A100, "fp8")
    with pytest.raises(ValueError, match="not supported by this hardware"):
        steptime.step_time(L8B, A100, "fp8", 1, 1, 0)
    assert round(roofline.crossover_batch(A100, 3, "w8a16")) == round(312 / 2.04 / 8)


@pytest.mark.parametrize("bf16, bw", [(0, 3.35), (-989, 3.35), (989, 0), (989, -1), (math.nan, 3.35),
                                      (989, math.inf)])
def test_custom_hardware_rejects_non_positive(bf16, bw):
    with pytest.raises(ValueError, match="> 0"):
        roofline.custom_hardware(bf16, bw)


@pytest.mark.parametrize("bf16, bw", [(1e308, 3.35), (989, 1e308), (1e-300, 3.35), (989, 1e-300)])
def test_custom_hardware_rejects_absurd_magnitudes(bf16, bw):
    # 1e308 TFLOP/s is finite but overflows to inf in FLOP/s, and the ridge became inf/inf = nan on the page.
    with pytest.raises(ValueError, match="from 1e-06 to"):
        roofline.custom_hardware(bf16, bw)
    lo, hi = roofline.PEAK_RANGE_TFLOPS[0], roofline.BANDWIDTH_RANGE_TBS[1]
    assert math.isfinite(roofline.ridge(roofline.custom_hardware(lo, hi), "bf16"))   # the range ends are accepted


def test_custom_hardware_fp8_optional():
    hw = roofline.custom_hardware(989, 3.35)
    assert not hw.supports("fp8")
    assert roofline.custom_hardware(989, 3.35, 0).peak_tflops == {"bf16": 989}
    assert roofline.crossover_batch(roofline.custom_hardware(989, 3.35, 1979), 3, "fp8") == pytest.approx(
        roofline.crossover_batch(H100, 3, "fp8"))
    with pytest.raises(ValueError, match="> 0"):
        roofline.custom_hardware(989, 3.35, -5)


def test_bad_mode_gamma_batch():
    with pytest.raises(ValueError, match="bf16, fp8, w8a16"):
        roofline.crossover_batch(H100, 3, "int4")
    with pytest.raises(ValueError, match="integer >= 0"):
        roofline.crossover_batch(H100, -1)
    with pytest.raises(ValueError, match="integer >= 0"):
        roofline.crossover_batch(H100, 2.5)
    with pytest.raises(ValueError, match="batch"):
        roofline.verify_intensity(0, 3)
    with pytest.raises(ValueError, match="batch must be >= 1"):
        steptime.step_time(L8B, H100, "bf16", 0, 1, 0)
    with pytest.raises(ValueError, match="tokens"):
        steptime.step_time(L8B, H100, "bf16", 1, 0, 0)


def test_context_longer_than_preset_allows():
    with pytest.raises(ValueError, match="longer than Llama-3.1-8B allows: 0 to 131,072"):
        steptime.step_time(L8B, H100, "bf16", 1, 1, 131_073)
    with pytest.raises(ValueError, match="integer >= 0"):
        steptime.step_time(L8B, H100, "bf16", 1, 1, -1)
    with pytest.raises(ValueError, match="longer than"):
        steptime.spec_curve(L8B, L1B, H100, "bf16", 3, 0.8, 200_000, 1)


def test_bad_shape():
    with pytest.raises(ValueError, match="layers must be > 0"):
        steptime.DecoderShape("bad", 1e9, 0, 4096, 8, 128, 8192)


# ------------------------------------------------------------ hand-computed ----
P_LIN_8B = 8_030_261_248 - 128_256 * 4096            # 7,504,924,672: all weights but the input embedding table
P_LIN_70B = 70_553_706_496 - 128_256 * 8192          # 69,503,033,344


def test_step_time_8b_batch1_memory_bound():
    """Llama-3.1-8B, H100 SXM, BF16, B = 1, one token, 4,096 cached tokens: every kernel memory-bound."""
    weights = P_LIN_8B * 2                            # 15,009,849,344 bytes (the embedding table is a gather)
    kv = 4096 * (2 * 32 * 8 * 128 * 2)                # 131,072 bytes per token -> 536,870,912
    act = 1 * 32 * 4 * 4096 * 2                       # 1,048,576
    st = steptime.step_time(L8B, H100, "bf16", 1, 1, 4096)
    assert float(st.linear.memory_s) == pytest.approx(weights / 3.35e12)
    assert float(st.attention.memory_s) == pytest.approx(kv / 3.35e12)
    assert float(st.activations.memory_s) == pytest.approx(act / 3.35e12)
    assert float(st.total_s) == pytest.approx((weights + kv + act) / 3.35e12)
    assert float(st.total_s) * 1e3 == pytest.approx(4.641125, rel=1e-6)
    assert float(st.linear.compute_s) == pytest.approx(2 * P_LIN_8B / 989e12)
    assert float(st.attention.compute_s) == pytest.approx(4 * 32 * 4096 * 4096 / 989e12)
    assert not any(bool(k.compute_bound) for k in st.kernels)


def test_step_time_8b_large_batch_linear_compute_bound_attention_not():
    """Llama-3.1-8B, H100 SXM, BF16, B = 256 verifying gamma = 3 (T = 4), 128 cached tokens.

    The linear layers are compute-bound (1,024 tokens > ridge 295) while the attention stays memory-bound
    (intensity 2 x 4 x 4 / 2 = 16 FLOP/byte); the pass pays both, one after the other.
    """
    st = steptime.step_time(L8B, H100, "bf16", 256, 4, 128)
    linear = 2 * P_LIN_8B * 1024 / 989e12              # 15.541 ms of compute
    attn = 256 * 128 * 131_072 / 3.35e12               # 1.282 ms of KV reads
    act = 1024 * 32 * 4 * 4096 * 2 / 3.35e12           # 0.321 ms
    assert float(st.total_s) == pytest.approx(linear + attn + act)
    assert float(st.total_s) * 1e3 == pytest.approx(17.144, abs=1e-3)
    assert bool(st.linear.compute_bound) and not bool(st.attention.compute_bound)
    # one roofline for the whole pass would hide the KV reads under the linear compute
    assert float(st.one_roofline_s) == pytest.approx(linear + 1024 * 4 * 32 * 4096 * 128 / 989e12)
    assert float(st.one_roofline_s) < float(st.total_s)


def test_step_time_70b_fp8_kv_matters():
    """Llama-3.1-70B, H100 SXM, FP8, B = 64, T = 4, 1,024 cached tokens: memory-bound through the KV cache."""
    st = steptime.step_time(L70B, H100, "fp8", 64, 4, 1024)
    weights = P_LIN_70B * 1
    kv = 64 * 1024 * (2 * 80 * 8 * 128 * 2)            # 21,474,836,480
    act = 256 * 80 * 4 * 8192 * 2                      # 1,342,177,280
    assert float(st.memory_s) * 1e3 == pytest.approx((weights + kv + act) / 3.35e9)
    assert float(st.total_s) * 1e3 == pytest.approx(27.558, abs=1e-3)
    assert float(st.linear.memory_s) * 1e3 == pytest.approx(20.747, abs=1e-3)
    assert float(st.attention.memory_s) * 1e3 == pytest.approx(6.410, abs=1e-3)
    compute = 2 * P_LIN_70B * 256 / 1979e12 + 256 * 4 * 80 * 8192 * 1024 / 989e12
    assert float(st.compute_s) == pytest.approx(compute)
    assert not any(bool(k.compute_bound) for k in st.kernels)
    # an FP8 KV cache halves the KV bytes and runs QK^T and PV at the FP8 peak
    f8 = steptime.step_time(L70B, H100, "fp8", 64, 4, 1024, kv="fp8")
    assert float(f8.attention.memory_s) == pytest.approx(kv / 2 / 3.35e12)
    assert float(f8.attention.compute_s) == pytest.approx(256 * 4 * 80 * 8192 * 1024 / 1979e12)
    assert float(f8.total_s) * 1e3 == pytest.approx(24.353, abs=1e-3)


def test_shape_params_match_their_shape():
    """Llama-3.1-8B parameters recounted from the architecture (vocab 128256, FFN 14336, untied)."""
    d, kv, f, v, n = 4096, 1024, 14336, 128256, 32
    per_layer = d * d * 2 + 2 * d * kv + 3 * d * f + 2 * d
    assert L8B.params == n * per_layer + 2 * v * d + d
    assert L8B.kv_bytes_per_token == 131_072


# ------------------------------------------------------------ c(B), v(B), speedup ----
def test_batch1_c_is_linear_params_ratio_and_v_is_one():
    cur = steptime.spec_curve(L8B, L1B, H100, "bf16", 3, 0.8, 0, 1)
    assert float(cur.v) == pytest.approx(1.0, abs=2e-3)
    # the 1B's tied head counts once; the 8B's untied input table is a gather, not a weight read per step
    assert L1B.linear_params == L1B.params and L8B.linear_params == P_LIN_8B
    assert float(cur.c) == pytest.approx(L1B.params / P_LIN_8B, rel=0.01)
    assert float(cur.speedup) == pytest.approx(float(expected_tokens(0.8, 3)) / (3 * float(cur.c) + float(cur.v)))


def test_weight_dominated_verify_turns_compute_bound_near_crossover():
    """At context 0 the verify pass stays at v ~ 1 well below the crossover and grows above it."""
    b = np.array([1, 16, 48, 150, 300])
    cur = steptime.spec_curve(L8B, L1B, H100, "bf16", 3, 0.8, 0, b)
    assert np.all(cur.v[:3] < 1.02)
    assert cur.v[3] > 1.5 and cur.v[4] > 2.5
    assert np.all(np.diff(cur.speedup) < 0)


def test_speedup_crossing_is_a_root_and_long_context_moves_it():
    short = steptime.speedup_crossing(L8B, L1B, H100, "bf16", 3, 0.8, 256, max_batch=4096)
    assert short is not None and 100 < short < 1000
    at = steptime.spec_curve(L8B, L1B, H100, "bf16", 3, 0.8, 256, short)
    assert float(at.speedup) == pytest.approx(1.0, abs=1e-6)
    longer = steptime.speedup_crossing(L8B, L1B, H100, "bf16", 3, 0.8, 1024, max_batch=4096)
    assert longer is None or longer > short
    # w8a16 halves the linear crossover, so speculation fades sooner
    w8 = steptime.speedup_crossing(L8B, L1B, H100, "w8a16", 3, 0.8, 256, max_batch=4096)
    assert w8 is not None and w8 < short
    # a draft as costly as the target never pays
    assert steptime.speedup_crossing(L8B, L8B, H100, "bf16", 3, 0.5, 256) == 1.0


def test_memory_limit_is_consistent():
    lim = steptime.max_batch_in_memory(H100, L8B, L1B, "bf16", 8192)
    assert lim is not None and 10 < lim < 100
    assert steptime.memory_needed_gb(L8B, L1B, "bf16", lim, 8192) == pytest.approx(80.0)
    assert steptime.max_batch_in_memory(H100, L8B, L1B, "bf16", 0) == math.inf
    assert steptime.max_batch_in_memory(H100, L70B, None, "bf16", 1024) == 0.0     # 141 GB of weights > 80 GB


# ------------------------------------------------------------ probe maths ----
def test_linear_stack_time_and_knee():
    t = steptime.linear_stack_time(1e6, [1, 1000], 4.0, 1e11, 1e10)
    np.testing.assert_allclose(t, [4e6 / 1e10, 2e9 / 1e11])
    assert steptime.knee_tokens(1e11, 1e10, 4.0) == pytest.approx(20.0)
    with pytest.raises(ValueError):
        steptime.linear_stack_time(0, [1], 4.0, 1e11, 1e10)


def test_fit_knee_recovers_a_known_knee():
    rng = np.random.default_rng(0)
    tokens = 2.0 ** np.arange(10)
    times = 3e-3 * np.maximum(1.0, tokens / 37.0) * np.exp(rng.normal(0, 0.05, tokens.size))
    k, t0 = steptime.fit_knee(tokens, times)
    assert k == pytest.approx(37.0, rel=0.15)
    assert t0 == pytest.approx(3e-3, rel=0.1)
    flat_k, _ = steptime.fit_knee(tokens, np.full(tokens.size, 1e-3))
    assert flat_k >= tokens.max()                  # no knee inside the range
    with pytest.raises(ValueError):
        steptime.fit_knee([1], [1.0])
