"""Published operating points and the seed's worked cases, as data with their sources.

Only numbers that the sources state are stored here. Anything derived (a c that reproduces a reported
speedup, an alpha implied by one) is computed by ``specdec_core.algebra`` and labelled as derived.
"""

from __future__ import annotations

from dataclasses import dataclass

LEVIATHAN = (
    "Leviathan, Kalman & Matias, \"Fast Inference from Transformers via Speculative Decoding\", "
    "ICML 2023, Table 2 (T5-XXL 11B target, one TPU-v4, batch 1)"
)
LEVIATHAN_ALPHA = "Leviathan, Kalman & Matias, ICML 2023, Table 3 (alpha only, no speedup reported with it)"
CHEN = (
    "Chen, Borgeaud, Irving, Lespiau, Sifre & Jumper, \"Accelerating Large Language Model Decoding with "
    "Speculative Sampling\", 2023 (Chinchilla 70B target, 4B draft, 16 TPU v4, batch 1)"
)
SEED = "Seed document: speculative-decoding-algebra-and-proof"

# The paper gives c of about 0.015 for T5-small against T5-XXL; it gives no c for the larger drafts.
T5_SMALL_C = 0.015
# Chen et al.: the draft costs 1.8 ms per token against a 14.1 ms target baseline; draft length K = 4.
CHEN_DRAFT_MS = 1.8
CHEN_TARGET_MS = 14.1
CHEN_C = CHEN_DRAFT_MS / CHEN_TARGET_MS
CHEN_K = 4


@dataclass(frozen=True)
class PaperRow:
    """One reported operating point; c is None where the source does not give it, alpha None where not given."""

    name: str
    task: str
    draft: str
    temperature: float
    gamma: int
    alpha: float | None
    c: float | None
    reported_speedup: float
    source: str


# All twelve rows of Table 2: three drafts, two tasks, argmax (temp 0) and standard sampling (temp 1).
LEVIATHAN_ROWS: tuple[PaperRow, ...] = (
    PaperRow("EnDe, T5-small, temp 0", "EnDe", "T5-small", 0.0, 7, 0.75, T5_SMALL_C, 3.4, LEVIATHAN),
    PaperRow("EnDe, T5-base, temp 0", "EnDe", "T5-base", 0.0, 7, 0.80, None, 2.8, LEVIATHAN),
    PaperRow("EnDe, T5-large, temp 0", "EnDe", "T5-large", 0.0, 7, 0.82, None, 1.7, LEVIATHAN),
    PaperRow("EnDe, T5-small, temp 1", "EnDe", "T5-small", 1.0, 7, 0.62, T5_SMALL_C, 2.6, LEVIATHAN),
    PaperRow("EnDe, T5-base, temp 1", "EnDe", "T5-base", 1.0, 5, 0.68, None, 2.4, LEVIATHAN),
    PaperRow("EnDe, T5-large, temp 1", "EnDe", "T5-large", 1.0, 3, 0.71, None, 1.4, LEVIATHAN),
    PaperRow("CNNDM, T5-small, temp 0", "CNNDM", "T5-small", 0.0, 5, 0.65, T5_SMALL_C, 3.1, LEVIATHAN),
    PaperRow("CNNDM, T5-base, temp 0", "CNNDM", "T5-base", 0.0, 5, 0.73, None, 3.0, LEVIATHAN),
    PaperRow("CNNDM, T5-large, temp 0", "CNNDM", "T5-large", 0.0, 3, 0.74, None, 2.2, LEVIATHAN),
    PaperRow("CNNDM, T5-small, temp 1", "CNNDM", "T5-small", 1.0, 5, 0.53, T5_SMALL_C, 2.3, LEVIATHAN),
    PaperRow("CNNDM, T5-base, temp 1", "CNNDM", "T5-base", 1.0, 3, 0.55, None, 2.2, LEVIATHAN),
    PaperRow("CNNDM, T5-large, temp 1", "CNNDM", "T5-large", 1.0, 3, 0.56, None, 1.7, LEVIATHAN),
)

CHEN_ROWS: tuple[PaperRow, ...] = (
    PaperRow("XSum, nucleus", "XSum", "4B", 1.0, CHEN_K, None, CHEN_C, 1.92, CHEN),
    PaperRow("XSum, greedy", "XSum", "4B", 0.0, CHEN_K, None, CHEN_C, 2.01, CHEN),
    PaperRow("HumanEval, nucleus", "HumanEval", "4B", 1.0, CHEN_K, None, CHEN_C, 2.46, CHEN),
)

# Acceptance rates reported without a matching speedup (Table 3): (target, draft, temperature, alpha).
ALPHA_ONLY: tuple[tuple[str, str, str, float], ...] = (
    ("GPT-like 97M", "6M GPT-like", "0", 0.88),
    ("GPT-like 97M", "6M GPT-like", "1", 0.89),
    ("GPT-like 97M", "bigram", "0", 0.05),
    ("GPT-like 97M", "bigram", "1", 0.05),
    ("LaMDA 137B", "LaMDA 100M", "0", 0.61),
    ("LaMDA 137B", "LaMDA 100M", "1", 0.57),
    ("LaMDA 137B", "LaMDA 2B", "0", 0.71),
    ("LaMDA 137B", "LaMDA 2B", "1", 0.71),
    ("LaMDA 137B", "LaMDA 8B", "0", 0.75),
    ("LaMDA 137B", "LaMDA 8B", "1", 0.74),
)


def temperature_pairs() -> list[tuple[str, float, float]]:
    """(target / draft, alpha at temp 0, alpha at temp 1) for every pair the paper measured at both temperatures:
    greedy alpha is argmax agreement, sampled alpha is 1 - TV(p, q), and the two need not move together."""
    at: dict[str, dict[float, float]] = {}
    for r in LEVIATHAN_ROWS:
        at.setdefault(f"T5-XXL ({r.task}) / {r.draft}", {})[r.temperature] = r.alpha
    for target, draft, temp, alpha in ALPHA_ONLY:
        at.setdefault(f"{target} / {draft}", {})[float(temp)] = alpha
    return [(name, a[0.0], a[1.0]) for name, a in at.items() if 0.0 in a and 1.0 in a]


@dataclass(frozen=True)
class WorkedCase:
    """A worked case of the seed document with the numbers it prints."""

    alpha: float
    gamma: int
    c: float
    v: float
    tokens: float
    cost: float
    speedup: float
    note: str


SEED_CASES: tuple[WorkedCase, ...] = (
    WorkedCase(0.7, 3, 0.1, 1.0, 2.533, 1.30, 1.95, "the headline case"),
    WorkedCase(0.8, 4, 0.05, 1.0, 3.3616, 1.2, 2.80, "cheap verification"),
    WorkedCase(0.8, 4, 0.05, 3.5, 3.3616, 3.7, 0.91, "same acceptance, costly verification: a slowdown"),
)
# The seed's sanity limits for the headline case (alpha -> 0, alpha -> 1).
SEED_LIMITS = (0.77, 3.08)

# (alpha, c) rows for the integer-gamma search at v = 1; the costs are illustrative, as in the seed.
SEED_TABLE_ROWS: tuple[tuple[float, float], ...] = (
    (0.6, 0.05), (0.6, 0.2), (0.7, 0.1), (0.8, 0.05), (0.8, 0.2), (0.9, 0.05), (0.9, 0.2),
)
