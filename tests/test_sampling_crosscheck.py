"""The page's law and the engine's law from the same settings: numpy ``sampling_distribution`` against torch
``logits_to_probs`` / ``next_token``, over random logits with ties (the tie rule is ``specdec_core.sampling``'s)."""

import numpy as np
import pytest
import torch

from gpu_demo.sampler import SamplingConfig, logits_to_probs, next_token
from specdec_core.sampling import TOP_K_OFF, TOP_P_OFF, TOP_P_TOL, sampling_distribution

ROWS = 3000


def engine_law(z: np.ndarray, cfg: SamplingConfig) -> np.ndarray:
    """The law the engine draws from: the processed softmax, or next_token's one-hot when greedy."""
    logits = torch.tensor(z, dtype=torch.float32)
    if cfg.greedy:
        return next_token(logits, cfg, None)[1].double().numpy()
    return logits_to_probs(logits, cfg).double().numpy()


def page_law(z: np.ndarray, cfg: SamplingConfig) -> np.ndarray:
    """The page's law from the same settings."""
    return sampling_distribution(z, cfg.temperature, cfg.top_k, cfg.top_p)


@pytest.mark.parametrize("cfg, expected", [
    (SamplingConfig(1.0, top_k=1), [0.0, 0.5, 0.5, 0.0]),
    (SamplingConfig(1.0, top_k=2), [0.0, 0.5, 0.5, 0.0]),
    (SamplingConfig(1.0, top_p=0.3), [0.0, 0.5, 0.5, 0.0]),  # the crossing token's tie stays
    (SamplingConfig(0.0, top_k=1), [0.0, 1.0, 0.0, 0.0]),  # greedy: the lowest id among tied maxima
])
def test_ties_give_the_same_law_on_the_page_and_in_the_engine(cfg: SamplingConfig, expected: list[float]) -> None:
    z = np.array([1.0, 2.0, 2.0, 0.5])
    np.testing.assert_allclose(page_law(z, cfg), expected, atol=1e-15)
    np.testing.assert_allclose(engine_law(z, cfg), expected, atol=1e-7)


def _random_case(rng: np.random.Generator) -> tuple[np.ndarray, SamplingConfig]:
    """Logits on a quarter-integer grid (exact ties in float32 and float64), random T, top-k and top-p."""
    v = int(rng.integers(2, 13))
    z = rng.integers(-6, 7, size=v) / 4.0
    t = float(rng.choice([0.0, 0.5, 1.0, 1.7]))
    k = int(rng.choice([TOP_K_OFF, *range(1, v + 1)]))
    tp = TOP_P_OFF if rng.random() < 0.2 else float(rng.uniform(0.05, 1.0))
    return z, SamplingConfig(t, k, tp)


def _near_the_top_p_edge(z: np.ndarray, cfg: SamplingConfig) -> bool:
    """True when a running mass sits within 1e-5 of top_p: float32 and float64 may then round to either side."""
    if cfg.greedy or cfg.top_p == TOP_P_OFF:
        return False
    before = sampling_distribution(z, cfg.temperature, cfg.top_k, TOP_P_OFF)
    mass = np.cumsum(np.sort(before)[::-1])
    return bool(np.any(np.abs(mass - (cfg.top_p - TOP_P_TOL)) < 1e-5))


def _id_order_top_k(z: np.ndarray, cfg: SamplingConfig) -> np.ndarray:
    """Negative control: top-k that keeps exactly k tokens, lower ids first (a tempting wrong rule)."""
    probs = sampling_distribution(z, cfg.temperature, TOP_K_OFF, TOP_P_OFF)
    keep = np.zeros(probs.size, dtype=bool)
    keep[np.argsort(-probs, kind="stable")[: cfg.top_k]] = True
    out = np.where(keep, probs, 0.0)
    return out / out.sum()


def test_random_logits_with_ties_give_the_same_law() -> None:
    rng = np.random.default_rng(28)
    compared = control_differs = 0
    for _ in range(ROWS):
        z, cfg = _random_case(rng)
        if _near_the_top_p_edge(z, cfg):
            continue
        page, engine = page_law(z, cfg), engine_law(z, cfg)
        assert np.array_equal(page > 0, engine > 0), (z, cfg, page, engine)
        np.testing.assert_allclose(engine, page, atol=2e-6)
        compared += 1
        if not cfg.greedy and cfg.top_k and cfg.top_p == TOP_P_OFF:
            control_differs += not np.array_equal(_id_order_top_k(z, cfg) > 0, page > 0)
    assert compared > 0.95 * ROWS
    # the grid makes ties at the k-th place common: a rule that breaks them by id disagrees on many rows
    assert control_differs > 50
