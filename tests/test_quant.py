"""Quantised linear maps (gpu_demo.models.quant): each kernel against its own dequantised weight, the float32
fallback where a kernel is missing or forced off, training untouched, and the engine's law on a quantised model.

The law check runs the real speculative decoder on a tiny quantised Llama (V = 6) and compares the first three
emitted tokens with the law the quantised model itself computes (Pearson chi-square, helpers from
test_gpu_exactness); the draft's own law, which the same counts must reject, is the negative control.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from test_gpu_exactness import P_REJECT, PROMPT, V, sample_joint

from gpu_demo.drafters import ModelDrafter
from gpu_demo.models import quant
from gpu_demo.models.llama import LlamaConfig, init_random
from gpu_demo.models.packed import PackedLinear, cpu_flags
from gpu_demo.models.quant import QuantLinear
from gpu_demo.sampler import SamplingConfig
from specdec_core.stats import chi_square_gof

pytestmark = pytest.mark.usefixtures("one_torch_thread")
QUANT = ("fp16", "bf16", "int8", "int4")


def _need(fmt: str) -> None:
    """Skip where `fmt` does not run on this CPU (bf16: oneDNN packs it only with AVX-512 or AVX-NE-CONVERT); the
    fallback itself is tested everywhere (test_bf16_runs_exactly_where_onednn_packs_it and the forced-off tests)."""
    if quant.quant_unavailable_reason(fmt):
        pytest.skip(quant.quant_unavailable_reason(fmt))


def _w(n: int = 48, k: int = 96, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, k, generator=torch.Generator().manual_seed(seed)) * 0.05  # (N, K)


def test_int4_kernel_computes_the_q4_1_weight_d_q_plus_m() -> None:
    q, d, m = quant.int4_from_float(_w())
    assert q.min() >= 0 and q.max() <= 15 and d.shape == (48, 3)
    x = torch.randn(5, 96)  # (M, K)
    y = quant.int4_linear(x, *quant.int4_from_min_scale(q, d, m))
    torch.testing.assert_close(y, x @ quant.int4_dequant(q, d, m).t(), atol=1e-5, rtol=1e-5)
    assert (quant.int4_dequant(q, d, m) - _w()).abs().max() <= d.max() / 2 + 1e-6  # within half a step


def test_int4_rejects_blocks_of_the_wrong_shape() -> None:
    q, d, m = quant.int4_from_float(_w())
    with pytest.raises(ValueError, match="multiple of 32"):
        quant.int4_from_min_scale(q[:, :40], d, m)


@pytest.mark.parametrize("fmt", QUANT)
def test_quant_linear_is_close_to_float32_and_keeps_its_parameter(fmt: str) -> None:
    _need(fmt)
    lin = torch.nn.Linear(96, 48, bias=False)
    lin.weight.data = _w()
    ql = QuantLinear(fmt, lin.weight)
    x = torch.randn(3, 4, 96)  # (B, T, K)
    with torch.no_grad():
        y, ref = ql(x), F.linear(x, lin.weight)
    assert y.shape == (3, 4, 48) and ql.weight is lin.weight
    tol = {"fp16": 1e-3, "bf16": 0.02, "int8": 0.05, "int4": 0.15}[fmt]
    assert float((y - ref).norm() / ref.norm()) < tol
    assert not torch.equal(y, ref)  # the quantised kernel really ran
    y.requires_grad_(False)
    out = ql(x).sum()  # autograd on: the float32 weight, so training is unchanged
    out.backward()
    torch.testing.assert_close(lin.weight.grad, x.reshape(-1, 96).sum(0).expand(48, 96))


def test_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="one of"):
        quant.quant_unavailable_reason("int3")


def test_forced_off_falls_back_to_float32_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(quant.QUANT_ENV, "0")
    assert quant.cpu_weight_format("fp16") == ("float32", f"float32 weights: quantised weights forced off "
                                                          f"({quant.QUANT_ENV}=0)")
    assert quant.cpu_weight_format("float32")[0] == "float32"


def test_missing_kernel_falls_back_to_float32(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(quant, "_probe", lambda fmt: f"the {fmt} kernel is not available here (test)")
    fmt, words = quant.cpu_weight_format("int4")
    assert fmt == "float32" and "int4 kernel is not available" in words


def test_the_probe_passes_here_for_every_format_torch_ships() -> None:
    """This repo's CPUs (x86 with AVX2) run these three; a failure here means the fallback above is what runs."""
    assert [quant.quant_unavailable_reason(f) for f in ("fp16", "int8", "int4")] == [None, None, None]


def test_bf16_runs_exactly_where_onednn_packs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """bf16 runs on a CPU with AVX-512 (BW, VL, DQ) or AVX-NE-CONVERT and AMX bf16 tiles (where its verify rows
    equal single steps) and falls back to float32, saying why, elsewhere and when forced off (SPECDEC_CPU_BF16=0),
    so both paths are exercised on every machine."""
    flags = cpu_flags()
    if not flags:
        pytest.skip("no /proc/cpuinfo flags to check against")
    packs = ({"avx512bw", "avx512vl", "avx512dq"} <= flags or "avx_ne_convert" in flags) and "amx_bf16" in flags
    assert (quant.quant_unavailable_reason("bf16") is None) == packs
    monkeypatch.setenv("SPECDEC_CPU_BF16", "0")
    fmt, words = quant.cpu_weight_format("bf16")
    assert fmt == "float32" and "bf16 packing forced off" in words and "\n" not in words


TINY = LlamaConfig(vocab_size=V, dim=64, n_layers=2, n_heads=2, n_kv_heads=1, hidden_dim=128, max_seq_len=64)


@pytest.mark.parametrize("fmt", QUANT)
def test_quantize_for_cpu_swaps_kernels_and_float32_undoes_it(fmt: str) -> None:
    _need(fmt)
    model = init_random(TINY, seed=1, max_len=32).eval()
    keys = set(model.state_dict())
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        ref = model.forward_train(ids)
        assert model.quantize_for_cpu(fmt) == 2 * 7 + 1
        assert model.weight_format == fmt and set(model.state_dict()) == keys
        assert isinstance(model.layers[0].attention.wq, QuantLinear)
        model.reset(1)
        cached = model(ids)
        torch.testing.assert_close(cached, model.forward_train(ids), atol=1e-4, rtol=1e-4)
        assert 0 < float((cached - ref).abs().max()) < 0.5
        assert model.quantize_for_cpu("float32") == 2 * 7 + 1  # pack_for_cpu's count
        assert model.weight_format == "float32" and isinstance(model.layers[0].attention.wq, PackedLinear)
        torch.testing.assert_close(model.forward_train(ids), ref)


@pytest.mark.parametrize("fmt", QUANT)
def test_fused_maps_give_the_separate_maps_logits_bit_for_bit(fmt: str) -> None:
    """[wq; wk; wv] and [w1; w3] as one kernel call each leave the law unchanged: equal logits."""
    _need(fmt)
    model = init_random(TINY, seed=2, max_len=32).eval()
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    with torch.no_grad():
        model.quantize_for_cpu(fmt)
        model._step_plan = None  # fp16: the general path, which reads the maps (the step plan holds its own copies)
        a, f = model.layers[0].attention, model.layers[0].feed_forward
        assert bool(a.qkv) and bool(f.gate_up)
        assert a.qkv[0].out_features == a.wq.out_features + 2 * a.wk.out_features and a.qkv[0].weight is None
        if fmt != "int4":
            assert a.wq._packed is None  # the separate copy is released; it packs again only if called
        else:
            assert a.wq._packed is not None  # stacked from the maps' own blocks, which stay
            with pytest.raises(ValueError, match="keeps its packed blocks"):
                a.wq.release_packed()  # int4 may hold the GGUF's own blocks: never dropped and re-derived
        model.reset(1)
        together = model(ids)
        for layer in model.layers:
            layer.attention.qkv = layer.feed_forward.gate_up = ()
        model.reset(1)
        assert torch.equal(model(ids), together)
        assert a.wq._packed is not None  # packed again on its first quantised call


def exact_joint_of(model, cfg: SamplingConfig) -> np.ndarray:
    """P(x1, x2, x3) over V^3 cells from the model's own processed laws (the law its kernels compute): the prompt's
    pass, then one step per token, as autoregressive decoding makes them (on int8/int4 the step is another graph
    than the batched pass, gpu_demo.models.ort_step)."""
    from specdec_core.sampling import sampling_distribution

    def law(prefix: list[int]) -> np.ndarray:
        with torch.no_grad():
            model.reset(1)
            lg = model(torch.tensor([PROMPT]))[0, -1]
            for t in prefix:
                lg = model(torch.tensor([[t]]))[0, -1]
        return sampling_distribution(lg.double().numpy(), cfg.temperature, cfg.top_k, cfg.top_p)

    joint = np.zeros(V**3)
    p1 = law([])
    for a, b in itertools.product(range(V), range(V)):
        pab = p1[a] * law([a])[b]
        joint[a * V * V + b * V: a * V * V + b * V + V] = pab * law([a, b])
    return joint


@pytest.mark.slow
@pytest.mark.parametrize("fmt", QUANT)
def test_speculative_law_on_a_quantised_target_matches_its_own_law(fmt: str) -> None:
    _need(fmt)
    cfg = SamplingConfig(temperature=1.0)
    target = init_random(TINY, seed=3, max_len=32).eval()
    draft = init_random(TINY, seed=4, max_len=32).eval()
    target.quantize_for_cpu(fmt)
    counts = sample_joint(target, ModelDrafter(draft), 2, cfg)
    want = exact_joint_of(target, cfg)
    stat, dof, pval = chi_square_gof(counts, want)
    assert dof > 20 and pval > P_REJECT, f"{fmt}: chi2={stat:.1f} dof={dof} p={pval:.2e}"
    other = exact_joint_of(draft, cfg)
    assert 0.5 * np.abs(other - want).sum() > 0.1  # the draft's law is far from the target's (TV 0.13)
    assert chi_square_gof(counts, other)[2] < P_REJECT  # negative control: the same counts reject it


@pytest.mark.parametrize("fmt", (*quant.ROWWISE_FORMATS, "bf16"))
def test_a_pass_of_t_rows_is_t_steps_bit_for_bit_where_the_kernel_rounds_activations(fmt: str) -> None:
    """int8 and int4 round x per block, bf16 to 8 bits, so a last-bit difference can move a value a whole step: a
    verify pass must compute each row as a T = 1 step does (int8/int4: as single steps; bf16: one attention call per
    row, gpu_demo.models.llama_step.attend_rows)."""
    _need(fmt)
    model = init_random(TINY, seed=5, max_len=32).eval()
    model.quantize_for_cpu(fmt)
    prompt, new = torch.tensor([[1, 2, 3, 4, 5]]), [3, 1, 4, 1, 5]
    with torch.no_grad():
        model.reset(1)
        model(prompt)
        steps = torch.cat([model(torch.tensor([[t]])) for t in new], dim=1)  # (1, T, V)
        model.reset(1)
        model(prompt)
        assert torch.equal(model(torch.tensor([new])), steps)


@pytest.mark.parametrize("fmt", quant.ROWWISE_FORMATS)
def test_a_tree_pass_on_activation_rounding_weights_is_refused_in_one_line(fmt: str) -> None:
    """A tree pass cannot run as single steps, and batched it would not be exact: refused, naming the way out."""
    model = init_random(TINY, seed=6, max_len=32).eval()
    model.quantize_for_cpu(fmt)
    with torch.no_grad():
        model.reset(1)
        model(torch.tensor([[1, 2, 3]]))
        mask = torch.tensor([[True, False], [True, True]])  # (T, T): the root, then one child
        with pytest.raises(ValueError, match="token trees and batches need fp16, bf16 or float32") as err:
            model(torch.tensor([[4, 5]]), torch.tensor([3, 4]), mask)
    assert "\n" not in str(err.value)
