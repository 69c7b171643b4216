"""The live engine's models, caches, greedy path, limits and registry (CPU, float32)."""

from __future__ import annotations

import gzip
import struct
import zlib

import pytest
import torch

from gpu_demo.decode import autoregressive, run, speculative
from gpu_demo.drafters import ModelDrafter
from gpu_demo.measure.stats import alpha_per_position
from gpu_demo.models.char import CharConfig, CharTokenizer, CharTransformer, WindowConfig, WindowMLP
from gpu_demo.pairs import PAIRS, PairSpec, availability, load_pair, register, warm_up
from gpu_demo.sampler import SamplingConfig, logits_to_probs
from gpu_demo.training import corpus

V = 81


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _small_pair(seed: int = 0) -> tuple[CharTransformer, ModelDrafter]:
    """Random small target and draft (fast; exercise every code path without trained weights)."""
    torch.manual_seed(seed)
    t = CharTransformer(CharConfig(vocab_size=V, n_layer=2, n_head=4, d_model=64, max_seq_len=128)).eval()
    d = WindowMLP(WindowConfig(vocab_size=V, window=8, d_emb=8, d_hidden=64, max_seq_len=128)).eval()
    t.requires_grad_(False)
    d.requires_grad_(False)
    d.fold()  # the cached path then uses the folded first layer, checked against forward_train below
    t.head.weight.mul_(20.0)  # sharpen the random target: argmax ties become impossible in practice
    return t, ModelDrafter(d)


@pytest.fixture(scope="module")
def builtin():
    return load_pair("builtin", "cpu")


# ------------------------------------------------------------------------------------------------ models


@pytest.mark.parametrize("model_kind", ["transformer", "window"])
def test_incremental_forward_equals_full_forward(model_kind: str) -> None:
    """Chunks of 7, 1, 1 and 13 tokens at growing offsets reproduce the cache-free forward (mask aligned)."""
    t, dr = _small_pair()
    model = t if model_kind == "transformer" else dr.model
    x = torch.randint(0, V, (2, 22), generator=torch.Generator().manual_seed(1))
    full = model.forward_train(x)  # (2, 22, V)
    model.reset(2)
    parts, start = [], 0
    for n in (7, 1, 1, 13):
        parts.append(model.forward(x[:, start:start + n]))
        start += n
    assert model.cache_len == 22
    torch.testing.assert_close(torch.cat(parts, 1), full, rtol=1e-4, atol=1e-4)


def test_rollback_then_reforward_equals_original() -> None:
    t, _ = _small_pair()
    x = torch.randint(0, V, (1, 30), generator=torch.Generator().manual_seed(2))
    t.reset(1)
    t.forward(x[:, :20])
    orig = t.forward(x[:, 20:30])  # (1, 10, V)
    t.rollback(20)
    assert t.cache_len == 20
    t.forward(torch.randint(0, V, (1, 6)))  # junk written past the prefix, then rolled back
    t.rollback(20)
    again = t.forward(x[:, 20:30])
    torch.testing.assert_close(again, orig, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="rollback length"):
        t.rollback(31)


def _check_cache_against_fresh(target: CharTransformer, committed: list[int]) -> None:
    """Target cache holds committed[:-1]; its K/V and the next logits equal a fresh full forward."""
    seq = torch.tensor(committed).view(1, -1)
    assert target.cache_len == seq.shape[1] - 1
    cache = getattr(target, "transformer", target).cache  # the built-in target is transformer + expert
    assert cache.length == target.cache_len
    k_run = [cache.keys(i).clone() for i in range(cache.n_layers)]
    next_logits = target.forward(seq[:, -1:])[0, -1]  # uses the cache built by the speculative run
    fresh_logits = target.forward_train(seq)[0, -1]
    torch.testing.assert_close(next_logits, fresh_logits, rtol=1e-4, atol=1e-4)
    target.reset(1)
    target.forward(seq[:, :-1])
    for i, a in enumerate(k_run):
        torch.testing.assert_close(a, cache.keys(i), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("temperature", [1.0, 0.0])
@pytest.mark.parametrize("gamma", [1, 3, 6])
def test_cache_after_speculative_run_equals_fresh_forward(gamma: int, temperature: float) -> None:
    t, dr = _small_pair()
    prompt = [5, 9, 11, 2]
    res = run(speculative(t, dr, prompt, 50, gamma, SamplingConfig(temperature), seed=3))
    assert len(res.tokens) == 50
    _check_cache_against_fresh(t, prompt + res.tokens)
    # the draft's history is the committed sequence minus its unfed tail
    assert dr.model.cache_len <= len(prompt) + len(res.tokens) - 1


def test_cache_after_speculative_run_builtin(builtin) -> None:
    prompt = builtin.tokenizer.encode("It is a truth universally acknowledged, that")
    res = run(speculative(builtin.target, builtin.drafter, prompt, 80, 4, SamplingConfig(1.0), seed=5))
    _check_cache_against_fresh(builtin.target, prompt + res.tokens)


def test_warm_up_leaves_no_trace_in_later_runs(builtin) -> None:
    """warm_up runs both generators once; a seeded run afterwards equals the same run on a fresh load."""
    prompt = builtin.tokenizer.encode("Emma Woodhouse, handsome,")
    assert warm_up(builtin, n_tokens=12) > 0
    warmed = run(speculative(builtin.target, builtin.drafter, prompt, 40, 3, SamplingConfig(1.0), seed=9)).tokens
    fresh = load_pair("builtin", "cpu")
    cold = run(speculative(fresh.target, fresh.drafter, prompt, 40, 3, SamplingConfig(1.0), seed=9)).tokens
    assert warmed == cold and len(warmed) == 40


# ------------------------------------------------------------------------------------------------ greedy


@pytest.mark.parametrize("gamma", [1, 2, 5])
def test_greedy_speculative_equals_greedy_small(gamma: int) -> None:
    t, dr = _small_pair()
    for prompt in ([1, 2, 3], [40, 41, 42, 43, 44, 45], [7]):
        ar = run(autoregressive(t, prompt, 60, SamplingConfig(0.0)))
        sp = run(speculative(t, dr, prompt, 60, gamma, SamplingConfig(0.0)))
        assert sp.tokens == ar.tokens


@pytest.mark.parametrize("gamma", [1, 3, 4, 8])
def test_greedy_speculative_equals_greedy_builtin(builtin, gamma: int) -> None:
    tok = builtin.tokenizer
    for text in ("It is a truth universally acknowledged, that", "Emma Woodhouse", "\"Oh! Mr. Darcy"):
        ids = tok.encode(text)
        ar = run(autoregressive(builtin.target, ids, 100, SamplingConfig(0.0)))
        sp = run(speculative(builtin.target, builtin.drafter, ids, 100, gamma, SamplingConfig(0.0)))
        assert tok.decode(sp.tokens) == tok.decode(ar.tokens)
        assert sum(e.n_accepted for e in sp.events) > 0  # the draft really contributed


# ------------------------------------------------------------------------------------------------ events


def test_event_bookkeeping_is_consistent() -> None:
    t, dr = _small_pair()
    res = run(speculative(t, dr, [3, 4], 40, 4, SamplingConfig(1.0), seed=11))
    for e in res.events:
        assert 0 <= e.n_accepted <= e.k <= 4
        assert e.emitted[: e.n_accepted] == e.drafted[: e.n_accepted]
        assert e.kinds[-1] == ("target" if e.k == 0 else "bonus" if e.n_accepted == e.k else "correction")
        assert len(e.p_top) == e.k + 1 and len(e.q_top) == e.k
        assert all(m == (u * q < p) for m, u, q, p in zip(e.accept_mask, e.uniforms, e.q_x, e.p_x))
        assert e.accept_mask[: e.n_accepted] == [True] * e.n_accepted
        assert e.draft_s >= 0 and e.verify_s > 0
    assert sum(len(e.emitted) for e in res.events) == 40
    alphas = alpha_per_position(res.events, 4)
    assert all(0 <= a <= 1 for a in alphas if a == a)


def test_same_seed_same_run_and_different_seed_differs() -> None:
    t, dr = _small_pair()
    a = run(speculative(t, dr, [3, 4], 40, 3, SamplingConfig(1.0), seed=1)).tokens
    b = run(speculative(t, dr, [3, 4], 40, 3, SamplingConfig(1.0), seed=1)).tokens
    c = run(speculative(t, dr, [3, 4], 40, 3, SamplingConfig(1.0), seed=2)).tokens
    assert a == b and a != c


def test_top_k_top_p_processing() -> None:
    logits = torch.tensor([3.0, 2.0, 1.0, 0.0, -1.0])
    p = logits_to_probs(logits, SamplingConfig(1.0, top_k=2))
    assert (p[2:] == 0).all() and abs(float(p.sum()) - 1) < 1e-6
    full = torch.softmax(logits, -1)
    p = logits_to_probs(logits, SamplingConfig(1.0, top_p=0.7))  # 0.636 < 0.7 -> keep the top 2
    assert (p > 0).tolist() == [True, True, False, False, False]
    torch.testing.assert_close(p[:2], full[:2] / full[:2].sum())


# ------------------------------------------------------------------------------------------------ limits


def test_limits_raise_clear_value_errors() -> None:
    t, dr = _small_pair()
    with pytest.raises(ValueError, match="context allows at most 127"):
        run(speculative(t, dr, [1] * 128, 5, 2))
    with pytest.raises(ValueError, match="prompt is empty"):
        run(autoregressive(t, [], 5))
    for gamma in (0, 17, 2.5, True):
        with pytest.raises(ValueError, match=r"gamma must be an integer in \[1, 16\]"):
            run(speculative(t, dr, [1, 2], 5, gamma))
    for n in (0, 127, -1, 3.0):
        with pytest.raises(ValueError, match=r"max_new_tokens must be an integer in \[1, 126\]"):
            run(speculative(t, dr, [1, 2], n, 2))
    with pytest.raises(ValueError, match=r"temperature must be in \[0, 100\]"):
        run(autoregressive(t, [1, 2], 5, SamplingConfig(temperature=-0.5)))
    with pytest.raises(ValueError, match=r"draft temperature"):
        run(speculative(t, dr, [1, 2], 5, 2, SamplingConfig(1.0), SamplingConfig(float("nan"))))
    with pytest.raises(ValueError, match=r"top_k must be an integer in \[0, 81\]"):
        run(autoregressive(t, [1, 2], 5, SamplingConfig(top_k=82)))
    with pytest.raises(ValueError, match=r"top_p must be in \(0, 1\]"):
        run(autoregressive(t, [1, 2], 5, SamplingConfig(top_p=0.0)))


def test_unknown_characters_are_named() -> None:
    tok = CharTokenizer("abc ")
    assert tok.decode(tok.encode("cab a")) == "cab a"
    with pytest.raises(ValueError, match=r"2 character\(s\).*'é', '€'"):
        tok.encode("abé€")


def test_builtin_pair_loads_and_refuses_unknown_characters(builtin) -> None:
    assert builtin.target.vocab_size == builtin.drafter.vocab_size == builtin.tokenizer.vocab_size
    with pytest.raises(ValueError, match="'~'"):
        builtin.tokenizer.encode("Hello ~ world")


# ---------------------------------------------------------------------------------------------- registry


def test_registry_reports_unavailable_pairs_with_a_reason() -> None:
    ok, reason = availability("no-such-pair", "cpu")
    assert not ok and reason.startswith("not available here: unknown pair")
    register(PairSpec(name="test-broken", description="x", loader="gpu_demo.no_such_module:load"))
    try:
        ok, reason = availability("test-broken", "cpu")
        assert not ok and "not available here: cannot import gpu_demo.no_such_module:load" in reason
        with pytest.raises(ValueError, match="not available here"):
            load_pair("test-broken", "cpu")
    finally:
        PAIRS.pop("test-broken")
    if not torch.cuda.is_available():
        ok, reason = availability("builtin", "cuda")
        assert not ok and "no CUDA GPU" in reason
    assert availability("builtin", "cpu") == (True, "")


# ------------------------------------------------------------------------------------------------ corpus


def _xdr_rds(strings: list[str]) -> bytes:
    """A tiny R serialisation (XDR v2) of a character vector, written by hand."""
    out = b"X\n" + struct.pack(">iii", 2, 0x040202, 0x020300)
    out += struct.pack(">ii", 16, len(strings))
    for s in strings:
        b = s.encode()
        out += struct.pack(">ii", 9 | (1 << 15), len(b)) + b
    return out


def test_r_reader_on_a_hand_made_stream() -> None:
    raw = _xdr_rds(["It is a truth", "", "universally"])
    assert corpus._read_rds(gzip.compress(raw)) == ["It is a truth", "", "universally"]
    assert corpus._unserialize(struct.pack(">i", len(raw)) + zlib.compress(raw)) == ["It is a truth", "", "universally"]


def test_committed_corpus_has_six_novels_and_a_held_out_tail() -> None:
    books = corpus.load_books()
    assert list(books) == list(corpus.BOOKS)
    total = sum(map(len, books.values()))
    assert 3_900_000 < total < 4_100_000
    assert "It is a truth universally acknowledged" in books["prideprejudice"]
    train, val = corpus.train_val_split(books)
    assert len(train) + len(val) == total and 0.04 < len(val) / total < 0.06
