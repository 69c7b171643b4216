"""oneDNN-packed linear maps (gpu_demo.models.packed): the same y = x W^T, the same state dict, exact decoding kept.

* PackedLinear equals F.linear below and above min_rows (float32: to rounding; a bf16 copy: to bf16 precision),
  uses F.linear whenever autograd is on (training is untouched), and unpacking gives back the same Parameter;
* Llama.pack_for_cpu: logits for 1..8 new tokens equal the unpacked model's, the state dict keeps its keys
  and tensors, and greedy speculative decoding with a packed target and a bf16-packed EAGLE head equals
  greedy autoregressive decoding token for token;
* EagleHead.pack_for_cpu: q stays a law over S (zero outside), near the float32 head's;
* every draft path on every machine: fbgemm's fp16 copies (the default), bf16 packed copies where this CPU runs them
  (skipped, with the reason, where it does not), and the float32 fallback, which every CPU runs, each chosen with
  SPECDEC_DRAFT_KERNEL; the bf16 probe agrees with the CPU's own flags (bf16 needs AVX-512 BW+VL+DQ or
  AVX-NE-CONVERT, and AMX bf16 tiles for exact verify rows).
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from eagle_support import tiny_head, tiny_target
from torch import nn

from gpu_demo.decode import autoregressive, run, speculative
from gpu_demo.models.eagle import EagleDrafter
from gpu_demo.models.packed import (
    BF16_ENV,
    PackedLinear,
    bf16_unavailable_reason,
    cpu_flags,
    pack_linears,
    packing_available,
    unpack_linears,
)
from gpu_demo.models.quant import DRAFT_ENV, QUANT_ENV, QuantLinear, draft_packing, quant_unavailable_reason
from gpu_demo.sampler import SamplingConfig

pytestmark = [pytest.mark.usefixtures("one_torch_thread"),
              pytest.mark.skipif(not packing_available(), reason="torch built without oneDNN")]

NO_BF16 = bf16_unavailable_reason()
needs_bf16 = pytest.mark.skipif(NO_BF16 is not None, reason=f"this CPU has no bf16 packing: {NO_BF16}")


@pytest.fixture(params=["float32", "bf16", "fp16"])
def draft_path(request, monkeypatch) -> str:
    """Each draft kernel in turn, chosen with the environment switch (skipped where this CPU refuses it)."""
    why = {"float32": None, "bf16": NO_BF16, "fp16": quant_unavailable_reason("fp16")}[request.param]
    if why is not None:
        pytest.skip(f"this CPU has no {request.param} draft path: {why}")
    monkeypatch.setenv(DRAFT_ENV, request.param)
    return request.param


def test_the_probe_agrees_with_the_cpus_flags() -> None:
    flags = cpu_flags()
    if not flags:
        pytest.skip("no /proc/cpuinfo flags to compare with")
    has_isa = ({"avx512bw", "avx512vl", "avx512dq"} <= flags or "avx_ne_convert" in flags) and "amx_bf16" in flags
    assert (NO_BF16 is None) == has_isa, (NO_BF16, sorted(f for f in flags if f.startswith("avx")))


def test_draft_kernel_falls_back_in_order_and_says_why(monkeypatch) -> None:
    monkeypatch.delenv(DRAFT_ENV, raising=False)
    kind, min_rows, words = draft_packing()
    assert (kind, min_rows) == ("fp16", 1) and "fbgemm" in words  # the default wherever fbgemm runs
    monkeypatch.setenv(QUANT_ENV, "0")  # fp16 refused: bf16 where it runs, saying why fp16 was not taken
    kind, min_rows, words = draft_packing()
    assert QUANT_ENV in words and kind == ("bf16" if NO_BF16 is None else "float32")
    monkeypatch.setenv(BF16_ENV, "0")  # both refused: the float32 fallback, with both reasons
    kind, min_rows, words = draft_packing()
    assert (kind, min_rows) == ("float32", 4) and words.startswith("float32") and QUANT_ENV in words
    assert BF16_ENV in words
    monkeypatch.delenv(QUANT_ENV)
    monkeypatch.delenv(BF16_ENV)
    monkeypatch.setenv(DRAFT_ENV, "float32")
    assert draft_packing()[:2] == ("float32", 4)
    monkeypatch.setenv(DRAFT_ENV, "int3")
    with pytest.raises(ValueError, match=DRAFT_ENV):
        draft_packing()


@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 8, 17])
def test_packed_linear_equals_f_linear(rows: int) -> None:
    g = torch.Generator().manual_seed(rows)
    lin = nn.Linear(96, 40, bias=False)
    x = torch.randn(1, rows, 96, generator=g)  # (1, rows, in)
    want = F.linear(x, lin.weight)
    with torch.inference_mode():
        got32 = PackedLinear.from_linear(lin, 4)(x)
        got32_all = PackedLinear.from_linear(lin, 1)(x)  # the fallback draft path: packed for every row count
    torch.testing.assert_close(got32, want, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got32_all, want, atol=1e-5, rtol=1e-5)


@needs_bf16
@pytest.mark.parametrize("rows", [1, 2, 4, 17])
def test_bf16_packed_linear_is_near_f_linear(rows: int) -> None:
    g = torch.Generator().manual_seed(rows)
    lin = nn.Linear(96, 40, bias=False)
    x = torch.randn(1, rows, 96, generator=g)  # (1, rows, in)
    want = F.linear(x, lin.weight)
    with torch.inference_mode():
        got16 = PackedLinear.from_linear(lin, 1, torch.bfloat16)(x)
    assert got16.dtype == torch.float32
    torch.testing.assert_close(got16, want, atol=3e-2, rtol=3e-2)  # bf16 weights and input: ~3 digits
    assert not torch.equal(got16, want)  # the bf16 copy is really used (a rounding difference shows)


def test_autograd_uses_the_plain_weight_and_unpack_gives_it_back() -> None:
    model = nn.Sequential(nn.Linear(8, 8, bias=False), nn.ReLU(), nn.Linear(8, 3, bias=False))
    weights = [m.weight for m in model if isinstance(m, nn.Linear)]
    assert pack_linears(model, 1, torch.bfloat16 if NO_BF16 is None else torch.float32) == 2
    x = torch.randn(5, 8)
    model(x).sum().backward()  # grad on: F.linear on the Parameter, exact float32
    assert all(w.grad is not None for w in weights)
    assert [model[0].weight, model[2].weight] == weights
    assert unpack_linears(model) == 2 and isinstance(model[0], nn.Linear) and model[0].weight is weights[0]


def test_bad_arguments_are_value_errors() -> None:
    with pytest.raises(ValueError, match="min_rows"):
        PackedLinear(torch.randn(4, 4), 0)
    with pytest.raises(ValueError, match="bias-free"):
        PackedLinear.from_linear(nn.Linear(4, 4), 1)


def test_packed_llama_gives_the_same_logits_and_state_dict() -> None:
    target = tiny_target(16)
    before = {k: v.clone() for k, v in target.state_dict().items()}
    prompt = torch.tensor([[3, 1, 4, 1, 5, 9, 2]])  # (1, 7)
    with torch.inference_mode():
        target.reset(1)
        want = target.forward(prompt)  # (1, 7, V): a 7-row prefill takes the packed path once packed
        outs = {}
        for t in (1, 2, 3, 4, 5, 8):
            target.reset(1)
            target.forward(prompt)
            outs[t] = target.forward(torch.arange(t).view(1, -1))  # (1, t, V)
        n = target.pack_for_cpu()
        assert n == 2 * 7 + 1  # 7 maps per layer, 2 layers, and the tied head
        assert target.pack_for_cpu(None) == 14 and target.pack_for_cpu() == 15  # undo, then pack again
        target.reset(1)
        torch.testing.assert_close(target.forward(prompt), want, atol=1e-4, rtol=1e-5)
        for t, logits in outs.items():
            target.reset(1)
            target.forward(prompt)
            torch.testing.assert_close(target.forward(torch.arange(t).view(1, -1)), logits, atol=1e-4, rtol=1e-5)
    after = target.state_dict()
    assert list(after) == list(before)
    for k in before:
        assert torch.equal(after[k], before[k]), k


def test_greedy_speculative_with_packed_target_and_head_equals_greedy(draft_path: str) -> None:
    target = tiny_target(16, seed=3)
    head = tiny_head(target, 12)
    want = [run(autoregressive(target, p, 40, SamplingConfig(0.0))).tokens for p in ([5], [3, 1, 4, 1, 5])]
    assert target.pack_for_cpu() > 0 and head.pack_for_cpu() == 9  # fc, 7 block maps, E_S
    copies = [m for m in head.modules() if isinstance(m, (PackedLinear, QuantLinear))] + list(head._packed_out)
    assert len(copies) == 9 and draft_path.replace("fp16", "fbgemm") in head.kernel
    if draft_path == "fp16":
        assert all(isinstance(m, QuantLinear) and m.fmt == "fp16" for m in copies)
        attention, ffn = head.block.attention, head.block.feed_forward  # one call each for [wq; wk; wv], [w1; w3]
        assert attention.qkv[0].out_features == 64 and ffn.gate_up[0].out_features == 2 * ffn.w1.out_features
    else:
        dtype = torch.bfloat16 if draft_path == "bf16" else torch.float32
        assert all(isinstance(m, PackedLinear) and m.packed.dtype == dtype for m in copies)
        assert all(m.min_rows == (1 if draft_path == "bf16" else 4) for m in copies)
    for gamma in (1, 3, 5):
        got = [run(speculative(target, EagleDrafter(target, head), p, 40, gamma, SamplingConfig(0.0))).tokens
               for p in ([5], [3, 1, 4, 1, 5])]
        assert got == want, gamma


def test_packed_head_q_is_a_law_over_s_near_the_float32_one(draft_path: str) -> None:
    target = tiny_target(16, seed=4)
    head = tiny_head(target, 10)
    g = torch.randn(5, 32)  # (5, C): 5 rows, so any path's copy serves them
    with torch.inference_mode():
        want = torch.softmax(head.logits(g), -1)
        head.pack_for_cpu()
        out = head._packed_out[0]
        assert out.use_quant(g) if isinstance(out, QuantLinear) else out.use_packed(g)
        got = torch.softmax(head.logits(g), -1)  # (5, V)
    outside = torch.ones(16, dtype=torch.bool)
    outside[head.out_ids] = False
    assert torch.all(got[:, outside] == 0)
    torch.testing.assert_close(got.sum(-1), torch.ones(5))
    torch.testing.assert_close(got, want, atol=2e-2, rtol=0)
    if draft_path != "float32":
        assert not torch.equal(got, want)  # the rounded copy is really used


def test_a_packed_model_moved_to_another_dtype_uses_its_live_weights() -> None:
    target = tiny_target(16, seed=5)
    prompt = torch.tensor([[3, 1, 4, 1, 5, 9, 2]])  # (1, 7): the packed path's row count
    target.pack_for_cpu()
    target.to(torch.float64)  # the packed copies stay float32; inputs are float64 now: F.linear on the moved weights
    with torch.inference_mode():
        target.reset(1)
        got = target.forward(prompt)
        target.pack_for_cpu(None)
        target.reset(1)
        want = target.forward(prompt)
    assert got.dtype == torch.float32  # logits are float32 whatever the weights' dtype
    torch.testing.assert_close(got, want, atol=0, rtol=0)


@pytest.mark.slow
def test_smollm2_eagle_loads_and_decodes_exactly_on_the_float32_fallback(monkeypatch) -> None:
    """The shipped pair on the path every x86 CPU runs: it loads, says which path, and greedy stays exact."""
    pytest.importorskip("gguf")
    from gpu_demo.models.eagle import load_eagle_pair

    monkeypatch.setenv(QUANT_ENV, "0")
    monkeypatch.setenv(BF16_ENV, "0")
    pair = load_eagle_pair(torch.device("cpu"))
    assert pair.info["draft_kernel"].startswith("float32 weights") and BF16_ENV in pair.info["draft_kernel"]
    prompt = pair.tokenizer.encode(pair.tokenizer.user_turn("Name three colours."))
    want = run(autoregressive(pair.target, prompt, 12, SamplingConfig(0.0))).tokens
    got = run(speculative(pair.target, pair.drafter, prompt, 12, 2, SamplingConfig(0.0))).tokens
    assert got == want
