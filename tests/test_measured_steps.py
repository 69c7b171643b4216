"""The measured mode (specdec_core.measured_steps) and the roofline's opt-in overheads (steptime.Overheads).

The fit is SpecDecode-Bench's linear model of vLLM on an H100 for Llama-3.1-8B; the expected values are computed
here by hand from its three published constants (not by the module), and the roofline figures are the issue's
table, which the existing model reproduces.
"""

from __future__ import annotations

import numpy as np
import pytest

from specdec_core import roofline, steptime
from specdec_core.algebra import expected_tokens, speedup
from specdec_core.measured_steps import FITS, check_fit, measured_curve, measured_v

FIT = FITS["vLLM, H100, Llama-3.1-8B + EAGLE"]
BATCHES = [1, 64, 128, 256]
TARGET, DRAFT, H100 = (
    steptime.SHAPES["Llama-3.1-8B"],
    steptime.SHAPES["Llama-3.2-1B (draft)"],
    roofline.HARDWARE["H100 SXM"],
)


def by_hand_v(batch: int, gamma: int = 3, context: int = 2048) -> float:
    """(K s_kv + B (g + 1) s_tok + s_fixed) / (K s_kv + B s_tok + s_fixed), K = B L, from the source's constants."""
    kv, s_tok, fixed = 3.92645679e-08, 2.10103129e-05, 5.88590713e-03
    k = batch * context
    return (k * kv + batch * (gamma + 1) * s_tok + fixed) / (k * kv + batch * s_tok + fixed)


@pytest.mark.parametrize(("batch", "want"), [(1, 1.011), (64, 1.326), (128, 1.428), (256, 1.507)])
def test_measured_fit_v_reproduces_the_published_fit(batch: int, want: float) -> None:
    got = float(measured_v(FIT, 3, 2048, batch))
    assert got == pytest.approx(by_hand_v(batch), rel=1e-12)
    assert got == pytest.approx(want, rel=0.05)
    assert got == pytest.approx(want, abs=1e-3)  # the table's three decimals


def test_plain_step_at_batch_1_is_the_measured_5_99_ms_against_the_models_4_56() -> None:
    assert float(measured_curve(FIT, 3, 0.8, 2048, 1).decode_s) * 1e3 == pytest.approx(5.99, abs=0.005)
    assert float(steptime.spec_curve(TARGET, DRAFT, H100, "bf16", 3, 0.8, 2048, 1).decode_s) * 1e3 == pytest.approx(
        4.56, abs=0.005
    )


def test_roofline_v_rises_too_late_against_the_fit() -> None:
    model = steptime.spec_curve(TARGET, DRAFT, H100, "bf16", 3, 0.8, 2048, BATCHES)
    np.testing.assert_allclose(model.v, [1.000, 1.006, 1.231, 1.451], atol=1e-3)
    fit_v = measured_v(FIT, 3, 2048, BATCHES)
    assert np.all(fit_v > model.v)
    # the speedups at alpha 0.8: the model's c with the model's v, then with the measured v
    np.testing.assert_allclose(model.speedup, [1.97, 1.80, 1.55, 1.37], atol=0.006)
    np.testing.assert_allclose(speedup(0.8, 3, model.c, fit_v), [1.96, 1.51, 1.41, 1.34], atol=0.006)


def test_measured_speedup_charges_the_step_overhead_to_both_sides() -> None:
    cur = measured_curve(FIT, 3, 0.8, 2048, BATCHES)
    o = FIT.overhead_s
    want = expected_tokens(0.8, 3) * (cur.decode_s + o) / (cur.draft_s + cur.verify_s + o)
    np.testing.assert_allclose(cur.speedup, want)
    np.testing.assert_allclose(cur.c * 3 * cur.decode_s, cur.draft_s)
    assert np.all(np.diff(cur.speedup) < 0)  # measured: the win shrinks with batch
    zero = measured_curve(FIT, 0, 0.8, 2048, BATCHES)
    np.testing.assert_allclose(zero.speedup, 1.0)  # gamma = 0 is plain decoding


def test_bad_inputs_are_value_errors() -> None:
    with pytest.raises(ValueError, match="unknown measured fit"):
        check_fit("nope")
    with pytest.raises(ValueError, match="batch"):
        measured_curve(FIT, 3, 0.8, 2048, 0)
    with pytest.raises(ValueError, match="context"):
        measured_curve(FIT, 3, 0.8, -1, 1)
    with pytest.raises(ValueError, match="overlap"):
        steptime.Overheads(overlap=1.5)
    with pytest.raises(ValueError, match="fixed cost"):
        steptime.Overheads(fixed_s=-1.0)


def test_roofline_defaults_are_unchanged_by_the_overheads_option() -> None:
    plain = steptime.spec_curve(TARGET, DRAFT, H100, "bf16", 3, 0.8, 2048, BATCHES)
    same = steptime.spec_curve(TARGET, DRAFT, H100, "bf16", 3, 0.8, 2048, BATCHES, overheads=steptime.Overheads())
    np.testing.assert_array_equal(plain.speedup, same.speedup)


def test_fixed_cost_adds_the_sourced_host_overhead_to_every_pass() -> None:
    o = steptime.Overheads(fixed_s=FIT.overhead_s)
    plain = steptime.spec_curve(TARGET, DRAFT, H100, "bf16", 3, 0.8, 2048, BATCHES)
    fixed = steptime.spec_curve(TARGET, DRAFT, H100, "bf16", 3, 0.8, 2048, BATCHES, overheads=o)
    np.testing.assert_allclose(fixed.decode_s - plain.decode_s, FIT.overhead_s)
    np.testing.assert_allclose(fixed.draft_s - plain.draft_s, FIT.overhead_s)
    assert float(fixed.decode_s[0]) * 1e3 == pytest.approx(4.561 + 1.207, abs=0.002)
    assert np.all(fixed.c > plain.c)  # a fixed cost weighs most on the small draft
    assert np.all(fixed.speedup < plain.speedup)


def test_imperfect_overlap_and_logits_traffic_only_add_time() -> None:
    base = steptime.step_time(TARGET, H100, "bf16", 256, 4, 2048)
    serial = steptime.step_time(TARGET, H100, "bf16", 256, 4, 2048, overheads=steptime.Overheads(overlap=0.0))
    by_hand = sum(k.compute_s + k.memory_s for k in base.kernels)  # overlap 0: compute and memory in series
    np.testing.assert_allclose(serial.total_s, by_hand)
    logit = steptime.step_time(TARGET, H100, "bf16", 256, 4, 2048, overheads=steptime.Overheads(logits=True))
    extra = 256 * 4 * 128_256 * 8 / (H100.bandwidth)  # B T vocab x 8 bytes at the HBM bandwidth
    np.testing.assert_allclose(logit.total_s - base.total_s, extra, rtol=1e-9)
    assert len(logit.kernels) == 4 and len(base.kernels) == 3


def test_draft_round_grows_with_gamma_past_the_fitted_lengths() -> None:
    """An EAGLE head drafts in gamma sequential passes: past the fitted lengths (1, 3, 5) the round is priced per
    pass, so its cost in target steps (gamma c) rises in proportion and c no longer falls as 1 / gamma."""
    gammas = [1, 3, 5, 8, 16]
    cur = {g: measured_curve(FIT, g, 0.8, 2048, 1) for g in gammas}
    round_steps = [float(g * cur[g].c) for g in gammas]
    assert all(b > a for a, b in zip(round_steps, round_steps[1:], strict=False))
    assert round_steps[-1] == pytest.approx(round_steps[2] * 16 / 5, rel=1e-12)
    assert float(cur[16].c) == pytest.approx(float(cur[5].c), rel=1e-12)
    assert float(cur[8].c) >= float(cur[5].c) - 1e-15
    s8, s16 = float(cur[8].speedup), float(cur[16].speedup)
    assert s8 < 3.0 and s16 < s8  # the flat 2.1 ms round gave 3.27x and 3.63x
    assert cur[5].in_fit.all() and not cur[8].in_fit.any()


def test_in_fit_marks_batches_past_the_fitted_ones() -> None:
    cur = measured_curve(FIT, 3, 0.8, 2048, [1, 32, 64, 65, 256])
    assert list(cur.in_fit) == [True, True, True, False, False]
