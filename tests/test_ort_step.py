"""The int8/int4 decode step as one ONNX Runtime graph (gpu_demo.models.ort_step).

With the activations kept in float32 (MatMulNBits accuracy 1 in both the per-map sessions and the graph) the graph
is the general path's arithmetic up to the order of sums: its logits and hidden states match to 1e-5 over a prompt
and several steps, which checks RoPE's position, the cache writes in place, grouped-query attention, the fused
residual-and-norm nodes and the head. A step one position off, the negative control, misses by far more. With the
activations rounded to int8 per block (the default), the graph is the one way a token is decoded: the same calls
give the same numbers bit for bit, after a rollback and after the cache is reallocated.
"""

from __future__ import annotations

import pytest
import torch

from gpu_demo.models import ort_blocks
from gpu_demo.models.llama import LlamaConfig, init_random
from gpu_demo.models.ort_step import build_ort_step

pytestmark = pytest.mark.usefixtures("one_torch_thread")
TINY = LlamaConfig(vocab_size=64, dim=64, n_layers=2, n_heads=4, n_kv_heads=2, hidden_dim=96, max_seq_len=64)
PROMPT, NEW = [1, 2, 3, 4, 5], [6, 7, 8, 9, 10, 11]


def _decode(model, prompt: list[int], tokens: list[int], graph: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits (T, V) and hidden states (T, C) of each token fed one at a time after the prompt's pass."""
    step, model._ort_step = model._ort_step, (model._ort_step if graph else None)
    try:
        model.reset(1)
        with torch.inference_mode():
            model(torch.tensor([prompt]))
            out = [(model(torch.tensor([[t]]))[0, 0], model.last_hidden[0, 0]) for t in tokens]
    finally:
        model._ort_step = step
    return torch.stack([lg for lg, _ in out]), torch.stack([h for _, h in out])


@pytest.fixture
def float_activations(monkeypatch: pytest.MonkeyPatch) -> None:
    """MatMulNBits at accuracy 1: float32 activations, so the graph and the general path differ only in sum order."""
    monkeypatch.setattr(ort_blocks, "ACCURACY_INT8", 1)


@pytest.mark.parametrize("fmt", ["int8", "int4"])
def test_the_graph_is_the_general_paths_arithmetic(fmt: str, float_activations: None) -> None:
    model = init_random(TINY, seed=11, max_len=32).eval()
    model.quantize_for_cpu(fmt)
    assert model._ort_step is not None and model._step_plan is None
    want_logits, want_hidden = _decode(model, PROMPT, NEW, graph=False)
    logits, hidden = _decode(model, PROMPT, NEW, graph=True)
    assert logits.shape == (len(NEW), TINY.vocab_size) and hidden.shape == (len(NEW), TINY.dim)
    assert torch.allclose(logits, want_logits, atol=1e-5, rtol=0) and torch.allclose(hidden, want_hidden, atol=1e-5)
    assert want_logits.std() > 0.1  # the logits are not flat: matching them says something


@pytest.mark.parametrize("fmt", ["int8", "int4"])
def test_a_step_one_position_off_is_caught(fmt: str, float_activations: None) -> None:
    """Negative control: the graph run at cache_len + 1 (RoPE and the key's slot shifted) misses the tolerance."""
    model = init_random(TINY, seed=11, max_len=32).eval()
    model.quantize_for_cpu(fmt)
    want, _ = _decode(model, PROMPT, NEW[:1], graph=False)
    model.reset(1)
    with torch.inference_mode():
        model(torch.tensor([PROMPT]))
        model.cache.advance(1)  # one empty slot: the step lands one position later
        got = model(torch.tensor([NEW[:1]]))[0]
    assert (got - want).abs().max() > 1e-2


@pytest.mark.parametrize("fmt", ["int8", "int4"])
def test_the_same_calls_give_the_same_numbers_after_rollback_and_reallocation(fmt: str) -> None:
    model = init_random(TINY, seed=12, max_len=32).eval()
    model.quantize_for_cpu(fmt)
    first = _decode(model, PROMPT, NEW, graph=True)
    with torch.inference_mode():  # a rollback overwrites the slots after it
        model.reset(1)
        model(torch.tensor([PROMPT]))
        for t in [9, 9, 9]:
            model(torch.tensor([[t]]))
        model.rollback(len(PROMPT))
        again = torch.stack([model(torch.tensor([[t]]))[0, 0] for t in NEW])
        model.reset(2)  # another batch size: new cache buffers, bound again on the next step
        model(torch.tensor([PROMPT, PROMPT]))
    assert torch.equal(again, first[0])
    after = _decode(model, PROMPT, NEW, graph=True)
    assert torch.equal(after[0], first[0]) and torch.equal(after[1], first[1])


def test_only_int8_and_int4_full_vocabulary_models_get_the_graph() -> None:
    model = init_random(TINY, seed=13, max_len=32).eval()
    for fmt, has in [("float32", False), ("fp16", False), ("int8", True), ("int4", True), ("float32", False)]:
        model.quantize_for_cpu(fmt)
        assert (model._ort_step is not None) == has, fmt
    model.quantize_for_cpu("int8")
    for layer in model.layers:
        layer.attention.qkv = ()  # unfused maps: no graph
    assert build_ort_step(model) is None
    sub = init_random(LlamaConfig(**{**TINY.to_dict(), "tie_embeddings": False, "n_out": 16}), seed=13, max_len=32)
    sub.eval().quantize_for_cpu("int8")
    assert sub._ort_step is None  # a sub-vocabulary head scores only some ids: the general path
