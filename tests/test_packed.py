"""oneDNN-packed linear maps (gpu_demo.models.packed): the same y = x W^T, the same state dict, exact decoding kept.

* PackedLinear equals F.linear below and above min_rows (float32: to rounding; a bf16 copy: to bf16 precision),
  uses F.linear whenever autograd is on (training is untouched), and unpacking gives back the same Parameter;
* Llama.pack_for_cpu: logits for 1..8 new tokens equal the unpacked model's, the state dict keeps its keys
  and tensors, and greedy speculative decoding with a packed target and a bf16-packed EAGLE head equals
  greedy autoregressive decoding token for token;
* EagleHead.pack_for_cpu: q stays a law over S (zero outside), near the float32 head's.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from eagle_support import tiny_head, tiny_target
from torch import nn

from gpu_demo.decode import autoregressive, run, speculative
from gpu_demo.models.eagle import EagleDrafter
from gpu_demo.models.packed import PackedLinear, pack_linears, packing_available, unpack_linears
from gpu_demo.sampler import SamplingConfig

pytestmark = [pytest.mark.usefixtures("one_torch_thread"),
              pytest.mark.skipif(not packing_available(), reason="torch built without oneDNN")]


@pytest.mark.parametrize("rows", [1, 2, 3, 4, 5, 8, 17])
def test_packed_linear_equals_f_linear(rows: int) -> None:
    g = torch.Generator().manual_seed(rows)
    lin = nn.Linear(96, 40, bias=False)
    x = torch.randn(1, rows, 96, generator=g)  # (1, rows, in)
    want = F.linear(x, lin.weight)
    with torch.inference_mode():
        got32 = PackedLinear.from_linear(lin, 4)(x)
        got16 = PackedLinear.from_linear(lin, 1, torch.bfloat16)(x)
    torch.testing.assert_close(got32, want, atol=1e-5, rtol=1e-5)
    assert got16.dtype == torch.float32
    torch.testing.assert_close(got16, want, atol=3e-2, rtol=3e-2)  # bf16 weights and input: ~3 digits
    assert not torch.equal(got16, want)  # the bf16 copy is really used (a rounding difference shows)


def test_autograd_uses_the_plain_weight_and_unpack_gives_it_back() -> None:
    model = nn.Sequential(nn.Linear(8, 8, bias=False), nn.ReLU(), nn.Linear(8, 3, bias=False))
    weights = [m.weight for m in model if isinstance(m, nn.Linear)]
    assert pack_linears(model, 1, torch.bfloat16) == 2
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


def test_greedy_speculative_with_packed_target_and_head_equals_greedy() -> None:
    target = tiny_target(16, seed=3)
    head = tiny_head(target, 12)
    want = [run(autoregressive(target, p, 40, SamplingConfig(0.0))).tokens for p in ([5], [3, 1, 4, 1, 5])]
    assert target.pack_for_cpu() > 0 and head.pack_for_cpu() == 9  # fc, 7 block maps, E_S
    for gamma in (1, 3, 5):
        got = [run(speculative(target, EagleDrafter(target, head), p, 40, gamma, SamplingConfig(0.0))).tokens
               for p in ([5], [3, 1, 4, 1, 5])]
        assert got == want, gamma


def test_packed_head_q_is_a_law_over_s_near_the_float32_one() -> None:
    target = tiny_target(16, seed=4)
    head = tiny_head(target, 10)
    g = torch.randn(3, 32)  # (3, C)
    with torch.inference_mode():
        want = torch.softmax(head.logits(g), -1)
        head.pack_for_cpu()
        got = torch.softmax(head.logits(g), -1)  # (3, V)
    outside = torch.ones(16, dtype=torch.bool)
    outside[head.out_ids] = False
    assert torch.all(got[:, outside] == 0)
    torch.testing.assert_close(got.sum(-1), torch.ones(3))
    torch.testing.assert_close(got, want, atol=2e-2, rtol=0)


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
