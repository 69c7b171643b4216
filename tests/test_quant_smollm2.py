"""The SmolLM2 target on quantised weights: int4 is the GGUF's own Q4_1 blocks, greedy speculative output equals
greedy autoregressive output on both real pairs, the pair says which weights run, and the float32 fallback."""

from __future__ import annotations

import pytest
import torch

from gpu_demo.models import quant
from gpu_demo.models.gguf import SmolLM2Unavailable, load_smollm2, q4_1_state

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]


def _pair(name: str, **options):
    from gpu_demo.pairs import load_pair

    try:
        return load_pair(name, "cpu", max_len=160, **options)
    except SmolLM2Unavailable as exc:
        pytest.fail(str(exc))


def _greedy_equal(pair, text: str, n: int, gamma: int) -> list[int]:
    """Greedy speculative tokens, asserted equal to greedy autoregressive ones."""
    from gpu_demo.decode import autoregressive, run, speculative
    from gpu_demo.sampler import SamplingConfig

    ids = pair.tokenizer.encode(pair.tokenizer.chat(text))
    greedy = SamplingConfig(temperature=0.0)
    ar = run(autoregressive(pair.target, ids, n, sampling=greedy)).tokens
    sp = run(speculative(pair.target, pair.drafter, ids, n, gamma=gamma, sampling=greedy)).tokens
    assert sp == ar
    return ar


def test_int4_blocks_are_the_files_numbers() -> None:
    """d q + m from the raw Q4_1 bytes equals the gguf package's dequantisation (the cached float32), bit for bit."""
    blocks = q4_1_state()
    state = load_smollm2(max_len=8).model.state_dict()
    assert len(blocks) == 30 * 7 and "tok_embeddings.weight" not in blocks  # the tied head is Q8_0
    for name in ("layers.0.attention.wq.weight", "layers.29.feed_forward.w2.weight"):
        q, d, m = blocks[name]
        assert q.shape == state[name].shape and int(q.min()) >= 0 and int(q.max()) <= 15
        assert torch.equal(quant.int4_dequant(q, d, m), state[name])


@pytest.mark.parametrize("weights", ["fp16", "bf16", "int8", "int4"])
def test_lookup_pair_greedy_exact_on_quantised_target(weights: str) -> None:
    if quant.quant_unavailable_reason(weights):
        pytest.skip(quant.quant_unavailable_reason(weights))  # bf16 without AVX-512: tests/test_quant.py's fallback
    pair = _pair("smollm2-lookup", weights=weights)
    assert pair.target.weight_format == weights and weights in pair.info["target"]
    assert pair.info["target_weights"] == quant.describe(weights)
    out = _greedy_equal(pair, "Repeat exactly: the quick brown fox jumps over the lazy dog.", 10, 4)
    assert "quick brown" in pair.tokenizer.decode(out)


def test_eagle_pair_greedy_exact_on_the_default_cpu_weights() -> None:
    from gpu_demo.models.smollm2 import CPU_WEIGHTS

    pair = _pair("smollm2-eagle")
    assert pair.target.weight_format == CPU_WEIGHTS
    _greedy_equal(pair, "Name three colours.", 10, 3)


def test_eagle_pair_greedy_exact_on_bf16_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    """bf16 rounds every map's input, so only row-by-row attention keeps 40 greedy tokens equal at gamma 1 and 3."""
    from gpu_demo.models.smollm2 import WEIGHTS_ENV

    if quant.quant_unavailable_reason("bf16"):
        pytest.skip(quant.quant_unavailable_reason("bf16"))
    monkeypatch.setenv(WEIGHTS_ENV, "bf16")
    pair = _pair("smollm2-eagle")
    assert pair.target.weight_format == "bf16" and "bf16 weights" in pair.info["target"]
    for gamma in (1, 3):
        _greedy_equal(pair, "Explain in two sentences why the sky is blue.", 40, gamma)


@pytest.mark.parametrize("weights", ["int8", "int4"])
def test_a_verify_pass_is_single_steps_bit_for_bit_on_activation_rounding_weights(weights: str) -> None:
    """On SmolLM2 a last-bit difference before int8 rounding moved logits by up to 1.0 (measured), so the rows of a
    verify pass must be the steps' own numbers, not merely close."""
    pair = _pair("smollm2-lookup", weights=weights)
    target, ids = pair.target, pair.tokenizer.encode("The capital of France is Paris, and the capital of Spain is")
    with torch.no_grad():
        target.reset(1)
        target(torch.tensor([ids[:-4]]))
        steps = torch.cat([target(torch.tensor([[t]])) for t in ids[-4:]], dim=1)  # (1, 4, V)
        target.reset(1)
        target(torch.tensor([ids[:-4]]))
        assert torch.equal(target(torch.tensor([ids[-4:]])), steps)


def test_forced_off_the_pair_runs_float32_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(quant.QUANT_ENV, "0")
    pair = _pair("smollm2-lookup", weights="int4")
    assert pair.target.weight_format == "float32"
    assert "forced off" in pair.info["target_weights"]
    _greedy_equal(pair, "Say hello.", 4, 2)


def test_unknown_weight_format_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="weight format must be one of"):
        _pair("smollm2-lookup", weights="int3")
