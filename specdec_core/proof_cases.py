"""Cases for the proof page: preset (p, q) pairs, logit pairs with sampling settings, typed vectors,
and the seed's exhaustive check over 10,000 random Dirichlet pairs in one batched call."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from specdec_core.rejection import check_pair, emitted_distribution
from specdec_core.sampling import sampling_distribution, softmax

V_MIN, V_MAX = 2, 50
PRESETS = {
    "identical": "identical (q = p)",
    "disjoint": "disjoint supports",
    "q_sharper": "q sharper than p",
    "q_flatter": "q flatter than p",
    "q_zero": "q zero where p > 0",
    "dirichlet": "random Dirichlet",
}
# A preset p is read as the target's law at this temperature, so that its raw logits are T log p and
# the "raw logits" and "wrong q" mistakes can be shown without a separate logits mode.
DEMO_TEMPERATURE = 0.7
SHAPE_RATIO = 2.5          # q = p^2.5 (sharper) or p^(1/2.5) (flatter), renormalised


@dataclass(frozen=True)
class ProofCase:
    """Everything the page shows for one choice of controls."""

    p: NDArray[np.float64]           # (V,) requested target law, after temperature and truncation
    q: NDArray[np.float64]           # (V,) law the draft really sampled from
    p_raw: NDArray[np.float64]       # (V,) softmax of the raw target logits (T = 1, no truncation)
    q_claimed: NDArray[np.float64]   # (V,) softmax of the raw draft logits (what a careless verifier uses)


def check_vocab(v: int) -> int:
    """Vocabulary size: an integer in [V_MIN, V_MAX]."""
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not V_MIN <= v <= V_MAX:
        raise ValueError(f"vocabulary size must be an integer in [{V_MIN}, {V_MAX}]; got {v!r}")
    return int(v)


def _power_law(law: NDArray[np.float64], power: float) -> NDArray[np.float64]:
    """law^power renormalised: the same logits at temperature 1/power; zeros stay zero."""
    out = np.where(law > 0, law, 0.0) ** power
    return out / out.sum()


def base_law(v: int) -> NDArray[np.float64]:
    """A fixed, Zipf-like target law over v tokens in a shuffled order: p(x) proportional to 1/rank."""
    ranks = np.random.default_rng(1234).permutation(v) + 1
    p = 1.0 / ranks
    return p / p.sum()


def preset_pair(name: str, v: int, seed: int = 0, conc_p: float = 1.0, conc_q: float = 0.3) -> tuple[NDArray, NDArray]:
    """(p, q) for a named preset over v tokens."""
    v = check_vocab(v)
    p = base_law(v)
    if name == "identical":
        return p, p.copy()
    if name == "disjoint":
        half = v // 2
        p = np.r_[base_law(half), np.zeros(v - half)]
        return p, np.r_[np.zeros(half), base_law(v - half)]
    if name == "q_sharper":
        return p, _power_law(p, SHAPE_RATIO)
    if name == "q_flatter":
        return p, _power_law(p, 1.0 / SHAPE_RATIO)
    if name == "q_zero":
        q = np.where(np.arange(v) % 3 == 1, 0.0, p)      # every third token: q = 0 < p
        return p, q / q.sum()
    if name == "dirichlet":
        if not (0 < conc_p <= 100 and 0 < conc_q <= 100):
            raise ValueError(f"Dirichlet concentrations must be in (0, 100]; got {conc_p!r}, {conc_q!r}")
        rng = np.random.default_rng(seed)
        return rng.dirichlet(np.full(v, float(conc_p))), rng.dirichlet(np.full(v, float(conc_q)))
    raise ValueError(f"preset must be one of {', '.join(PRESETS)}; got {name!r}")


def case_from_pair(p: NDArray, q: NDArray) -> ProofCase:
    """A case from laws alone: p is read as the target law at DEMO_TEMPERATURE (raw logits T log p),
    and q as the draft's law at DEMO_TEMPERATURE (raw draft logits T log q)."""
    pa, qa = check_pair(p, q)
    return ProofCase(pa, qa, _power_law(pa, DEMO_TEMPERATURE), _power_law(qa, DEMO_TEMPERATURE))


def logits_pair(v: int, seed: int = 0, noise: float = 1.0) -> tuple[NDArray, NDArray]:
    """Target logits z_p ~ 2 N(0, 1); draft logits z_q = z_p + noise N(0, 1) (a noisy copy of the target)."""
    v = check_vocab(v)
    if not 0 <= noise <= 10:
        raise ValueError(f"draft noise must be in [0, 10]; got {noise!r}")
    rng = np.random.default_rng(seed)
    z_p = 2.0 * rng.standard_normal(v)
    return z_p, z_p + noise * rng.standard_normal(v)


def case_from_logits(
    z_p: NDArray, z_q: NDArray, target: tuple[float, int | None, float], draft: tuple[float, int | None, float]
) -> ProofCase:
    """p = sampling law of z_p under target (T, top_k, top_p); q likewise for z_q under draft settings."""
    p = sampling_distribution(z_p, *target)
    q = sampling_distribution(z_q, *draft)
    return ProofCase(p, q, softmax(z_p), softmax(z_q))


def parse_vector(text: str, name: str) -> NDArray[np.float64]:
    """Numbers separated by commas or spaces -> a vector of length V_MIN..V_MAX (not normalised)."""
    parts = [t for t in text.replace(",", " ").split() if t]
    try:
        vec = np.array([float(t) for t in parts], dtype=np.float64)
    except ValueError as exc:
        raise ValueError(f"{name} must be numbers separated by commas; could not read {text!r}") from exc
    if not V_MIN <= vec.size <= V_MAX:
        raise ValueError(f"{name} must have {V_MIN} to {V_MAX} entries; got {vec.size}")
    return vec


def random_pairs(n: int = 10_000, seed: int = 0, v_lo: int = 2, v_hi: int = 49, conc_q: float = 0.3):
    """n Dirichlet pairs, V uniform in [v_lo, v_hi], p ~ Dir(1), q ~ Dir(conc_q), zero-padded to v_hi.
    -> (p, q, V) with p, q of shape (n, v_hi); padded cells are 0 in both, so they change nothing."""
    rng = np.random.default_rng(seed)
    vocab = rng.integers(v_lo, v_hi + 1, size=n)                   # (n,)
    live = np.arange(v_hi)[None, :] < vocab[:, None]               # (n, v_hi)
    g_p = np.where(live, rng.standard_gamma(1.0, size=(n, v_hi)), 0.0)
    g_q = np.where(live, rng.standard_gamma(conc_q, size=(n, v_hi)), 0.0)
    return g_p / g_p.sum(1, keepdims=True), g_q / g_q.sum(1, keepdims=True), vocab


def exhaustive_check(p: NDArray, q: NDArray) -> dict[str, float]:
    """One batched call over all pairs: max |emitted - p| and max |alpha - (1 - TV)|."""
    law, alpha = emitted_distribution(p, q)                        # (n, V), (n,)
    tv = 0.5 * np.abs(p - q).sum(axis=-1)                          # (n,)
    return {
        "pairs": float(p.shape[0]),
        "max_law_error": float(np.abs(law - p).max()),
        "max_alpha_error": float(np.abs(alpha - (1.0 - tv)).max()),
    }
