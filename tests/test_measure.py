"""specdec_core.measure against hand-computed rounds, the engine's own summaries, and the algebra."""

from __future__ import annotations

import math

import numpy as np
import pytest

from specdec_core import algebra, measure

# Four rounds at gamma 3 (k drafted, n accepted, emitted = n + 1):
#   (3, 3) bonus; (3, 0) rejected at 1; (3, 2) rejected at 3; (2, 1) a truncated last round.
K, N = [3, 3, 3, 2], [3, 0, 2, 1]
E = [n + 1 for n in N]


def test_positional_counts_by_hand():
    reached, acc = measure.positional_counts(K, N, 3)
    # position 1: all 4 reached, accepted by rounds 1, 3, 4; position 2: rounds 1, 3, 4 reach it
    # (round 4 has k = 2 >= 2 and n = 1 >= 1), rounds 1 and 3 accept; position 3: rounds 1 and 3 reach it
    # (round 4 drafted only 2), only round 1 accepts.
    assert reached.tolist() == [4, 3, 2] and acc.tolist() == [3, 2, 1]
    assert measure.alpha_by_position(K, N, 3).tolist() == pytest.approx([3 / 4, 2 / 3, 1 / 2])
    assert measure.pooled_alpha(K, N, 3) == pytest.approx(6 / 9)


def test_accepted_length_counts_use_full_rounds_only():
    assert measure.accepted_length_counts(K, E, 3).tolist() == [1, 0, 1, 1]  # N = 1, 3, 4; the k = 2 round is left out


def test_unreached_positions_are_nan_then_zero():
    a = measure.alpha_by_position([3, 3], [0, 0], 3)
    assert a[0] == 0.0 and math.isnan(a[1]) and math.isnan(a[2])
    assert measure.fill_unreached(a).tolist() == [0.0, 0.0, 0.0]
    assert math.isnan(measure.pooled_alpha([], [], 3))


def test_acceptance_probability_edges():
    assert measure.acceptance_probability([0.2, 0.5, 0.3, 0.0], [0.4, 0.5, 0.0, 0.1]).tolist() == [0.5, 1.0, 0.0, 0.0]


def test_summarise_matches_the_algebra_by_hand():
    draft_s = [0.3, 0.3, 0.3, 0.2]  # 0.1 s per drafted token
    verify_s = [1.2, 1.2, 1.2, 1.2]  # 1.2 s per round
    base_step = [1.0] * 10  # 1 s per baseline token -> c = 0.1, v = 1.2
    spec_wall = [2.0, 1.0, 1.5, 1.0]  # 5.5 s for 4 + 1 + 3 + 2 = 10 tokens
    base_wall = [1.1] * 10
    m = measure.summarise(3, K, N, E, draft_s, verify_s, spec_wall, base_step, base_wall)
    assert (m.c, m.v) == (pytest.approx(0.1), pytest.approx(1.2))
    assert m.tokens == 10 and m.rounds == 4 and m.tokens_per_pass == pytest.approx(2.5)
    alphas = [3 / 4, 2 / 3, 1 / 2]
    e_n = 1 + 3 / 4 + (3 / 4) * (2 / 3) + (3 / 4) * (2 / 3) * (1 / 2)
    assert m.expected_tokens == pytest.approx(e_n)
    assert m.predicted_speedup == pytest.approx(e_n / (3 * 0.1 + 1.2))
    assert m.predicted_speedup == pytest.approx(algebra.speedup_positional(alphas, 0.1, 1.2))
    assert m.predicted_speedup_const == pytest.approx(float(algebra.speedup(6 / 9, 3, 0.1, 1.2)))
    assert m.spec_tokens_per_s == pytest.approx(10 / 5.5) and m.base_tokens_per_s == pytest.approx(1 / 1.1)
    assert m.measured_speedup == pytest.approx(1.1 / 0.55)
    assert m.pmf_const.tolist() == pytest.approx(algebra.accepted_length_pmf(6 / 9, 3).tolist())
    assert m.pmf_positional.sum() == pytest.approx(1.0)


def test_summarise_without_baseline_is_nan_not_an_error():
    m = measure.summarise(3, K, N, E, [0.3] * 4, [1.0] * 4, [1.0] * 4, [], [])
    assert math.isnan(m.c) and math.isnan(m.predicted_speedup) and math.isnan(m.measured_speedup)
    assert m.tokens_per_pass == pytest.approx(2.5)


def test_bad_rounds_raise_clear_errors():
    with pytest.raises(ValueError, match="accepted <= drafted"):
        measure.positional_counts([2], [3], 3)
    with pytest.raises(ValueError, match="integers >= 0"):
        measure.positional_counts([-1], [0], 3)
    with pytest.raises(ValueError, match="finite times"):
        measure.per_token_seconds([float("nan")], 1)


def test_alpha_agrees_with_the_engine_on_real_events():
    """The numpy counts equal gpu_demo.decode's own alpha_per_position on a real speculative run."""
    torch = pytest.importorskip("torch")
    from gpu_demo.decode import speculative
    from gpu_demo.drafters import ModelDrafter
    from gpu_demo.measure.stats import alpha_per_position, overall_alpha
    from gpu_demo.models.char import CharConfig, CharTransformer, WindowConfig, WindowMLP

    torch.manual_seed(0)
    target = CharTransformer(CharConfig(vocab_size=12, n_layer=1, n_head=2, d_model=32, max_seq_len=128)).eval()
    draft = WindowMLP(WindowConfig(vocab_size=12, window=4, d_emb=4, d_hidden=16, max_seq_len=128)).eval()
    events = list(speculative(target, ModelDrafter(draft), [1, 2, 3], 60, gamma=4, seed=3))
    ks, ns = [e.k for e in events], [e.n_accepted for e in events]
    ours = measure.alpha_by_position(ks, ns, 4)
    theirs = np.asarray(alpha_per_position(events, 4))
    assert np.array_equal(np.isnan(ours), np.isnan(theirs))
    assert ours[~np.isnan(ours)].tolist() == pytest.approx(theirs[~np.isnan(theirs)].tolist())
    assert measure.pooled_alpha(ks, ns, 4) == pytest.approx(overall_alpha(events))
