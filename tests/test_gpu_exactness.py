"""Exactness of the speculative decoder, checked statistically through the real decoder code path.

Target and draft are first-order Markov "models" whose logits are fixed tables over V = 6 symbols:
they implement the same DecoderLM protocol as the transformers, so the same ``speculative`` generator,
``ModelDrafter`` and exact rule run. The law of the first three emitted tokens is then enumerable:
P(x1, x2, x3) = p(x1 | s) p(x2 | x1) p(x3 | x2), with p the *processed* target law (numpy reference
``specdec_core.sampling.sampling_distribution``). Pearson's chi-square over the 216 cells (low cells
pooled) must not reject at p < 1e-3; two mistaken variants must.

Power: the same N = 2000 runs per setting must reject both mistakes at p < 1e-3 (the negative
controls below), so a sample this size does detect departures of that size; the draft's own law is
far from the target's (TV > 0.2, asserted), so agreement is not vacuous.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch
from doubles import MarkovLM

import gpu_demo.decode as decode_mod
from gpu_demo.decode import speculative
from gpu_demo.drafters import Draft, Drafter, ModelDrafter
from gpu_demo.sampler import SamplingConfig, Verdict, logits_to_probs
from specdec_core.sampling import sampling_distribution
from specdec_core.stats import chi_square_gof

V = 6
N_RUNS = 2000
P_REJECT = 1e-3
PROMPT = [2]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _tables() -> tuple[np.ndarray, np.ndarray]:
    """Target and draft logit tables: related but clearly different laws (alpha well inside (0, 1))."""
    rng = np.random.default_rng(7)
    target = rng.normal(0.0, 1.3, size=(V, V))
    draft = target + rng.normal(0.0, 1.1, size=(V, V))
    return target, draft


def exact_joint(table: np.ndarray, cfg: SamplingConfig, first: int) -> np.ndarray:
    """P(x1, x2, x3) flattened over V^3 cells, from the numpy reference of the processed law."""
    law = np.stack([sampling_distribution(table[s], cfg.temperature, cfg.top_k, cfg.top_p) for s in range(V)])
    joint = law[first][:, None, None] * law[:, :, None] * law[None, :, :]  # (V, V, V)
    # law[:, :, None] is p(x2 | x1) laid out (x1, x2, 1); law[None] is p(x3 | x2) laid out (1, x2, x3)
    return joint.reshape(-1)


def sample_joint(
    target: MarkovLM, drafter: Drafter, gamma: int, cfg: SamplingConfig, runs: int = N_RUNS,
    draft_cfg: SamplingConfig | None = None,
) -> np.ndarray:
    """Counts over V^3 cells of the first three tokens of `runs` independent seeded speculative runs."""
    counts = np.zeros(V**3, dtype=np.int64)
    for seed in range(runs):
        events = speculative(target, drafter, PROMPT, 3, gamma=gamma, sampling=cfg, draft_sampling=draft_cfg,
                             seed=seed, topk=0)
        toks = [t for e in events for t in e.emitted]
        counts[toks[0] * V * V + toks[1] * V + toks[2]] += 1
    return counts


SETTINGS = {
    "T=1": SamplingConfig(temperature=1.0),
    "top-k 3": SamplingConfig(temperature=1.0, top_k=3),
}


@pytest.mark.slow
@pytest.mark.parametrize("gamma", [1, 2, 4])
@pytest.mark.parametrize("setting", list(SETTINGS))
def test_speculative_law_matches_target(gamma: int, setting: str) -> None:
    t_table, d_table = _tables()
    cfg = SETTINGS[setting]
    target, draft = MarkovLM(t_table), ModelDrafter(MarkovLM(d_table))
    counts = sample_joint(target, draft, gamma, cfg)
    stat, dof, pval = chi_square_gof(counts, exact_joint(t_table, cfg, PROMPT[0]))
    assert dof > 20
    assert pval > P_REJECT, f"gamma={gamma} {setting}: chi2={stat:.1f} dof={dof} p={pval:.2e}"


def test_plain_draft_law_differs_from_target() -> None:
    """The draft alone has a different law, so passing above is not vacuous (TV > 0.2)."""
    t_table, d_table = _tables()
    for cfg in SETTINGS.values():
        tv = 0.5 * np.abs(exact_joint(t_table, cfg, PROMPT[0]) - exact_joint(d_table, cfg, PROMPT[0])).sum()
        assert tv > 0.2


def _resample_from_p(
    logits: torch.Tensor, q: torch.Tensor, drafted: torch.Tensor, sampling: SamplingConfig, gen: torch.Generator | None
) -> Verdict:
    """Mistake 1: on rejection draw from p instead of the residual (p - q)+."""
    p = logits_to_probs(logits, sampling)  # (k+1, V)
    k = drafted.shape[0]
    idx = torch.arange(k)
    p_x, q_x = p[idx, drafted], q[idx, drafted]
    u = torch.rand(k, generator=gen)
    acc = ((u * q_x < p_x) & (q_x > 0)).tolist()
    n = next((i for i, a in enumerate(acc) if not a), k)
    y = int(torch.multinomial(p[n], 1, generator=gen))
    return Verdict(n, y, p, p_x.tolist(), q_x.tolist(), u.tolist(), acc)


class RawQDrafter(Drafter):
    """Mistake 2: samples from the processed q but reports the raw softmax q to the verifier.

    ``draw`` overrides the settings the draft samples with (None: the run's own).
    """

    draw: SamplingConfig | None = None

    def __init__(self, model: MarkovLM) -> None:
        self.inner = ModelDrafter(model)
        self.table = model.table
        self.vocab_size = model.vocab_size
        self.max_seq_len = model.max_seq_len

    def begin(self, prompt: torch.Tensor) -> None:
        self.inner.begin(prompt)

    def propose(
        self, context: torch.Tensor, gamma: int, sampling: SamplingConfig, generator: torch.Generator | None
    ) -> Draft:
        d = self.inner.propose(context, gamma, self.draw or sampling, generator)
        prev = torch.cat([context[-1:], d.tokens[:-1]])  # (k,) token each drafted position conditions on
        raw = logits_to_probs(self.table[prev], SamplingConfig(temperature=1.0))  # (k, V), no top-k
        return Draft(d.tokens, raw)

    def commit(self, n_accepted: int, next_token: int) -> None:
        self.inner.commit(n_accepted, next_token)


@pytest.mark.parametrize("gamma", [2])
def test_negative_control_resample_from_p_fails(gamma: int, monkeypatch: pytest.MonkeyPatch) -> None:
    t_table, d_table = _tables()
    cfg = SETTINGS["T=1"]
    monkeypatch.setattr(decode_mod, "exact_rule", _resample_from_p)
    counts = sample_joint(MarkovLM(t_table), ModelDrafter(MarkovLM(d_table)), gamma, cfg)
    stat, dof, pval = chi_square_gof(counts, exact_joint(t_table, cfg, PROMPT[0]))
    assert pval < P_REJECT, f"the mistaken rule passed: chi2={stat:.1f} dof={dof} p={pval:.2e}"


@pytest.mark.parametrize("gamma", [2])
def test_negative_control_raw_q_with_processed_p_fails(gamma: int) -> None:
    t_table, d_table = _tables()
    cfg = SETTINGS["top-k 3"]
    counts = sample_joint(MarkovLM(t_table), RawQDrafter(MarkovLM(d_table)), gamma, cfg)
    stat, dof, pval = chi_square_gof(counts, exact_joint(t_table, cfg, PROMPT[0]))
    assert pval < P_REJECT, f"the mistaken q passed: chi2={stat:.1f} dof={dof} p={pval:.2e}"


def test_exact_joint_is_a_distribution_over_all_cells() -> None:
    t_table, _ = _tables()
    for cfg in SETTINGS.values():
        joint = exact_joint(t_table, cfg, PROMPT[0])
        assert joint.shape == (V**3,) and abs(joint.sum() - 1) < 1e-12
    # spot-check the layout against a direct product for one cell
    law = np.stack([sampling_distribution(t_table[s]) for s in range(V)])
    for a, b, c in itertools.islice(itertools.product(range(V), repeat=3), 0, V**3, 37):
        want = law[PROMPT[0], a] * law[a, b] * law[b, c]
        assert abs(exact_joint(t_table, SETTINGS["T=1"], PROMPT[0])[a * V * V + b * V + c] - want) < 1e-15


# --------------------------------------------- a greedy draft under a sampling target

GREEDY = SamplingConfig(temperature=0.0)


class GreedyDraftSoftmaxQ(RawQDrafter):
    """The old defect: the draft picks its argmax but reports its T = 1 softmax as q."""

    draw = GREEDY


def test_greedy_draft_reports_one_hot_q() -> None:
    """A greedy draft's q is the law it drew from: one-hot at its argmax."""
    _, d_table = _tables()
    draft = ModelDrafter(MarkovLM(d_table))
    draft.begin(torch.tensor(PROMPT))
    d = draft.propose(torch.tensor(PROMPT), 3, GREEDY, torch.Generator().manual_seed(0))
    assert torch.equal(d.q.sum(-1), torch.ones(3)) and torch.equal(d.q.max(-1).values, torch.ones(3))
    assert torch.equal(d.q.argmax(-1), d.tokens)


@pytest.mark.parametrize("gamma", [1, 3])
def test_greedy_draft_under_sampled_target_keeps_the_target_law(gamma: int) -> None:
    t_table, d_table = _tables()
    cfg = SETTINGS["T=1"]
    counts = sample_joint(MarkovLM(t_table), ModelDrafter(MarkovLM(d_table)), gamma, cfg, draft_cfg=GREEDY)
    stat, dof, pval = chi_square_gof(counts, exact_joint(t_table, cfg, PROMPT[0]))
    assert dof > 20
    assert pval > P_REJECT, f"gamma={gamma}: chi2={stat:.1f} dof={dof} p={pval:.2e}"


def test_negative_control_greedy_draft_with_softmax_q_fails() -> None:
    t_table, d_table = _tables()
    cfg = SETTINGS["T=1"]
    counts = sample_joint(MarkovLM(t_table), GreedyDraftSoftmaxQ(MarkovLM(d_table)), 2, cfg)
    stat, dof, pval = chi_square_gof(counts, exact_joint(t_table, cfg, PROMPT[0]))
    assert pval < P_REJECT, f"the mislabelled q passed: chi2={stat:.1f} dof={dof} p={pval:.2e}"
