"""Hugging Face pair adapter on tiny randomly initialised Llamas built from a config (nothing downloaded).

* The adapter's incremental forward + crop rollback reproduces a cache-free forward.
* Exactness through the shared decoder: the joint law of the first three emitted tokens (V = 4, so 64
  cells) is enumerated exactly from the target with full forwards, and N = 1200 seeded speculative
  runs (gamma = 2, so the first round drafts two tokens) must pass chi-square at p >= 1e-3. The draft
  is far from the target (joint TV 0.68), so the accept, residual and bonus paths all occur. The
  negative control reports a uniform q instead of the law the draft sampled from and must fail: when
  this was written it scored 231 on 20 dof at N = 300 (critical value 45.3), so N = 400 has power ~ 1.
* Greedy speculative output equals greedy autoregressive output token for token.
* Differing tokenizers are refused with a clear message; a padded vocabulary is sliced to the shared one.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch

transformers = pytest.importorskip("transformers", reason="transformers is in requirements-dev.txt")

from gpu_demo.decode import autoregressive, run, speculative  # noqa: E402
from gpu_demo.drafters import Draft, ModelDrafter  # noqa: E402
from gpu_demo.models.hf import HFUnavailable, TokenizerMismatch, load_hf_pair, load_pair  # noqa: E402
from gpu_demo.sampler import SamplingConfig, logits_to_probs  # noqa: E402
from specdec_core.stats import chi_square_gof  # noqa: E402

WORDS = ["<unk>", "a", "b", "c"]
V = len(WORDS)
PROMPT = [1, 2, 3, 1]


def save_tiny(path: Path, seed: int, vocab: dict[str, int], pad: int = 0, scale: float = 1.0) -> Path:
    """A 2-layer Llama (vocab V + pad rows) with seeded weights and a word-level tokenizer, saved as safetensors."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    transformers.utils.logging.disable_progress_bar()
    torch.manual_seed(seed)
    cfg = transformers.LlamaConfig(
        vocab_size=V + pad, hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, max_position_embeddings=64, tie_word_embeddings=False, initializer_range=0.5,
    )
    model = transformers.LlamaForCausalLM(cfg)
    with torch.no_grad():
        model.lm_head.weight.mul_(scale)
    model.save_pretrained(path)
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    transformers.PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>").save_pretrained(path)
    return path


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """Tiny models: thread start-up costs more than the maths, so run this module single-threaded."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def pair_dirs(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("hf")
    vocab = {w: i for i, w in enumerate(WORDS)}
    target = save_tiny(root / "target", seed=0, vocab=vocab, pad=3)  # padded embedding: 7 rows, 4 tokens
    draft = save_tiny(root / "draft", seed=1, vocab=vocab, scale=0.5)
    return target, draft


@pytest.fixture(scope="module")
def pair(pair_dirs):
    return load_hf_pair(str(pair_dirs[0]), str(pair_dirs[1]), device="cpu")


def test_padded_vocab_is_sliced_to_the_shared_one(pair) -> None:
    assert pair.vocab_size == V and pair.dtype == torch.float32
    assert pair.target.model.lm_head.weight.shape[0] == V + 3
    pair.target.reset(1)
    assert pair.target.forward(torch.tensor([PROMPT])).shape == (1, len(PROMPT), V)


def test_incremental_forward_and_crop_rollback_match_a_full_forward(pair) -> None:
    m = pair.target
    seq = torch.tensor([[1, 2, 3, 1, 1, 2, 3, 3, 2, 1]])
    with torch.inference_mode():
        full = m.model(seq).logits[..., :V].float()  # cache-free reference
    m.reset(1)
    a = m.forward(seq[:, :4])
    b = m.forward(seq[:, 4:6])
    m.forward(torch.tensor([[3, 3, 3]]))  # a rejected draft ...
    m.rollback(6)  # ... is cropped away
    assert m.cache_len == 6 and m._cache.get_seq_length() == 6
    c = m.forward(seq[:, 6:])
    torch.testing.assert_close(torch.cat([a, b, c], 1), full, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match=r"\[0, 10\]"):
        m.rollback(11)


def exact_joint(pair, sampling: SamplingConfig, n: int = 3) -> np.ndarray:
    """P(x_1..x_n | prompt) = prod_t p(x_t | prompt, x_<t), from cache-free forwards of the target."""
    seqs = torch.tensor([PROMPT + list(s) for s in itertools.product(range(V), repeat=n)])  # (V^n, L+n)
    with torch.inference_mode():
        logits = pair.target.model(seqs).logits[..., :V].double()  # (V^n, L+n, V)
    p = logits_to_probs(logits, sampling).double()
    L = len(PROMPT)
    probs = torch.ones(seqs.shape[0], dtype=torch.float64)
    for t in range(n):
        probs *= p[torch.arange(seqs.shape[0]), L - 1 + t, seqs[:, L + t]]
    out = probs.numpy()
    return out / out.sum()


class UniformClaim(ModelDrafter):
    """Negative control: samples from the draft's q but reports q = uniform to the rule."""

    def propose(self, context, gamma, sampling, generator) -> Draft:
        d = super().propose(context, gamma, sampling, generator)
        return Draft(d.tokens, torch.full_like(d.q, 1.0 / d.q.shape[-1]))


def joint_counts(pair, drafter, sampling: SamplingConfig, n_runs: int, n: int = 3) -> np.ndarray:
    """Counts of the first n emitted tokens over n_runs seeded speculative runs (gamma 2)."""
    counts = np.zeros(V**n, dtype=np.int64)
    for seed in range(n_runs):
        toks = run(speculative(pair.target, drafter, PROMPT, n, gamma=2, sampling=sampling, seed=seed)).tokens
        counts[int(np.ravel_multi_index(toks[:n], (V,) * n))] += 1
    return counts


@pytest.mark.slow
def test_speculative_law_through_the_adapter_equals_the_target_law(pair) -> None:
    sampling = SamplingConfig(temperature=1.0)
    expected = exact_joint(pair, sampling)
    counts = joint_counts(pair, ModelDrafter(pair.draft), sampling, 1200)
    stat, dof, pval = chi_square_gof(counts, expected)
    assert pval >= 1e-3, f"chi-square {stat:.1f} on {dof} dof, p = {pval:.2e}"


@pytest.mark.slow
def test_negative_control_wrong_q_fails(pair) -> None:
    sampling = SamplingConfig(temperature=1.0)
    counts = joint_counts(pair, UniformClaim(pair.draft), sampling, 400)
    stat, dof, pval = chi_square_gof(counts, exact_joint(pair, sampling))
    assert pval < 1e-3, f"the wrong q went undetected: chi-square {stat:.1f} on {dof} dof, p = {pval:.2e}"


def test_greedy_speculative_equals_greedy_autoregressive(pair) -> None:
    greedy = SamplingConfig(temperature=0.0)
    ar = run(autoregressive(pair.target, PROMPT, 20, sampling=greedy)).tokens
    for gamma in (1, 3):
        sp = run(speculative(pair.target, ModelDrafter(pair.draft), PROMPT, 20, gamma=gamma, sampling=greedy)).tokens
        assert sp == ar


def test_differing_tokenizers_are_refused(pair_dirs, tmp_path) -> None:
    swapped = {w: i for i, w in enumerate(WORDS)}
    swapped["a"], swapped["b"] = 2, 1
    other = save_tiny(tmp_path / "other", seed=2, vocab=swapped)
    with pytest.raises(TokenizerMismatch, match=r"tokenizers differ .*'a' is id 1 in the target but 2 in the draft"):
        load_hf_pair(str(pair_dirs[0]), str(other), device="cpu")
    bigger = save_tiny(tmp_path / "bigger", seed=3, vocab={**{w: i for i, w in enumerate(WORDS)}, "d": 4}, pad=1)
    with pytest.raises(TokenizerMismatch, match="1 only in the draft"):
        load_hf_pair(str(pair_dirs[0]), str(bigger), device="cpu")


def test_registry_loader_and_bad_paths(pair_dirs, tmp_path) -> None:
    p = load_pair(torch.device("cpu"), target=str(pair_dirs[0]), draft=str(pair_dirs[1]))
    assert p.name == "hf" and p.tokenizer.vocab_size == V and p.tokenizer.encode("a b c") == [1, 2, 3]
    with pytest.raises(ValueError, match="needs a target and a draft"):
        load_pair(torch.device("cpu"), target=str(pair_dirs[0]))
    with pytest.raises(HFUnavailable):
        load_hf_pair(str(tmp_path / "nowhere"), str(pair_dirs[1]), device="cpu")


def test_missing_transformers_says_what_to_install(monkeypatch) -> None:
    import builtins

    from gpu_demo.models import hf as hf_pair

    real_import = builtins.__import__

    def no_transformers(name, *args, **kwargs):
        if name == "transformers":
            raise ImportError("No module named 'transformers'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_transformers)
    with pytest.raises(HFUnavailable, match=r"pip install transformers=="):
        hf_pair.require_transformers()
