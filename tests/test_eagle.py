"""The feature-level (EAGLE-style) draft: exact through the shared decoder, and its state matches a recompute.

Tiny random-weight Llama targets (tied head, peaked laws) and tiny heads keep this fast; the same
EagleHead, EagleDrafter, speculative generator and rules run as with SmolLM2.

* greedy: speculative output equals greedy autoregressive output token for token, with accepted drafts,
  corrections and bonus tokens all occurring (so the catch-up path runs);
* state: at every round the drafter's q_1 and q_2 equal a from-scratch, cache-free recompute from the
  committed tokens' true target features (gpu_demo.training.eagle.unrolled_features, the training
  forward): feature reuse, rollback and catch-up are right, and training sees what drafting sees;
* law: the first three tokens of sampled speculative runs follow the target's exact law (chi-square over
  the 216 cells, p > 1e-3); the draft's q is zero on two of the six ids. Negative control: a drafter that
  reports q without its subset restriction (softmax over all six ids) must be rejected at p < 1e-3 with the
  same sample size, so the test has the power to see a wrongly reported q.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from eagle_support import exact_joint, tiny_head, tiny_target, trained_head

from gpu_demo.decode import autoregressive, run, speculative
from gpu_demo.drafters import Draft
from gpu_demo.models.eagle import EagleConfig, EagleDrafter, EagleHead, load_head, save_head
from gpu_demo.models.llama import Llama, LlamaConfig, init_random
from gpu_demo.sampler import SamplingConfig
from gpu_demo.training.eagle import unrolled_features
from specdec_core.stats import chi_square_gof

pytestmark = pytest.mark.usefixtures("one_torch_thread")

GREEDY = SamplingConfig(temperature=0.0)
T1 = SamplingConfig(temperature=1.0)
N_RUNS = 2000
P_REJECT = 1e-3


@pytest.fixture(scope="module")
def trained() -> tuple[Llama, EagleHead, list[float], list]:
    target = tiny_target(16, seed=2, scale=20.0)
    return (target, *trained_head(target, 12))


def test_training_on_the_targets_replies_raises_held_out_alpha(trained) -> None:
    _, _, (before, after), _ = trained
    assert after > before + 0.2 and after > 0.5, (before, after)


def test_left_padded_replies_keep_the_unpadded_features(trained) -> None:
    target, _, _, samples = trained
    for s in samples[:6]:  # prompts of 2, 3, 5, 8, 9, 12 tokens in one left-padded batch
        with torch.no_grad():
            f = target.norm(target.trunk(target.tok_embeddings(s.ids[:-1].view(1, -1))))[0]  # (L-1, C)
            logz = torch.logsumexp(target.forward_train(s.ids[:-1].view(1, -1))[0], -1)
        torch.testing.assert_close(s.feats.float(), f, atol=2e-2, rtol=2e-3)  # stored in float16
        torch.testing.assert_close(s.logz[s.prompt_len - 1 :], logz[s.prompt_len - 1 :], atol=1e-4, rtol=1e-5)
        assert torch.isnan(s.logz[: s.prompt_len - 1]).all()


def test_trunk_taps_are_the_residual_stream_after_each_listed_layer() -> None:
    import copy

    target = tiny_target(16, seed=6)  # 2 layers
    x = target.tok_embeddings(torch.tensor([[3, 1, 4, 1, 5, 9]]))  # (1, 6, C)
    first = copy.deepcopy(target)
    first.layers = first.layers[:1]  # the same weights, one layer: its output is the stream after layer 0
    with torch.no_grad():
        taps = dict.fromkeys([0, 1])
        top = target.trunk(x, taps)
        want0 = first.trunk(x)
    torch.testing.assert_close(taps[0], want0, atol=0, rtol=0)
    assert taps[1] is top and not torch.equal(taps[0], top)


# -------------------------------------------------------------------------------------------------- greedy


def test_greedy_speculative_equals_greedy_autoregressive(trained) -> None:
    target, head, _, _ = trained  # the trained head: long accepted runs; a random one: many corrections
    kinds = set()
    for h, gamma, prompt in itertools.product([head, tiny_head(target, 12)], [1, 2, 4],
                                               ([5], [3, 1, 4, 1, 5], list(range(16)))):
        want = run(autoregressive(target, prompt, 60, GREEDY)).tokens
        res = run(speculative(target, EagleDrafter(target, h), prompt, 60, gamma, GREEDY))
        assert res.tokens == want, f"prompt {prompt}, gamma {gamma}"
        kinds |= {k for e in res.events for k in e.kinds}
    assert {"accepted", "correction", "bonus"} <= kinds, kinds  # every path of the round ran


def test_one_token_prompt_has_no_feature_so_the_first_round_drafts_nothing() -> None:
    target = tiny_target(16)
    drafter = EagleDrafter(target, tiny_head(target, 12))
    events = list(speculative(target, drafter, [7], 10, 3, GREEDY))
    assert events[0].drafted == [] and events[0].kinds == ["target"]
    assert all(e.k >= 1 for e in events[1:-1])


# --------------------------------------------------------------------------------------------------- state


class Recording(EagleDrafter):
    """An EagleDrafter that records (committed context, draft) at every propose."""

    def __init__(self, target: Llama, head: EagleHead) -> None:
        super().__init__(target, head)
        self.log: list[tuple[torch.Tensor, Draft]] = []

    def propose(self, context, gamma, sampling, generator) -> Draft:
        d = super().propose(context, gamma, sampling, generator)
        self.log.append((context.clone(), d))
        return d


def _recomputed_q(target: Llama, head: EagleHead, context: torch.Tensor, drafted: torch.Tensor) -> list[torch.Tensor]:
    """q_1, q_2 (softmax over S, zero elsewhere) from the true features of context, cache-free."""
    P = context.numel() - 1
    with torch.no_grad():
        f = target.norm(target.trunk(target.tok_embeddings(context.view(1, -1))))[0]  # (P+1, C) true features
        feats = torch.cat([f[:P], torch.zeros(1, f.shape[1])]).unsqueeze(0)  # slot P+1's own f_P is never read
        toks = torch.cat([context[1:], drafted[:1]]).view(1, -1)  # x_1..x_P, d_1
        gs = unrolled_features(head, feats, toks, 2)
        return [torch.softmax(head.logits(gs[0][0, P - 1]), -1), torch.softmax(head.logits(gs[1][0, P]), -1)]


@pytest.mark.parametrize("sampling", [GREEDY, T1], ids=["greedy", "T=1"])
def test_drafter_laws_equal_a_cache_free_recompute_from_true_features(trained, sampling: SamplingConfig) -> None:
    target, head, _, _ = trained
    drafter = Recording(target, head)
    events = run(speculative(target, drafter, [2, 7, 1, 8, 2, 8], 80, 3, sampling, seed=11)).events
    assert sum(e.n_accepted == e.k for e in events) >= 2  # full acceptances: the catch-up path is checked
    checked = 0
    for context, d in drafter.log:
        if d.tokens.numel() < 2:
            continue
        q1, q2 = _recomputed_q(target, head, context, d.tokens)
        want = [q1, q2] if not sampling.greedy else [torch.nn.functional.one_hot(d.tokens[i], 16).float()
                                                     for i in range(2)]
        torch.testing.assert_close(d.q[0], want[0], atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(d.q[1], want[1], atol=1e-5, rtol=1e-4)
        if sampling.greedy:  # the argmax of the recomputed law is what was drafted
            assert int(q1.argmax()) == int(d.tokens[0]) and int(q2.argmax()) == int(d.tokens[1])
        checked += 1
    assert checked >= 5


def test_q_is_zero_outside_the_subset_and_sums_to_one() -> None:
    target = tiny_target(16)
    head = tiny_head(target, 10)
    drafter = Recording(target, head)
    run(speculative(target, drafter, [1, 2, 3], 20, 3, T1, seed=0))
    outside = torch.ones(16, dtype=torch.bool)
    outside[head.out_ids] = False
    for _, d in drafter.log:
        if d.tokens.numel():
            assert torch.all(d.q[:, outside] == 0)
            torch.testing.assert_close(d.q.sum(-1), torch.ones(d.q.shape[0]))
            assert torch.all(~outside[d.tokens])  # only ids of S are ever proposed


@pytest.mark.parametrize("sampling", [GREEDY, T1, SamplingConfig(0.7, top_k=3), SamplingConfig(1.3, top_p=0.8),
                                      SamplingConfig(1.0, top_k=16)], ids=["greedy", "T=1", "top-k", "top-p", "k>|S|"])
def test_drawing_over_the_subset_gives_the_full_vocabulary_law(sampling: SamplingConfig) -> None:
    """head.draw processes S's logits only; its q must be next_token's law over all V logits (-inf outside S)."""
    from gpu_demo.sampler import next_token

    target = tiny_target(16)
    head = tiny_head(target, 10)
    gen = torch.Generator().manual_seed(3)
    for g in torch.randn(20, target.cfg.dim, generator=gen):
        x, q = head.draw(g, sampling, gen)
        _, want = next_token(head.logits(g), sampling, gen)
        torch.testing.assert_close(q, want, atol=1e-6, rtol=1e-5)
        assert q[x] > 0 and bool((head.out_ids == x).any())
        if sampling.greedy:
            assert int(x) == int(head.logits(g).argmax())


def test_save_and_load_round_trip(tmp_path) -> None:
    target = tiny_target(16)
    head = tiny_head(target, 12)
    save_head(head, {"note": "test"}, tmp_path, "h")
    back = load_head(target, tmp_path, "h", max_len=64)
    torch.testing.assert_close(back.state_dict(), head.state_dict())
    a = run(speculative(target, EagleDrafter(target, head), [1, 2, 3], 30, 3, T1, seed=5)).tokens
    b = run(speculative(target, EagleDrafter(target, back), [1, 2, 3], 30, 3, T1, seed=5)).tokens
    assert a == b


def test_missing_asset_is_a_clear_value_error(tmp_path) -> None:
    with pytest.raises(ValueError, match="train --which smollm2-eagle"):
        load_head(tiny_target(16), tmp_path, "absent")


def test_head_refuses_a_target_of_another_width() -> None:
    head = EagleHead(EagleConfig(dim=32, n_heads=4, n_kv_heads=2, hidden_dim=48, vocab_size=16, n_out=8))
    wide = init_random(LlamaConfig(vocab_size=16, dim=64, n_layers=1, n_heads=4, n_kv_heads=2, hidden_dim=64,
                                   max_seq_len=32), max_len=32)
    with pytest.raises(ValueError, match="dim 32"):
        head.attach(wide)


# ----------------------------------------------------------------------------------------------------- law

V = 6
PROMPT = [2, 4, 1]


class UnrestrictedQ(EagleDrafter):
    """The mistake: samples from q over S but reports a law with mass outside S (where q is really 0)."""

    def propose(self, context, gamma, sampling, generator) -> Draft:
        d = super().propose(context, gamma, sampling, generator)
        return Draft(d.tokens, 0.5 * d.q + 0.5 / V)  # q mixed with uniform: mass outside S, less on S


def sample_joint(target: Llama, drafter: EagleDrafter, gamma: int) -> tuple[np.ndarray, float]:
    """Counts of the first three emitted tokens over N_RUNS seeded runs, and the pooled acceptance rate."""
    counts = np.zeros(V**3, dtype=np.int64)
    acc = drafted = 0
    for seed in range(N_RUNS):
        events = list(speculative(target, drafter, PROMPT, 3, gamma, T1, seed=seed, topk=0))
        toks = [t for e in events for t in e.emitted]
        counts[toks[0] * V * V + toks[1] * V + toks[2]] += 1
        acc += sum(e.n_accepted for e in events)
        drafted += sum(min(e.k, e.n_accepted + 1) for e in events)
    return counts, acc / max(1, drafted)


@pytest.fixture(scope="module")
def law_pair() -> tuple[Llama, EagleHead]:
    target = tiny_target(V, seed=7, scale=4.0)
    return target, trained_head(target, 4, steps=60)[0]  # q = 0 on two of the six ids


def test_sampled_speculative_law_matches_the_target(law_pair) -> None:
    target, head = law_pair
    counts, alpha = sample_joint(target, EagleDrafter(target, head), gamma=2)
    assert 0.2 < alpha < 0.95, alpha  # drafts are often accepted and also rejected: both branches of the rule run
    stat, dof, pval = chi_square_gof(counts, exact_joint(target, PROMPT, V))
    assert dof > 20
    assert pval > P_REJECT, f"chi2={stat:.1f} dof={dof} p={pval:.2e}"


def test_negative_control_unrestricted_q_is_rejected(law_pair) -> None:
    target, head = law_pair
    counts, _ = sample_joint(target, UnrestrictedQ(target, head), gamma=2)
    stat, dof, pval = chi_square_gof(counts, exact_joint(target, PROMPT, V))
    assert pval < P_REJECT, f"the wrongly reported q passed: chi2={stat:.1f} dof={dof} p={pval:.2e}"


def test_bench_chat_prompts_are_held_out_from_training() -> None:
    from gpu_demo.training.eagle import EagleTrainConfig
    from gpu_demo.training.eagle_data import BENCH_CHAT_PROMPTS, TOPICS, build_prompts

    train = build_prompts(EagleTrainConfig.n_prompts, EagleTrainConfig.seed)
    assert len(BENCH_CHAT_PROMPTS) >= 8 and not set(BENCH_CHAT_PROMPTS) & set(train)
    assert not [(t, p) for t in TOPICS for p in BENCH_CHAT_PROMPTS if t in p.lower()]
