"""The tensor-position steps (Llama.forward_at, EagleHead.forward_at) and the fixed-shape steps built on them
(gpu_demo.models.graphs).

On a CPU: forward_at reading what forward reads gives forward's logits bit for bit (decode, verify, a tree,
a draft model's step, the feature-level head's step and its tree); the fixed-shape steps (whole-cache attention,
padding to a bucket) agree with the eager steps to float32 rounding, leave the committed cache as the eager steps
do, and keep greedy speculative output equal to greedy output, for the model draft and the head, chains and
trees; torch.compile over them agrees too. The CUDA graphs themselves are captured where CUDA is present.
"""

from __future__ import annotations

import shutil

import pytest
import torch
from eagle_support import tiny_head, tiny_target

from gpu_demo import tree_decode
from gpu_demo.decode import autoregressive, run, speculative
from gpu_demo.drafters import ModelDrafter
from gpu_demo.models.base import causal_bias_at_offset, tree_bias_at_offset
from gpu_demo.models.eagle import EagleDrafter
from gpu_demo.models.graphs import BUCKETS, bucket_of, chain_bias, use_static_steps
from gpu_demo.models.llama import LlamaConfig, init_random
from gpu_demo.sampler import SamplingConfig
from gpu_demo.tree_decode import tree_speculative
from specdec_core.dynamic_tree import DynamicTree
from specdec_core.trees import branching_tree

V = 97
TARGET = LlamaConfig(vocab_size=V, dim=48, n_layers=2, n_heads=6, n_kv_heads=2, hidden_dim=80, max_seq_len=128)
DRAFT = LlamaConfig(vocab_size=V, dim=32, n_layers=1, n_heads=4, n_kv_heads=2, hidden_dim=48, max_seq_len=128)
GREEDY = SamplingConfig(0.0)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _model(cfg: LlamaConfig = TARGET, seed: int = 0, sharpen: float = 20.0):
    """A small random Llama with peaked laws (no argmax near-ties)."""
    m = init_random(cfg, seed=seed, max_len=128).eval()
    m.requires_grad_(False)
    with torch.no_grad():
        m.tok_embeddings.weight.mul_(sharpen)
    return m


def _prefix(m, n: int = 23, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, V, (1, n), generator=g)
    m.reset(1)
    with torch.no_grad():
        m(ids)
    return ids


# ------------------------------------------------------------------ forward_at is forward, bit for bit
@pytest.mark.parametrize("t", [1, 4, 9])
@pytest.mark.parametrize("cfg", [TARGET, DRAFT], ids=["target", "draft"])
def test_forward_at_reading_the_same_keys_is_forward_bit_for_bit(t: int, cfg: LlamaConfig) -> None:
    m = _model(cfg)
    _prefix(m)
    start = m.cache_len
    new = torch.randint(0, V, (1, t), generator=torch.Generator().manual_seed(t))
    with torch.no_grad():
        ref = m(new)
        ref_hidden = m.last_hidden.clone()
        m.rollback(start)
        slots = torch.arange(start, start + t)
        bias = None if t == 1 else causal_bias_at_offset(start, t, m.device, m.dtype)
        got = m.forward_at(new, slots, slots, bias, kv_len=start + t)
    assert torch.equal(got, ref) and torch.equal(m.last_hidden, ref_hidden)


def test_forward_at_on_a_tree_is_the_tree_pass_bit_for_bit() -> None:
    m, tree = _model(), branching_tree([2, 2, 1])
    _prefix(m)
    start = m.cache_len
    ids = torch.randint(0, V, (1, tree.n_nodes + 1), generator=torch.Generator().manual_seed(5))
    positions = start + torch.cat([torch.zeros(1, dtype=torch.long), torch.as_tensor(tree.depth)])
    mask = tree_decode.verify_mask(tree)
    with torch.no_grad():
        ref = m(ids, positions, mask)
        m.rollback(start)
        slots = torch.arange(start, start + ids.shape[1])
        bias = tree_bias_at_offset(start, mask, m.dtype)
        got = m.forward_at(ids, slots, positions, bias, kv_len=start + ids.shape[1])
    assert torch.equal(got, ref)


def test_a_position_off_by_one_is_caught() -> None:
    """Negative control: the last token's angle one position late gives other logits (rotary angles are relative:
    shifting every position alike would not), so the equality above can fail."""
    m = _model()
    _prefix(m)
    start = m.cache_len
    new = torch.randint(0, V, (1, 4), generator=torch.Generator().manual_seed(4))
    with torch.no_grad():
        ref = m(new)
        m.rollback(start)
        slots = torch.arange(start, start + 4)
        late = slots.clone()
        late[-1] += 1
        got = m.forward_at(new, slots, late, causal_bias_at_offset(start, 4, m.device, m.dtype), start + 4)
    assert torch.equal(got[:, :3], ref[:, :3]) and not torch.equal(got[:, 3], ref[:, 3])


# ------------------------------------------------------------------- the feature-level head, bit for bit
HV = 61  # the tiny EAGLE pair's vocabulary


def _eagle_pair(n_prefix: int = 13):
    """A tiny target and head; the head's cache holds n_prefix slots built from random features."""
    target = tiny_target(HV)
    head = tiny_head(target, n_out=40)
    g = torch.Generator().manual_seed(2)
    head.reset(1)
    with torch.no_grad():
        head(torch.randn(1, n_prefix, target.cfg.dim, generator=g), torch.randint(0, HV, (1, n_prefix), generator=g))
    return target, head


@pytest.mark.parametrize("t", [1, 3, 6])
def test_head_forward_at_reading_the_same_keys_is_forward_bit_for_bit(t: int) -> None:
    _, head = _eagle_pair()
    start = head.cache_len
    g = torch.Generator().manual_seed(t)
    feats, toks = torch.randn(1, t, head.cfg.dim, generator=g), torch.randint(0, HV, (1, t), generator=g)
    with torch.no_grad():
        ref = head(feats, toks)
        ref_k = head.cache.k[0][:, :, : start + t].clone()
        head.rollback(start)
        slots = torch.arange(start, start + t)
        bias = None if t == 1 else causal_bias_at_offset(start, t, head.device, head.dtype)
        got = head.forward_at(feats, toks, slots, slots, bias, kv_len=start + t)
    assert torch.equal(got, ref) and torch.equal(head.cache.k[0][:, :, : start + t], ref_k)


def test_head_forward_at_on_a_tree_is_the_tree_step_bit_for_bit() -> None:
    _, head = _eagle_pair()
    tree = branching_tree([2, 2])
    start, n = head.cache_len, tree.n_nodes
    g = torch.Generator().manual_seed(9)
    feats, toks = torch.randn(1, n, head.cfg.dim, generator=g), torch.randint(0, HV, (1, n), generator=g)
    positions = start + torch.as_tensor(tree.depth) - 1  # (n,): depth 1 sits at the first new slot
    mask = tree_decode.verify_mask(tree)[1:, 1:]  # (n, n): the tree without its root
    with torch.no_grad():
        ref = head(feats, toks, positions, mask)
        head.rollback(start)
        slots = torch.arange(start, start + n)
        got = head.forward_at(feats, toks, slots, positions, tree_bias_at_offset(start, mask, head.dtype), start + n)
    assert torch.equal(got, ref)


def test_head_static_steps_match_eager_steps() -> None:
    (_, eager), (_, static) = _eagle_pair(), _eagle_pair()
    use_static_steps(static, capture=False)
    g = torch.Generator().manual_seed(4)
    with torch.no_grad():
        for t in (3, 1, 1, 5, 2):
            feats, toks = torch.randn(1, t, eager.cfg.dim, generator=g), torch.randint(0, HV, (1, t), generator=g)
            torch.testing.assert_close(static(feats, toks), eager(feats, toks), rtol=1e-5, atol=1e-5)
            assert static.cache_len == eager.cache_len
    assert set(static.static_steps.shapes) == {(1, bucket_of(t)) for t in (3, 1, 5, 2)}


@pytest.mark.parametrize("shape", ["chain", "tree", "dynamic"])
def test_greedy_eagle_equals_greedy_on_static_steps(shape: str) -> None:
    """Target and head both on fixed-shape steps: the chain, a static tree and a dynamic tree stay greedy."""
    target = tiny_target(HV)
    head = tiny_head(target, n_out=40)
    for m in (target, head):
        use_static_steps(m, capture=False)
    for prompt in ([1, 2, 3], [30, 31, 32, 33, 34]):
        ar = run(autoregressive(target, prompt, 30, GREEDY))
        drafter = EagleDrafter(target, head)
        if shape == "chain":
            sp = run(speculative(target, drafter, prompt, 30, gamma=3, sampling=GREEDY))
        else:
            tree = branching_tree([2, 2, 1]) if shape == "tree" else DynamicTree(3, 3, 8)
            sp = run(tree_speculative(target, drafter, prompt, 30, tree, GREEDY))
        assert sp.tokens == ar.tokens
    assert head.static_steps.shapes and any(t > 1 for _, t in target.static_steps.shapes)


# ------------------------------------------------------------------------------- the fixed-shape steps
def test_buckets_and_the_whole_cache_mask() -> None:
    assert [bucket_of(t) for t in (1, 2, 3, 5, 64)] == [1, 2, 4, 8, 64] and bucket_of(65) is None
    assert BUCKETS == tuple(sorted(BUCKETS))
    bias = chain_bias(torch.tensor([3, 4]), 6, torch.float32)
    assert (bias == 0).tolist() == [[True] * 4 + [False] * 2, [True] * 5 + [False]]


@pytest.mark.parametrize("steps", [[1, 1, 3, 1, 5, 2], [4, 4, 4], [9, 1]])
def test_static_steps_match_eager_steps_and_leave_the_same_cache(steps: list[int]) -> None:
    """Padding (3 -> 4, 5 -> 8, 9 -> 16) writes past the real tokens; what is committed stays the eager values."""
    eager, static = _model(), _model()
    use_static_steps(static, capture=False)
    _prefix(eager), _prefix(static)
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for t in steps:
            new = torch.randint(0, V, (1, t), generator=g)
            a, b = eager(new), static(new)
            torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-5)
            torch.testing.assert_close(static.last_hidden, eager.last_hidden, rtol=1e-5, atol=1e-5)
            assert static.cache_len == eager.cache_len
        n = eager.cache_len
        for ke, ks in zip(eager.cache.k, static.cache.k):
            torch.testing.assert_close(ks[:, :, :n], ke[:, :, :n], rtol=1e-5, atol=1e-5)
    assert set(static.static_steps.shapes) == {(1, bucket_of(t)) for t in [23, *steps]}  # the prompt: 23 -> 32


def test_a_step_that_does_not_fit_runs_eagerly() -> None:
    m = _model()
    use_static_steps(m, capture=False)
    _prefix(m, n=100)  # the prompt (100 tokens) is past the last bucket: eager
    with torch.no_grad():
        m(torch.zeros(1, 27, dtype=torch.long))  # 127 of 128: padding to 32 would pass the cache's end
    assert m.cache_len == 127 and m.static_steps.shapes == {}


def test_capture_needs_cuda() -> None:
    if torch.cuda.is_available():
        pytest.skip("CUDA is present: the capture test below runs instead")
    with pytest.raises(ValueError, match="CUDA"):
        use_static_steps(_model(), capture=True)


@pytest.mark.parametrize("gamma", [1, 3, 5])
def test_greedy_speculative_equals_greedy_on_static_steps(gamma: int) -> None:
    target, draft = _model(), _model(DRAFT, seed=3, sharpen=5.0)
    for m in (target, draft):
        use_static_steps(m, capture=False)
    for prompt in ([1, 2, 3], [50, 51, 52, 53, 54, 55, 56], [7]):
        ar = run(autoregressive(target, prompt, 40, GREEDY))
        sp = run(speculative(target, ModelDrafter(draft), prompt, 40, gamma=gamma, sampling=GREEDY))
        assert sp.tokens == ar.tokens
    assert any(t > 1 for _, t in target.static_steps.shapes)  # the verify passes used the bucketed shapes


def test_greedy_tree_equals_greedy_on_static_steps() -> None:
    target, draft = _model(), _model(DRAFT, seed=3, sharpen=5.0)
    for m in (target, draft):
        use_static_steps(m, capture=False)
    for prompt in ([1, 2, 3], [40, 41, 42, 43]):
        ar = run(autoregressive(target, prompt, 30, GREEDY))
        tr = run(tree_speculative(target, ModelDrafter(draft), prompt, 30, branching_tree([2, 2, 1]), GREEDY))
        assert tr.tokens == ar.tokens


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device: CUDA graphs capture there only")
def test_cuda_graphs_replay_the_eager_steps() -> None:  # pragma: no cover - CUDA only
    dev = torch.device("cuda")
    eager, graphed = _model().to(dev), _model().to(dev)
    steps = use_static_steps(graphed, capture=True)
    _prefix(eager), _prefix(graphed)
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for t in (1, 1, 3, 1, 4, 4):
            new = torch.randint(0, V, (1, t), generator=g).to(dev)
            torch.testing.assert_close(graphed(new), eager(new), rtol=1e-4, atol=1e-4)
    assert all(s.graph is not None for s in steps.shapes.values()) and steps.capture_s > 0
    prompt = [1, 2, 3]
    ar = run(autoregressive(graphed, prompt, 30, GREEDY))
    sp = run(speculative(graphed, ModelDrafter(_model(DRAFT, seed=3, sharpen=5.0).to(dev)), prompt, 30, gamma=3,
                         sampling=GREEDY))
    assert sp.tokens == ar.tokens


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                    reason="torch.compile on a CPU needs a C compiler (inductor builds its kernels)")
def test_compiled_steps_match_the_eager_steps_and_time_their_compile() -> None:
    """torch.compile over the fixed-shape step (one shape: each compiles once, about 20 s here)."""
    eager, static = _model(), _model()
    _prefix(eager), _prefix(static)  # eagerly: the prompt's shape would compile too
    steps = use_static_steps(static, capture=False, compiled=True)
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for _ in range(3):
            new = torch.randint(0, V, (1, 1), generator=g)
            torch.testing.assert_close(static(new), eager(new), rtol=1e-5, atol=1e-5)
    assert set(steps.shapes) == {(1, 1)} and steps.compile_s > 0


def test_graphs_are_asked_for_on_cuda_only(monkeypatch) -> None:
    from gpu_demo.models.graphs import COMPILE_ENV, GRAPHS_ENV, compile_wanted, graphs_wanted

    monkeypatch.setenv(GRAPHS_ENV, "1")
    assert graphs_wanted(torch.device("cuda")) and not graphs_wanted(torch.device("cpu"))
    monkeypatch.setenv(GRAPHS_ENV, "0")
    assert not graphs_wanted(torch.device("cuda"))
    monkeypatch.setenv(COMPILE_ENV, "1")
    assert compile_wanted()
    monkeypatch.delenv(COMPILE_ENV)
    assert not compile_wanted()
