"""Prompt-lookup drafting: its proposals, and exactness of the emitted law through the shared decoder.

Exactness: the target is a first-order Markov "model" with a fixed logit table (V = 4), so under the
exact rule the emitted tokens form a Markov chain with transition law p(. | previous token), however
the lookup draft (which reads the whole context) chose its proposals. One long seeded speculative run
(N = 3000 tokens) gives transition counts; Pearson's chi-square summed over the rows (12 dof) must
have p >= 1e-3. The negative control reports q = uniform for the same deterministic proposals (the
mistake "q is not the law the draft sampled from": it accepts x with min(1, p(x) V) instead of p(x));
it must fail the same test. Its transition law is pushed toward the tokens the lookup proposes: with
this table and seed, rows move by 0.04 to 0.09 in total variation and the statistic is 116 on 12 dof
(the correct drafter: 10.9) against a 1e-3 critical value of 32.9, a noncentrality of about 100, so
the control fails with power ~ 1 at N = 3000.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from doubles import MarkovLM

from gpu_demo.decode import autoregressive, run, speculative
from gpu_demo.drafters import Draft, LookupDrafter, find_continuation, one_hot_q, propose_ids
from gpu_demo.sampler import SamplingConfig, logits_to_probs
from specdec_core.stats import chi2_sf, chi_square_gof

V = 4
PROMPT = [0, 1, 2, 3, 0, 1, 2, 3, 0, 1]


def markov_table(seed: int = 7) -> torch.Tensor:
    """A fixed table with moderately peaked rows that put real mass on the lookup's proposals."""
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(V, V, generator=g) * 1.2
    t[torch.arange(V), (torch.arange(V) + 1) % V] += 1.0  # the prompt's cycle 0->1->2->3 is likely
    return t


def transition_law(table: torch.Tensor, sampling: SamplingConfig) -> np.ndarray:
    """p(x | prev) for every prev, processed as the decoder does, in float64 and renormalised: (V, V)."""
    p = logits_to_probs(table.double(), sampling).double().numpy()
    return p / p.sum(-1, keepdims=True)


def transition_counts(tokens: list[int]) -> np.ndarray:
    """Counts of (previous, next) pairs along tokens: (V, V)."""
    c = np.zeros((V, V), dtype=np.int64)
    np.add.at(c, (tokens[:-1], tokens[1:]), 1)
    return c


def markov_chi_square(counts: np.ndarray, law: np.ndarray) -> tuple[float, int, float]:
    """Pearson's chi-square summed over rows, each against its own law; a count on a zero-probability cell fails."""
    stat, dof = 0.0, 0
    for row, p in zip(counts, law):
        if row.sum() == 0:
            continue
        s, d, _ = chi_square_gof(row, p)
        stat, dof = stat + s, dof + d
    return stat, dof, chi2_sf(stat, dof) if np.isfinite(stat) else 0.0


def speculative_tokens(target, drafter, sampling: SamplingConfig, gamma: int, n: int, seed: int) -> list[int]:
    """Last prompt token followed by n tokens of one seeded speculative run."""
    return [PROMPT[-1]] + run(speculative(target, drafter, PROMPT, n, gamma=gamma, sampling=sampling, seed=seed)).tokens


class UniformClaimLookup(LookupDrafter):
    """Negative control: the same deterministic proposals, but reporting q = uniform instead of one-hot."""

    def propose(self, context, gamma, sampling, generator) -> Draft:
        d = super().propose(context, gamma, sampling, generator)
        return Draft(d.tokens, torch.full_like(d.q, 1.0 / self.vocab_size))


# ---------------------------------------------------------------- proposals ----
def test_continuation_of_latest_longest_match() -> None:
    ctx = np.array([5, 6, 7, 8, 9, 1, 6, 7, 2, 5, 6, 7])
    # suffix 3-gram (5, 6, 7) occurs at 0 -> continue with 8, 9, 1; the 2-gram (6, 7) would give 2
    assert find_continuation(ctx, 3).tolist() == [8, 9, 1]
    assert find_continuation(ctx, 3, max_ngram=2).tolist() == [2, 5, 6]  # latest (6, 7) is at 6
    assert find_continuation(ctx, 2, max_ngram=1).tolist() == [2, 5]  # latest earlier 7 is at 7
    assert find_continuation(np.array([1, 2, 3]), 4).tolist() == []  # 3 never occurred before
    assert find_continuation(ctx, 0).tolist() == []


def test_proposal_extends_through_a_repeating_pattern() -> None:
    # (5, 6) recurs at 0; its continuation runs into the suffix, then the lookup repeats from there
    assert propose_ids(np.array([5, 6, 7, 5, 6]), 5).tolist() == [7, 5, 6, 7, 5]
    assert propose_ids(np.array([1, 2, 3]), 4).tolist() == []


def test_drafter_returns_one_hot_q_on_the_context_device() -> None:
    d = LookupDrafter(vocab_size=10)
    ctx = torch.tensor([1, 2, 3, 4, 1, 2])
    draft = d.propose(ctx, 3, SamplingConfig(), None)
    assert draft.tokens.tolist() == [3, 4, 1]
    assert draft.q.shape == (3, 10) and draft.q.dtype == torch.float32
    assert torch.equal(draft.q, one_hot_q(draft.tokens, 10))
    assert draft.q.sum(-1).tolist() == [1.0, 1.0, 1.0]
    assert d.propose(torch.tensor([1, 2, 3]), 3, SamplingConfig(), None).tokens.numel() == 0
    with pytest.raises(ValueError, match="min_ngram"):
        LookupDrafter(10, max_ngram=1, min_ngram=2)


# --------------------------------------------------------------- exactness ----
@pytest.mark.parametrize(
    "sampling, gamma",
    [
        (SamplingConfig(temperature=1.0), 2),
        (SamplingConfig(temperature=1.0), 4),
        (SamplingConfig(temperature=0.8, top_k=3), 1),
    ],
    ids=["T1-gamma2", "T1-gamma4", "T0.8-topk3-gamma1"],
)
def test_lookup_speculative_law_equals_target_law(sampling: SamplingConfig, gamma: int) -> None:
    table = markov_table()
    target = MarkovLM(table, max_seq_len=4000)
    toks = speculative_tokens(target, LookupDrafter(V), sampling, gamma, 3000, seed=11)
    stat, dof, pval = markov_chi_square(transition_counts(toks), transition_law(table, sampling))
    assert pval >= 1e-3, f"chi-square {stat:.1f} on {dof} dof, p = {pval:.2e}"


def test_negative_control_uniform_q_claim_fails() -> None:
    table, sampling = markov_table(), SamplingConfig(temperature=1.0)
    target = MarkovLM(table, max_seq_len=4000)
    toks = speculative_tokens(target, UniformClaimLookup(V), sampling, 2, 3000, seed=11)
    stat, dof, pval = markov_chi_square(transition_counts(toks), transition_law(table, sampling))
    assert pval < 1e-3, f"the wrong q went undetected: chi-square {stat:.1f} on {dof} dof, p = {pval:.2e}"


def test_lookup_drafts_are_really_used() -> None:
    """The exactness test is not vacuous: proposals are made and both accepted and rejected."""
    events = run(speculative(MarkovLM(markov_table()), LookupDrafter(V), PROMPT, 30, gamma=3, seed=1)).events
    kinds = [k for e in events for k in e.kinds]
    assert sum(e.k for e in events) > 10
    assert "accepted" in kinds and "correction" in kinds


def test_lookup_greedy_equals_autoregressive_greedy() -> None:
    greedy = SamplingConfig(temperature=0.0)
    target = MarkovLM(markov_table(3))
    ar = run(autoregressive(target, PROMPT, 25, sampling=greedy)).tokens
    for gamma in (1, 3, 6):
        sp = run(speculative(target, LookupDrafter(V), PROMPT, 25, gamma=gamma, sampling=greedy)).tokens
        assert sp == ar


def test_a_round_with_nothing_to_propose_emits_a_plain_target_token() -> None:
    """No n-gram of the prompt recurs, so the first round drafts nothing: its token is a 'target' token, not a bonus."""
    events = run(speculative(MarkovLM(markov_table()), LookupDrafter(V), [0, 1, 2, 3], 8, gamma=3, seed=0)).events
    assert events[0].k == 0 and events[0].kinds == ["target"] and len(events[0].emitted) == 1
    assert all(e.kinds[-1] == "target" for e in events if e.k == 0)
    assert any(e.k > 0 for e in events)  # later rounds do find a match and draft
