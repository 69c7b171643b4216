"""gpu_demo.sampler.sample (the exponential race) draws exactly from its row's law: chi-square, with controls.

Every sampled token in the engine (the target's autoregressive draw, each drafted token, the
correction from the residual and the bonus) goes through this one function, so it is tested alone
here, at a power that sees a 1% shift of mass, and through the decoder in test_gpu_exactness.py.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from gpu_demo.sampler import SamplingConfig, exact_rule, sample
from specdec_core.stats import chi_square_gof

T1 = SamplingConfig(temperature=1.0)

N = 200_000
P_REJECT = 1e-3
# Unnormalised weights with zeros at both ends and in the middle (sample() must not need a sum of 1).
WEIGHTS = torch.tensor([0.0, 3.0, 1.0, 0.0, 0.5, 0.25, 0.25, 2.0, 0.0])


def _law() -> np.ndarray:
    w = WEIGHTS.double().numpy()
    return w / w.sum()


def _counts(draws: torch.Tensor, v: int) -> np.ndarray:
    return np.bincount(draws.reshape(-1).numpy(), minlength=v)


def test_sample_matches_the_law_and_never_draws_a_zero() -> None:
    gen = torch.Generator().manual_seed(0)
    draws = sample(WEIGHTS.expand(N, -1), gen)  # (N,)
    assert draws.shape == (N,) and draws.dtype == torch.long
    counts = _counts(draws, WEIGHTS.numel())
    law = _law()
    assert counts[law == 0].sum() == 0
    assert chi_square_gof(counts, law)[2] > P_REJECT


def test_negative_control_a_one_percent_shift_is_rejected() -> None:
    """The same draws tested against a law with 1% of the mass moved from token 1 to token 7 must fail."""
    gen = torch.Generator().manual_seed(0)
    counts = _counts(sample(WEIGHTS.expand(N, -1), gen), WEIGHTS.numel())
    wrong = _law()
    wrong[1] -= 0.01
    wrong[7] += 0.01
    assert chi_square_gof(counts, wrong)[2] < P_REJECT


def test_sample_keeps_batch_shape_and_rows_are_independent_laws() -> None:
    """A (2, 3, V) batch: each row follows its own one-hot or two-point law."""
    probs = torch.zeros(2, 3, 4)
    probs[0, 0, 2] = 1.0
    probs[0, 1, 0] = 1.0
    probs[0, 2, 3] = 1.0
    probs[1, :, 1] = 0.5
    probs[1, :, 3] = 0.5
    gen = torch.Generator().manual_seed(1)
    out = sample(probs, gen)
    assert out.shape == (2, 3)
    assert out[0].tolist() == [2, 0, 3]
    assert set(out[1].tolist()) <= {1, 3}


def test_a_uniform_draw_of_exactly_zero_cannot_pick_a_zero_probability_token(monkeypatch: pytest.MonkeyPatch) -> None:
    """u = 0 on every entry of the support (E = inf without the guard) must still return a supported token."""
    def zeros_on_support(shape, generator=None, device=None, dtype=None):
        return torch.tensor([0.5, 0.0, 0.5], dtype=dtype).expand(shape).clone()

    monkeypatch.setattr(torch, "rand", zeros_on_support)
    assert sample(torch.tensor([0.0, 1.0, 0.0]), None).item() == 1


def test_same_generator_seed_gives_the_same_draws() -> None:
    a = sample(WEIGHTS.expand(100, -1), torch.Generator().manual_seed(7))
    b = sample(WEIGHTS.expand(100, -1), torch.Generator().manual_seed(7))
    c = sample(WEIGHTS.expand(100, -1), torch.Generator().manual_seed(8))
    assert torch.equal(a, b) and not torch.equal(a, c)


@pytest.mark.parametrize("case", ["residual", "empty residual", "bonus"])
def test_exact_rule_next_token_law(case: str) -> None:
    """One-position rounds (k = 1) with the draft token forced: the next token follows (p - q)+, p, or p_2."""
    p = torch.tensor([[0.5, 0.3, 0.2, 0.0], [0.1, 0.2, 0.3, 0.4]])  # (k+1, V)
    if case == "residual":  # x = 0 with q(0) = 1 is rejected w.p. 1 - 0.5; residual (p - q)+ = [0, .3, .2, 0]
        q, x, law = torch.tensor([[1.0, 0.0, 0.0, 0.0]]), 0, np.array([0.0, 0.6, 0.4, 0.0])
    elif case == "empty residual":  # q == p, so (p - q)+ is empty; x = 3 has q(3) = 0, which always rejects
        q, x, law = p[:1].clone(), 3, np.array([0.5, 0.3, 0.2, 0.0])
    else:  # x = 0 with q(0) = p(0) is always accepted: the bonus comes from p[1]
        q, x, law = p[:1].clone(), 0, np.array([0.1, 0.2, 0.3, 0.4])
    gen = torch.Generator().manual_seed(3)
    drafted = torch.tensor([x])
    nxt = []
    for _ in range(4000):
        v = exact_rule(p.log(), q, drafted, T1, gen)  # logits = log p at T = 1: the processed law is p
        if (v.n_accepted == 0) == (case != "bonus"):
            nxt.append(v.next_token)
    counts = np.bincount(nxt, minlength=4)
    assert len(nxt) > 1500
    assert counts[law == 0].sum() == 0
    assert chi_square_gof(counts, law)[2] > P_REJECT
