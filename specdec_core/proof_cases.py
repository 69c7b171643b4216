"""Cases for the proof page: preset (p, q) pairs, logit pairs with sampling settings, typed vectors,
the seed's exhaustive check (its own loop, and a batched variant over other pairs), and the step that
combines the per-prefix alpha_2(x1) of the two-position example into the single alpha_2 of E[N]."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from specdec_core.algebra import expected_tokens_positional
from specdec_core.rejection import accepted_mass, check_pair, emitted_distribution
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
# A preset's p is read as the target's law at temperature TARGET_T (its raw logits are TARGET_T log p) and
# its q as the draft's law at DRAFT_T (raw draft logits DRAFT_T log q). The two differ, as on the live page,
# so the "raw logits" and "wrong q" mistakes bite on a preset too, without a separate logits mode.
TARGET_T = 0.7
DRAFT_T = 1.0
SHAPE_RATIO = 2.5          # q = p^2.5 (sharper) or p^(1/2.5) (flatter), renormalised


@dataclass(frozen=True)
class ProofCase:
    """Everything the page shows for one choice of controls."""

    p: NDArray[np.float64]           # (V,) requested target law, after temperature and truncation
    q: NDArray[np.float64]           # (V,) law the draft really sampled from, with the draft's own settings
    p_raw: NDArray[np.float64]       # (V,) softmax of the raw target logits (T = 1, no truncation)
    q_claimed: NDArray[np.float64]   # (V,) the draft logits under the *target's* settings: the wrong q


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
    """A case from laws alone: p = softmax(z_p / TARGET_T) and q = softmax(z_q / DRAFT_T), so p_raw = p^TARGET_T
    and the wrong q, the draft logits at the target's temperature, is q^(DRAFT_T / TARGET_T) (both renormalised)."""
    pa, qa = check_pair(p, q)
    return ProofCase(pa, qa, _power_law(pa, TARGET_T), _power_law(qa, DRAFT_T / TARGET_T))


def logits_pair(v: int, seed: int = 0, noise: float = 1.0) -> tuple[NDArray, NDArray]:
    """Target logits z_p ~ 2 N(0, 1); draft logits z_q = z_p + noise N(0, 1) (a noisy copy of the target)."""
    v = check_vocab(v)
    if not 0 <= noise <= 10:
        raise ValueError(f"draft noise must be in [0, 10]; got {noise!r}")
    rng = np.random.default_rng(seed)
    z_p = 2.0 * rng.standard_normal(v)
    return z_p, z_p + noise * rng.standard_normal(v)


def case_from_logits(
    z_p: NDArray, z_q: NDArray, target: tuple[float, int, float], draft: tuple[float, int, float]
) -> ProofCase:
    """p = sampling law of z_p under the target's (T, top_k, top_p), q of z_q under the draft's; p_raw = softmax(z_p);
    the wrong q is z_q under the target's settings (equal to q when both sides use the same settings)."""
    p = sampling_distribution(z_p, *target)
    q = sampling_distribution(z_q, *draft)
    return ProofCase(p, q, softmax(z_p), sampling_distribution(z_q, *target))


# The page's from-logits defaults: V = 10, logits seed 0, draft noise 1, no truncation on either side.
LOGITS_V, LOGITS_SEED, LOGITS_NOISE = 10, 0, 1.0


def default_logits_case() -> ProofCase:
    """The from-logits case at the page's defaults: target at TARGET_T, draft at DRAFT_T, no top-k or top-p."""
    z_p, z_q = logits_pair(LOGITS_V, LOGITS_SEED, LOGITS_NOISE)
    return case_from_logits(z_p, z_q, (TARGET_T, 0, 1.0), (DRAFT_T, 0, 1.0))


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


def seed_loop_check(n: int = 10_000, seed: int = 0) -> dict[str, float]:
    """The seed document's check, draw for draw: one Generator(seed); per pair V = integers(2, 50), then
    p ~ Dirichlet(1_V), then q ~ Dirichlet(0.3 1_V), each through emitted_distribution -> max errors.
    Any change to the generator, the seed or the order of draws gives other pairs and another maximum."""
    rng = np.random.default_rng(seed)
    worst_law = worst_alpha = 0.0
    for _ in range(n):
        v = rng.integers(2, 50)
        p, q = rng.dirichlet(np.ones(v)), rng.dirichlet(np.ones(v) * 0.3)
        law, alpha = emitted_distribution(p, q)
        tv = float(0.5 * np.abs(p - q).sum())
        worst_law = max(worst_law, float(np.abs(law - p).max()))
        worst_alpha = max(worst_alpha, abs(float(alpha) - (1.0 - tv)))
    return {"pairs": float(n), "max_law_error": worst_law, "max_alpha_error": worst_alpha}


def exhaustive_check(p: NDArray, q: NDArray) -> dict[str, float]:
    """One batched call over all pairs: max |emitted - p| and max |alpha - (1 - TV)|."""
    law, alpha = emitted_distribution(p, q)                        # (n, V), (n,)
    tv = 0.5 * np.abs(p - q).sum(axis=-1)                          # (n,)
    return {
        "pairs": float(p.shape[0]),
        "max_law_error": float(np.abs(law - p).max()),
        "max_alpha_error": float(np.abs(alpha - (1.0 - tv)).max()),
    }


def combined_alpha_2(p1: NDArray, q1: NDArray, alpha_2: NDArray) -> float:
    """alpha_2 = P(keep x2 | kept x1) = sum_x1 min(p1, q1)(x1) alpha_2(x1) / alpha_1: each prefix's rate weighted
    by the chance that x1 is drafted and kept (not by p1 or q1). 0 when alpha_1 = 0 (x2 is then never tried)."""
    kept = accepted_mass(p1, q1)                                   # (V,): P(x1 drafted and kept)
    alpha_1 = float(kept.sum())
    return float(kept @ np.asarray(alpha_2) / alpha_1) if alpha_1 > 0 else 0.0


def round_tokens_enumerated(p1: NDArray, P2: NDArray, q1: NDArray, Q2: NDArray) -> float:
    """E[N] of one gamma = 2 round by enumerating every draft (x1, x2): 1 + P(x1 kept) + P(x1 and x2 kept)."""
    both = 0.0
    for x1 in np.flatnonzero(q1 > 0):
        keep1 = min(1.0, p1[x1] / q1[x1])
        for x2 in np.flatnonzero(Q2[x1] > 0):
            both += q1[x1] * keep1 * Q2[x1, x2] * min(1.0, P2[x1, x2] / Q2[x1, x2])
    return 1.0 + float(accepted_mass(p1, q1).sum()) + float(both)


def two_position_tokens(p1: NDArray, P2: NDArray, q1: NDArray, Q2: NDArray, alpha_2: NDArray) -> dict:
    """The weights min(p1, q1) / alpha_1, the single alpha_2, E[N] = 1 + alpha_1 + alpha_1 alpha_2 (positional
    formula) beside the enumerated E[N], and two tempting but wrong averages of alpha_2(x1): plain, and by p1."""
    kept = accepted_mass(p1, q1)                                   # (V,): P(x1 drafted and kept)
    alpha_1 = float(kept.sum())
    a2 = combined_alpha_2(p1, q1, alpha_2)
    return {
        "weights": kept / alpha_1 if alpha_1 > 0 else np.zeros_like(kept),   # law of an accepted x1
        "alpha_1": alpha_1,
        "alpha_2": a2,
        "tokens": float(expected_tokens_positional([alpha_1, a2])),
        "tokens_enumerated": round_tokens_enumerated(p1, P2, q1, Q2),
        "plain_mean": float(np.mean(alpha_2)),
        "p1_weighted": float(np.asarray(p1) @ np.asarray(alpha_2)),
    }
