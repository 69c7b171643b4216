"""The per-kernel step-time model against an independent computation, v(gamma, B), and the shape-aware gamma search.

The reference below is written from the published config.json numbers and the roofline rule alone (sum over
kernel classes of max(FLOPs / peak, bytes / bandwidth)); it shares no code with specdec_core.steptime.
"""

from __future__ import annotations

import numpy as np
import pytest

from specdec_core import algebra, roofline, steptime

H100 = roofline.HARDWARE["H100 SXM"]
A100 = roofline.HARDWARE["A100 SXM 80GB"]
L8B = steptime.SHAPES["Llama-3.1-8B"]
L1B = steptime.SHAPES["Llama-3.2-1B (draft)"]

# config.json of meta-llama/Llama-3.1-8B and meta-llama/Llama-3.2-1B
CFG_8B = dict(layers=32, hidden=4096, kv_heads=8, head_dim=128, ffn=14336, vocab=128256, tied=False)
CFG_1B = dict(layers=16, hidden=2048, kv_heads=8, head_dim=64, ffn=8192, vocab=128256, tied=True)


def ref_linear_weights(cfg: dict) -> int:
    """Weights a token is multiplied by: Q, K, V, O, gate, up, down and two norms per layer, final norm, head."""
    d, kv, f, n = cfg["hidden"], cfg["kv_heads"] * cfg["head_dim"], cfg["ffn"], cfg["layers"]
    return n * (2 * d * d + 2 * d * kv + 3 * d * f + 2 * d) + d + cfg["vocab"] * d


def ref_pass_s(cfg: dict, b: int, t: int, ctx: int, peak: float = 989e12, bw: float = 3.35e12) -> float:
    """BF16 pass of b sequences x t new tokens at context ctx: linear + attention + activations, each max()ed."""
    p, n, d = ref_linear_weights(cfg), cfg["layers"], cfg["hidden"]
    linear = max(2 * p * b * t / peak, 2 * p / bw)
    kv_bytes = b * ctx * 2 * n * cfg["kv_heads"] * cfg["head_dim"] * 2
    attention = max(4 * b * t * n * d * ctx / peak, kv_bytes / bw)
    activations = b * t * n * 4 * d * 2 / bw
    return linear + attention + activations


def ref_point(b: int, gamma: int = 3, alpha: float = 0.8, ctx: int = 2048) -> tuple[float, float, float]:
    """(c, v, speedup) for the 8B target and 1B draft on H100 SXM in BF16."""
    decode = ref_pass_s(CFG_8B, b, 1, ctx)
    c = ref_pass_s(CFG_1B, b, 1, ctx) / decode
    v = ref_pass_s(CFG_8B, b, gamma + 1, ctx) / decode
    tokens = sum(alpha**i for i in range(gamma + 1))
    return c, v, tokens / (gamma * c + v)


def test_the_reference_counts_match_the_presets():
    assert ref_linear_weights(CFG_8B) == L8B.linear_params == L8B.params - 128256 * 4096
    assert ref_linear_weights(CFG_1B) == L1B.linear_params == L1B.params        # tied: the table is the head


@pytest.mark.parametrize("b", [1, 64, 128, 256])
def test_v_and_speedup_match_an_independent_computation(b):
    """Llama-3.1-8B / Llama-3.2-1B, H100 SXM, BF16, context 2,048, gamma 3, alpha 0.8."""
    cur = steptime.spec_curve(L8B, L1B, H100, "bf16", 3, 0.8, 2048, b)
    c, v, s = ref_point(b)
    assert float(cur.c) == pytest.approx(c, rel=1e-12)
    assert float(cur.v) == pytest.approx(v, rel=1e-12)
    assert float(cur.speedup) == pytest.approx(s, rel=1e-12)


def test_v_stays_near_one_at_batch_1_and_grows_past_the_knee():
    v = steptime.spec_curve(L8B, L1B, H100, "bf16", 3, 0.8, 2048, [1, 64, 128, 256]).v
    assert abs(v[0] - 1.0) < 0.01
    assert v[3] > 1.35
    # the values quoted in the closing note (hand-checkable with ref_point)
    np.testing.assert_allclose(v, [1.0002, 1.0062, 1.2308, 1.4507], atol=5e-4)
    s = steptime.spec_curve(L8B, L1B, H100, "bf16", 3, 0.8, 2048, 128).speedup
    assert float(s) == pytest.approx(1.551, abs=1e-3)


def test_one_roofline_for_the_pass_hides_the_knee():
    """The old model, max(all FLOPs / peak, all bytes / bandwidth), kept v near 1 at B = 256; the sum does not."""
    dec = steptime.step_time(L8B, H100, "bf16", 256, 1, 2048)
    ver = steptime.step_time(L8B, H100, "bf16", 256, 4, 2048)
    assert float(ver.one_roofline_s / dec.one_roofline_s) < 1.02
    assert float(ver.total_s / dec.total_s) > 1.35
    assert bool(ver.linear.compute_bound) and not bool(ver.attention.compute_bound)


def test_attention_intensity_is_flat_in_batch_and_context():
    for b, ctx in [(1, 256), (64, 2048), (512, 16384)]:
        st = steptime.step_time(L8B, H100, "bf16", b, 4, ctx)
        assert float(st.attention.flops / st.attention.bytes) == pytest.approx(16.0)   # 2 T x group 4 / 2 bytes
    assert steptime.attention_intensity(L8B, 4) == 16.0
    assert steptime.attention_intensity(L8B, 4, "fp8") == 32.0
    assert steptime.attention_intensity(L1B, 1) == 4.0            # 32 query / 8 KV heads, one token


def test_fp8_kv_cache_halves_the_kv_bytes_and_needs_fp8_cores():
    assert L8B.kv_bytes("fp8") == L8B.kv_bytes_per_token / 2 == 65_536
    bf = steptime.spec_curve(L8B, L1B, H100, "fp8", 3, 0.8, 16384, 64)
    f8 = steptime.spec_curve(L8B, L1B, H100, "fp8", 3, 0.8, 16384, 64, kv="fp8")
    assert float(f8.decode_s) < float(bf.decode_s)
    assert steptime.memory_needed_gb(L8B, None, "fp8", 64, 16384, kv="fp8") < steptime.memory_needed_gb(
        L8B, None, "fp8", 64, 16384
    )
    with pytest.raises(ValueError, match="not supported by this hardware"):
        steptime.step_time(L8B, A100, "bf16", 1, 1, 128, kv="fp8")
    with pytest.raises(ValueError, match="kv must be one of bf16, fp8"):
        steptime.step_time(L8B, H100, "bf16", 1, 1, 128, kv="int4")


# ------------------------------------------------------------ v(gamma) and the gamma search ----
def test_gamma_costs_agree_with_spec_curve_for_every_gamma():
    costs = steptime.gamma_costs(L8B, L1B, H100, "bf16", 2048, 128, max_gamma=8)
    assert costs.gammas.tolist() == list(range(9)) and costs.v[0] == 1.0
    for g in range(9):
        cur = steptime.spec_curve(L8B, L1B, H100, "bf16", g, 0.8, 2048, 128)
        assert costs.v[g] == pytest.approx(float(cur.v), rel=1e-12)
        assert costs.c == pytest.approx(float(cur.c), rel=1e-12)
    assert np.all(np.diff(costs.v) > 0)


def test_v_grows_with_gamma_only_once_the_batch_fills_the_gpu():
    small = steptime.gamma_costs(L8B, L1B, H100, "bf16", 2048, 1).v
    large = steptime.gamma_costs(L8B, L1B, H100, "bf16", 256, 512).v
    assert small[16] < 1.01  # 17 tokens at B = 1: still weight-read bound
    # at B = 512 the linear layers are compute-bound already at T = 1: each token adds the same time
    np.testing.assert_allclose(np.diff(large), np.diff(large)[0], rtol=1e-9)
    assert large[1] == pytest.approx(1.6073, abs=1e-4)


def brute_force_best(
    alpha: float, ctx: int, b: float, kv: str = "bf16", hw: roofline.Hardware = H100, max_gamma: int = 16
) -> tuple[int, float]:
    """argmax over gamma of spec_curve's speedup, one gamma at a time (gamma = 0 is plain decoding, 1x)."""
    s = [float(steptime.spec_curve(L8B, L1B, hw, "bf16", g, alpha, ctx, b, kv).speedup) for g in range(max_gamma + 1)]
    return int(np.argmax(s)), max(s)


@pytest.mark.parametrize(
    "alpha, ctx, b",
    [
        (0.8, 2048, 1),
        (0.8, 2048, 128),
        (0.7, 256, 512),
        (0.9, 256, 512),
        (0.95, 16384, 64),
        (0.0, 2048, 1),
        (1.0, 256, 300),
    ],
)
def test_best_gamma_for_shape_is_the_brute_force_argmax(alpha, ctx, b):
    g, s = steptime.best_gamma_for_shape(L8B, L1B, H100, "bf16", alpha, ctx, b)
    bg, bs = brute_force_best(alpha, ctx, b)
    assert g == bg and s == pytest.approx(bs, rel=1e-12)


def test_at_batch_512_context_256_the_best_gamma_is_small():
    """Each draft token there costs c + 0.61 target steps and adds at most alpha^gamma tokens."""
    assert steptime.best_gamma_for_shape(L8B, L1B, H100, "bf16", 0.7, 256, 512) == (0, 1.0)  # do not speculate
    assert steptime.best_gamma_for_shape(L8B, L1B, H100, "bf16", 0.8, 256, 512) == (0, 1.0)
    g, s = steptime.best_gamma_for_shape(L8B, L1B, H100, "bf16", 0.9, 256, 512)
    assert g == 1 and 1.0 < s < 1.06
    # the same alpha and costs with v held at v(gamma = 3) pick a long draft: the fixed-v search misleads
    costs = steptime.gamma_costs(L8B, L1B, H100, "bf16", 256, 512)
    g_fixed, _ = algebra.best_gamma(0.9, costs.c, float(costs.v[3]), 16)
    assert g_fixed >= 8


def test_best_gamma_falls_with_batch():
    b = np.unique(np.round(np.geomspace(1, 1024, 40)))
    g, s = steptime.best_gamma_against_batch(L8B, L1B, H100, "bf16", 0.7, 256, b)
    assert g[0] == 3 and g[-1] == 0 and np.all(np.diff(g) <= 0)
    assert np.all(s >= 1.0) and np.all(s[g == 0] == 1.0)


def test_achievable_ceilings_move_the_knee_in():
    ach = roofline.achievable(H100)
    assert ach.peak_tflops["bf16"] == pytest.approx(989 * 790 / 989)
    assert ach.bandwidth_tbs == pytest.approx(3.35 * 4.3 / 4.8)
    assert roofline.ridge(ach) < roofline.ridge(H100)
    v_sheet = steptime.spec_curve(L8B, L1B, H100, "bf16", 3, 0.8, 2048, 100).v
    v_ach = steptime.spec_curve(L8B, L1B, ach, "bf16", 3, 0.8, 2048, 100).v
    assert float(v_ach) > float(v_sheet)
    assert roofline.ceilings(H100, "datasheet") is H100
    with pytest.raises(ValueError, match=r"fraction must be in \(0, 1\]"):
        roofline.achievable(H100, compute=1.5)
    with pytest.raises(ValueError, match="datasheet, achievable"):
        roofline.ceilings(H100, "typical")


def test_b200_memory_matches_its_cited_source():
    """HGX / DGX B200: 1,440 GB of HBM3e across eight GPUs, i.e. 180 GB each (not the package's 192)."""
    b200 = roofline.HARDWARE["B200"]
    assert b200.memory_gb == 180 and "1,440 GB" in b200.source and "180 GB" in b200.source


def test_bad_shape_vocab():
    with pytest.raises(ValueError, match="vocab"):
        steptime.DecoderShape("bad", 1e6, 2, 4096, 8, 128, 8192, vocab=128_256)  # table bigger than params


# ------------------------------------------------------------ the algebra's search with v(gamma) ----
def test_algebra_search_takes_v_by_gamma():
    costs = steptime.gamma_costs(L8B, L1B, H100, "bf16", 256, 512, max_gamma=32)
    for alpha in (0.0, 0.5, 0.8, 0.9, 1.0):
        g, s = algebra.best_gamma(alpha, costs.c, costs.v, 32)
        brute = [float(algebra.speedup(alpha, k, costs.c, costs.v[k])) for k in range(33)]
        assert g == int(np.argmax(brute)) and s == pytest.approx(max(brute), rel=1e-12)
        assert (g, s) == pytest.approx(steptime.best_gamma_for_shape(L8B, L1B, H100, "bf16", alpha, 256, 512, 32))
    # a constant v(gamma) is the fixed-v search
    assert algebra.best_gamma(0.8, 0.05, np.full(33, 3.5), 32) == algebra.best_gamma(0.8, 0.05, 3.5, 32)


def test_heatmap_and_break_even_take_v_by_gamma():
    v = steptime.gamma_costs(L8B, L1B, H100, "bf16", 2048, 256, max_gamma=8).v
    alphas, cs = np.linspace(0, 1, 11), np.linspace(0, 0.5, 6)
    g, s = algebra.best_gamma_map(alphas, cs, v, 8)
    for i, a in enumerate(alphas):
        for j, c in enumerate(cs):
            bg, bs = algebra.best_gamma(float(a), float(c), v, 8)
            assert g[i, j] == bg and s[i, j] == pytest.approx(bs, rel=1e-12)
    be = algebra.break_even_boundary(cs, v, 8)
    for j, c in enumerate(cs):
        each = [algebra.break_even_alpha(k, float(c), float(v[k])) for k in range(1, 9)]
        expect = min((x for x in each if x is not None), default=np.inf)
        assert be[j] == pytest.approx(expect, abs=1e-9)
    with pytest.raises(ValueError, match=r"v\(gamma\) for gamma = 0..8"):
        algebra.best_gamma_map(alphas, cs, v[:5], 8)


def test_one_roofline_v_is_the_old_model():
    """At B = 128 the single-roofline v was 1.008 (the page's old number); the per-kernel v is 1.23."""
    v_one = steptime.one_roofline_v(L8B, H100, "bf16", 3, 2048, 128)
    assert v_one == pytest.approx(1.008, abs=1e-3)
    assert float(steptime.spec_curve(L8B, L1B, H100, "bf16", 3, 0.8, 2048, 128).v) > v_one + 0.2


# --------------------------------------------- where KV reads take over ----
def test_kv_read_batch_against_the_config_and_its_one_over_context_fall():
    """B where B L kv_bytes = linear weights x 2 (BF16), from config.json counts typed in above."""
    for cfg, shape in ((CFG_8B, L8B), (CFG_1B, L1B)):
        kv_token = 2 * cfg["layers"] * cfg["kv_heads"] * cfg["head_dim"] * 2
        for ctx in (2048, 16384):
            want = 2 * ref_linear_weights(cfg) / (ctx * kv_token)
            assert steptime.kv_read_batch(shape, "bf16", ctx) == pytest.approx(want, rel=1e-9)
        assert steptime.kv_read_batch(shape, "bf16", 2048, kv="fp8") == pytest.approx(
            2 * steptime.kv_read_batch(shape, "bf16", 2048), rel=1e-12
        )
    assert round(steptime.kv_read_batch(L8B, "bf16", 2048), 1) == 55.9
    assert round(steptime.kv_read_batch(L1B, "bf16", 2048), 1) == 36.8
    assert steptime.kv_read_batch(L8B, "bf16", 0) == float("inf")
    with pytest.raises(ValueError, match="longer than"):
        steptime.kv_read_batch(L8B, "bf16", 10**7)


def test_past_the_kv_batch_the_drafts_c_rises_toward_its_kv_bytes_over_the_targets():
    """The issue's numbers: c 0.166 at B = 1 to 0.236 at B = 256 (context 2048, gamma 3, H100 BF16; the model gives
    0.2348), rising toward 32 KiB / 128 KiB = 0.25 as the KV reads dominate both passes: at large batch, and the
    closer the longer the context (MagicDec's large-batch, long-context bottleneck)."""
    batch = np.array([1.0, 256.0, 65536.0])
    short, long = (steptime.spec_curve(L8B, L1B, H100, "bf16", 3, 0.8, ctx, batch).c for ctx in (2048, 16384))
    assert short[0] == pytest.approx(0.166, abs=5e-4) and short[1] == pytest.approx(0.236, abs=2e-3)
    assert L1B.kv_bytes() / L8B.kv_bytes() == 0.25
    assert np.all(np.diff(short) > 0) and np.all(np.diff(long) > 0)  # c rises with batch
    assert short[2] == pytest.approx(0.2365, abs=5e-4)  # compute still weighs at 2k
    assert long[2] == pytest.approx(0.248, abs=5e-4) and 0.25 - long[2] < 0.25 - short[2]


# ------------------------------------------------------------------ KV memory of an operating point, on GPUs --
T8, D1 = steptime.SHAPES["Llama-3.1-8B"], steptime.SHAPES["Llama-3.2-1B (draft)"]


def _brute_fewest(models, batch, ctx, gpu_gb, max_tp=8):
    """Every (tp, replicas): per GPU sum_m W_m / tp + ceil(B / r) L kv_m / min(tp, kv_heads_m) <= gpu_gb, fewest GPUs
    (ties: fewer replicas); an independent loop over all layouts."""
    best = None
    for tp in (1, 2, 4, 8, 16, 32, 64):
        if tp > max_tp:
            break
        for r in range(1, batch + 1):
            seqs = -(-batch // r)
            need = sum(2 * m.params / tp + seqs * ctx * 2 * m.layers * m.kv_heads * m.head_dim * 2 / min(tp, m.kv_heads)
                       for m in models)
            if need <= gpu_gb * 1e9 and (best is None or (tp * r, r) < (best[0] * best[1], best[1])):
                best = (tp, r)
    return best


def test_b256_at_16k_kv_by_hand_and_the_gpus_it_needs():
    """131,072 KV bytes per token (2 x 32 x 8 x 128 x 2) x 256 x 16,384 = 549.76 GB for the 8B; the 1B adds 32,768 per
    token, 137.44 GB; weights 2 x (8.03e9 + 1.24e9) = 18.53 GB: 705.7 GB, so at least 9 80 GB GPUs. One TP-8 replica
    needs 18.53 / 8 + 687.19 / 8 = 88.2 GB per GPU (8 KV heads: KV splits at most 8 ways); 5 replicas of TP 2 hold 52
    sequences each at 9.27 + 69.79 = 79.06 GB: 10 GPUs, fewer than TP 4 x 3 or TP 8 x 2."""
    p = steptime.gpu_placement(T8, D1, "bf16", 256, 16384)
    assert T8.kv_bytes() == 131_072 and D1.kv_bytes() == 32_768
    assert p.kv_gb == pytest.approx(256 * 16384 * (131_072 + 32_768) / 1e9) == pytest.approx(687.19, abs=0.01)
    assert p.weights_gb == pytest.approx(2 * (T8.params + D1.params) / 1e9)
    assert p.total_gb == pytest.approx(steptime.memory_needed_gb(T8, D1, "bf16", 256, 16384))
    assert p.total_gb == pytest.approx(705.73, abs=0.01)
    assert p.capacity_gpus == 9 and p.tp_max_gb == pytest.approx(88.21, abs=0.01)
    assert (p.tp, p.replicas, p.gpus) == (2, 5, 10) and p.per_gpu_gb == pytest.approx(79.06, abs=0.01)
    alone = steptime.gpu_placement(T8, None, "bf16", 256, 16384)
    assert alone.kv_gb == pytest.approx(549.76, abs=0.01)
    assert (alone.tp, alone.replicas, alone.capacity_gpus) == (8, 1, 8)


@pytest.mark.parametrize("draft, batch, ctx, gpu_gb", [(D1, 256, 16384, 80), (None, 256, 16384, 80),
                                                       (D1, 64, 32768, 80), (D1, 200, 2048, 80), (None, 7, 131072, 141),
                                                       (D1, 1, 0, 80), (D1, 33, 8192, 24)])
def test_placement_is_the_fewest_of_every_layout(draft, batch, ctx, gpu_gb):
    models = [T8] + ([draft] if draft else [])
    p = steptime.gpu_placement(T8, draft, "bf16", batch, ctx, gpu_gb=gpu_gb)
    assert (p.tp, p.replicas) == _brute_fewest(models, batch, ctx, gpu_gb)
    assert p.per_gpu_gb <= gpu_gb and p.gpus >= p.capacity_gpus


def test_kv_heads_bound_tensor_parallel_kv_and_a_negative_control():
    """Past kv_heads GPUs the KV heads are replicated: with 2 KV heads TP 8 holds KV / 2 per GPU, not KV / 8."""
    narrow = steptime.DecoderShape("2 KV heads", 8e9, 32, 4096, 2, 128, 131_072)
    p = steptime.gpu_placement(narrow, None, "bf16", 64, 32768, max_tp=8)
    kv = 64 * 32768 * narrow.kv_bytes() / 1e9
    assert p.tp_max_gb == pytest.approx(16 / 8 + kv / 2)
    assert p.tp_max_gb != pytest.approx(16 / 8 + kv / 8)           # what splitting KV 8 ways would claim


def test_placement_refuses_what_fits_nowhere():
    with pytest.raises(ValueError, match="one sequence"):
        steptime.gpu_placement(steptime.SHAPES["Llama-3.1-70B"], None, "bf16", 1, 131072, gpu_gb=10, max_tp=1)
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="batch"):
            steptime.gpu_placement(T8, None, "bf16", bad, 2048)


def test_a_heads_kv_ratio_is_one_layer_of_the_targets():
    """EAGLE / MTP: one decoder layer with the target's attention shape -> 1/32 of Llama-3.1-8B's KV, 1/30 of
    SmolLM2-135M's; a separate 1B draft keeps 0.25. At B = 256, 16k: 549.76 / 32 = 17.18 GB."""
    from specdec_core.h200_run import SMOLLM2_135M

    assert steptime.head_kv_ratio(T8) == 1 / 32 and steptime.head_kv_ratio(SMOLLM2_135M) == 1 / 30
    assert steptime.kv_ratio(D1, T8) == 0.25
    assert steptime.head_kv_gb(T8, 256, 16384) == pytest.approx(549.755813888 / 32)
    for bad in (0, 33, 1.0):
        with pytest.raises(ValueError, match="layers"):
            steptime.head_kv_ratio(T8, bad)
