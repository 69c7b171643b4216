"""Numeric interview drills: seeded generation, answers computed by the core, graded with a tolerance.

A drill stores only its inputs. Its answer is recomputed from ``specdec_core`` every time it is asked
for, so no answer is ever typed in. A seed (an int or a string such as ``"classroom"``) fixes a whole
set: everyone who uses the same seed gets the same drills, which lets a teacher go over the answers.
A drill's words (prompt, formula, worked solution) are prose and live in ``content.drill_text``.

Grading: a numeric answer x is right when |x - answer| <= max(REL_TOL * |answer|, ABS_TOL);
a batch (a crossover, the batch where KV reads take over) is also right as either integer beside the exact value
(a batch is whole requests); an integer answer (the best gamma, pages freed, mask entries) must be exact; a
choice ("A" or "B") must match. A comma in a number is refused and asked again ('1,57' could be 1.57 or 157).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from specdec_core.algebra import best_gamma, break_even_alpha, expected_tokens, speedup, step_cost
from specdec_core.drill_mistakes import mistakes
from specdec_core.multidraft import multidraft_distribution
from specdec_core.paged_kv import pages_freed
from specdec_core.rejection import acceptance_rate, match_acceptance
from specdec_core.roofline import HARDWARE, crossover_batch
from specdec_core.steptime import SHAPES, kv_read_batch
from specdec_core.trees import ancestor_mask, branching_tree, expected_accepted_length
from specdec_core.typical import SAMPLED, TOP, typical_distribution

REL_TOL = 0.01          # 1 % of the exact value ...
ABS_TOL = 0.005         # ... or 0.005, whichever is larger
CLASSROOM_SEED = "classroom"
TOLERANCE_TEXT = (
    "within 1% of the exact value or 0.005, whichever is larger; a whole-number answer (best gamma, pages, "
    "mask entries) must be exact; a batch may also be either whole number beside the exact value"
)

_ALPHAS = np.round(np.arange(0.50, 0.951, 0.05), 2)   # 0.50, 0.55, ..., 0.95
_CS = (0.02, 0.05, 0.1, 0.15, 0.2)
_VS = (1.0, 1.1, 1.2, 1.5, 2.0)


@dataclass(frozen=True)
class Drill:
    """One drill: its kind and inputs. The answer is not a field: it is computed on demand."""

    kind: str
    params: dict = field(hash=False)

    @property
    def answer_type(self) -> str:
        """'number', 'integer' or 'choice'."""
        return {"best_gamma": "integer", "rollback_pages": "integer", "tree_mask": "integer", "compare": "choice",
                "exact_rule": "choice"}.get(self.kind, "number")

    def answer(self) -> float | int | str:
        """The exact answer, from specdec_core."""
        return _ANSWERS[self.kind](self.params)


@dataclass(frozen=True)
class Grade:
    """The verdict on one response: valid (it parsed), correct, a message for the student, and the common
    mistake a wrong answer matches ('' when none does). final: the answer was shown (a right answer, or a
    wrong one when no retry is left)."""

    valid: bool
    correct: bool
    message: str
    mistake: str = ""
    final: bool = True


# ------------------------------------------------------------------ seeds ----
def seed_to_int(seed: int | str) -> int:
    """A stable 64-bit integer from any seed (sha256 of its text), the same on every machine."""
    return int.from_bytes(hashlib.sha256(str(seed).strip().lower().encode()).digest()[:8], "little")


def _rng(seed: int | str, kind: str) -> np.random.Generator:
    """An independent stream per (seed, kind), so adding a kind never changes the others."""
    return np.random.default_rng([seed_to_int(seed), seed_to_int(kind)])


# ------------------------------------------------------------ generators ----
def _gen_tokens(rng: np.random.Generator) -> dict:
    return {"alpha": float(rng.choice(_ALPHAS)), "gamma": int(rng.integers(1, 9))}


def _gen_speedup(rng: np.random.Generator) -> dict:
    return {"alpha": float(rng.choice(_ALPHAS)), "gamma": int(rng.integers(1, 9)),
            "c": float(rng.choice(_CS)), "v": float(rng.choice(_VS))}


def _gen_best_gamma(rng: np.random.Generator) -> dict:
    """alpha and c (v = 1) whose best integer gamma beats the runner-up by at least 0.5 %."""
    while True:
        a, c = float(rng.choice(_ALPHAS[2:])), float(rng.choice(_CS))
        g, s = best_gamma(a, c, 1.0, max_gamma=32)
        s_all = np.asarray(speedup(a, np.arange(33), c, 1.0))
        runner_up = np.max(np.delete(s_all, g))
        if s - runner_up >= 0.005 * s:
            return {"alpha": a, "c": c, "v": 1.0}


def _gen_break_even(rng: np.random.Generator) -> dict:
    """gamma, c, v whose cost lies inside (1, gamma + 1), so a break-even alpha in (0, 1) exists."""
    while True:
        g = int(rng.integers(2, 9))
        c, v = float(rng.choice((0.05, 0.1, 0.2, 0.3))), float(rng.choice((1.0, 1.2, 1.5, 2.0)))
        if 1.05 < float(step_cost(g, c, v)) < g + 0.5:
            return {"gamma": g, "c": c, "v": v}


def _gen_crossover(rng: np.random.Generator) -> dict:
    """A hardware preset, a draft length and a precision mode that the preset supports."""
    names = sorted(HARDWARE)
    while True:
        hw, g = str(rng.choice(names)), int(rng.integers(1, 8))
        mode = str(rng.choice(("bf16", "fp8", "w8a16")))
        if HARDWARE[hw].supports(mode):     # e.g. the A100 has no FP8 tensor cores
            return {"hardware": hw, "gamma": g, "mode": mode}


def _composition(rng: np.random.Generator, size: int, total: int = 20) -> list[float]:
    """A random law over `size` tokens in steps of 1/total (so it sums to 1 exactly in decimal)."""
    cuts = np.sort(rng.integers(0, total + 1, size=size - 1))
    counts = np.diff(np.concatenate([[0], cuts, [total]]))
    return [round(float(k) / total, 2) for k in counts]


def _gen_alpha_pq(rng: np.random.Generator) -> dict:
    """A small target law p and draft law q over 3 or 4 tokens, not identical."""
    size = int(rng.integers(3, 5))
    while True:
        p, q = _composition(rng, size), _composition(rng, size)
        if p != q:
            return {"p": p, "q": q}


def _gen_compare(rng: np.random.Generator) -> dict:
    """Two configurations whose speedups differ by at least 3 %, so the answer is clear."""
    while True:
        a, b = _gen_speedup(rng), _gen_speedup(rng)
        sa, sb = speedup(a["alpha"], a["gamma"], a["c"], a["v"]), speedup(b["alpha"], b["gamma"], b["c"], b["v"])
        if abs(sa - sb) >= 0.03 * max(sa, sb):
            return {"A": a, "B": b}


_TREE_RATES = ((0.6, 0.2), (0.5, 0.25), (0.7, 0.1), (0.4, 0.3), (0.5, 0.2, 0.1))
EXACT_RULES = ("iid", "wor")                                  # multi-draft recursive rejection
WRONG_RULES = ("no_update", "wor_ratio_q", "typical", "typical_top")


def _gen_tree_tokens(rng: np.random.Generator) -> dict:
    """Per-rank acceptance a_1, a_2 (, a_3) and a branching per depth over 2 or 3 depths."""
    rates = list(_TREE_RATES[int(rng.integers(len(_TREE_RATES)))])
    return {"rates": rates, "branching": [int(rng.integers(1, len(rates) + 1)) for _ in range(int(rng.integers(2, 4)))]}


def rule_law(rule: str, p: list[float], q: list[float], k: int) -> np.ndarray:
    """The emitted law (V,) of a multi-draft rule (specdec_core.multidraft) or of Medusa's typical acceptance
    (candidates sampled, or the draft's top-k) at its default thresholds."""
    if rule in ("typical", "typical_top"):
        return np.asarray(typical_distribution(p, q, k, candidates=SAMPLED if rule == "typical" else TOP).law)
    return np.asarray(multidraft_distribution(p, q, k, rule)[0])


def rule_tv(rule: str, p: list[float], q: list[float], k: int) -> float:
    """TV(emitted law, p) = 1/2 sum |law - p| of a rule (see rule_law)."""
    return float(0.5 * np.abs(rule_law(rule, p, q, k) - np.asarray(p)).sum())


def tree_depth_masses(d: dict) -> np.ndarray:
    """P(depth i of the draft tree is accepted) = prod_{j<=i} S(b_j), S(b) = a_1 + ... + a_b; (D,)."""
    rates = np.asarray(d["rates"], dtype=float)
    return np.cumprod([rates[:b].sum() for b in d["branching"]])


def _gen_exact_rule(rng: np.random.Generator) -> dict:
    """A pair over 4 tokens, k = 2, one exact rule and one biased one (TV >= 0.02 here), in random order."""
    while True:
        p, q = _composition(rng, 4), _composition(rng, 4)
        exact, wrong = str(rng.choice(EXACT_RULES)), str(rng.choice(WRONG_RULES))
        if p != q and rule_tv(wrong, p, q, 2) >= 0.02:
            a, b = (exact, wrong) if rng.random() < 0.5 else (wrong, exact)
            return {"p": p, "q": q, "k": 2, "A": a, "B": b}


_CONTEXTS = (2048, 4096, 8192, 16384, 32768)
_PAGE_SIZES = (8, 16, 32)                                   # vLLM's default block is 16 tokens


def _gen_kv_batch(rng: np.random.Generator) -> dict:
    """A model of SHAPES (BF16 weights), a context and a KV-cache precision."""
    return {"model": str(rng.choice(sorted(SHAPES))), "context": int(rng.choice(_CONTEXTS)),
            "mode": "bf16", "kv": str(rng.choice(("bf16", "fp8")))}


def _gen_rollback_pages(rng: np.random.Generator) -> dict:
    """n cached tokens, gamma drafts, k < gamma - 1 accepted (at least 2 rejected), page size P; half the drills
    free a page, half free none."""
    frees = bool(rng.random() < 0.5)
    while True:
        g = int(rng.integers(3, 9))
        d = {"cached": int(rng.integers(10, 400)), "gamma": g, "accepted": int(rng.integers(0, g - 1)),
             "page": int(rng.choice(_PAGE_SIZES))}
        if (pages_freed(**d) > 0) == frees:
            return d


def _gen_sample_compare(rng: np.random.Generator) -> dict:
    """p and q over 3 or 4 tokens in steps of 0.1 (so the answer has two decimals, never a tolerance-edge half),
    where min(1, p/q) keeps at least 0.02 more than sample-and-compare."""
    size = int(rng.integers(3, 5))
    while True:
        d = {"p": _composition(rng, size, total=10), "q": _composition(rng, size, total=10)}
        if d["p"] != d["q"] and sample_compare_gap(d) >= 0.02:
            return d


def _gen_tree_mask(rng: np.random.Generator) -> dict:
    """A branching per depth over 2 or 3 depths, at least one depth branching, at most 40 nodes."""
    while True:
        b = [int(rng.integers(1, 4)) for _ in range(int(rng.integers(2, 4)))]
        if max(b) > 1 and int(np.cumprod(b).sum()) <= 40:
            return {"branching": b}


# --------------------------------------------------------------- answers ----
def speedup_of(cfg: dict) -> float:
    """E[N] / (gamma c + v) for a configuration {alpha, gamma, c, v}."""
    return float(speedup(cfg["alpha"], cfg["gamma"], cfg["c"], cfg["v"]))


def break_even_of(d: dict) -> float:
    """The alpha where speedup = 1; ValueError if no alpha in [0, 1] reaches it (cost > gamma + 1)."""
    a = break_even_alpha(d["gamma"], d["c"], d["v"])
    if a is None:
        raise ValueError(f"no alpha in [0, 1] breaks even: cost gamma c + v exceeds gamma + 1 = {d['gamma'] + 1}")
    return float(a)


def kv_batch_of(d: dict) -> float:
    """B where the model's KV reads per step equal its weight reads at this context (steptime.kv_read_batch)."""
    return float(kv_read_batch(SHAPES[d["model"]], d["mode"], d["context"], d["kv"]))


def sample_compare_gap(d: dict) -> float:
    """sum min(p, q) - sum p q: the acceptance min(1, p/q) keeps over sample-and-compare (both exact)."""
    return float(acceptance_rate(d["p"], d["q"])) - float(match_acceptance(d["p"], d["q"]))


def tree_mask_of(d: dict) -> np.ndarray:
    """The (N, N) tree attention mask of the drill's branching tree (trees.ancestor_mask)."""
    return ancestor_mask(branching_tree(d["branching"]))


_ANSWERS: dict[str, Callable[[dict], float | int | str]] = {
    "tokens": lambda d: float(expected_tokens(d["alpha"], d["gamma"])),
    "speedup": speedup_of,
    "best_gamma": lambda d: best_gamma(d["alpha"], d["c"], d["v"], max_gamma=32)[0],
    "break_even": break_even_of,
    "crossover": lambda d: float(crossover_batch(HARDWARE[d["hardware"]], d["gamma"], d["mode"])),
    "alpha_pq": lambda d: float(acceptance_rate(d["p"], d["q"])),
    "compare": lambda d: "A" if speedup_of(d["A"]) > speedup_of(d["B"]) else "B",
    "tree_tokens": lambda d: expected_accepted_length(branching_tree(d["branching"]), d["rates"]),
    "exact_rule": lambda d: "A" if rule_tv(d["A"], d["p"], d["q"], d["k"]) < 1e-12 else "B",
    "kv_batch": kv_batch_of,
    "rollback_pages": lambda d: pages_freed(d["cached"], d["gamma"], d["accepted"], d["page"]),
    "sample_compare": sample_compare_gap,
    "tree_mask": lambda d: int(tree_mask_of(d).sum()),
}


# ------------------------------------------------------------------ sets ----
_GENERATORS: dict[str, Callable[[np.random.Generator], dict]] = {
    "tokens": _gen_tokens, "speedup": _gen_speedup, "best_gamma": _gen_best_gamma,
    "break_even": _gen_break_even, "crossover": _gen_crossover, "alpha_pq": _gen_alpha_pq,
    "compare": _gen_compare, "tree_tokens": _gen_tree_tokens, "exact_rule": _gen_exact_rule,
    # what a senior interviewer probes next: long context, paged KV, exact rules compared, tree masks
    "kv_batch": _gen_kv_batch, "rollback_pages": _gen_rollback_pages, "sample_compare": _gen_sample_compare,
    "tree_mask": _gen_tree_mask,
}
DRILL_KINDS: tuple[str, ...] = tuple(_GENERATORS)
SENIOR_KINDS: tuple[str, ...] = ("kv_batch", "rollback_pages", "sample_compare", "tree_mask")
DRILL_LEVELS: dict[str, tuple[str, ...]] = {     # the sets the interview page offers, each seeded the same way
    "All": DRILL_KINDS,
    "Foundations": tuple(k for k in DRILL_KINDS if k not in SENIOR_KINDS),
    "Senior": SENIOR_KINDS,
}
DRILL_TITLES: dict[str, str] = {
    "tokens": "Expected tokens per pass", "speedup": "Speedup", "best_gamma": "Best draft length",
    "break_even": "Break-even acceptance", "crossover": "Crossover batch", "alpha_pq": "Alpha from p and q",
    "compare": "Which configuration is faster", "tree_tokens": "Expected tokens from a draft tree",
    "exact_rule": "Which verifier is exact", "kv_batch": "Where KV reads take over (long context)",
    "rollback_pages": "Rollback in a paged KV cache", "sample_compare": "What sample-and-compare gives up",
    "tree_mask": "Tree attention mask",
}
BATCH_KINDS = ("crossover", "kv_batch")          # answers that are a batch: either neighbouring integer passes
INTEGER_VERDICTS = {"best_gamma": "the best gamma is {}", "rollback_pages": "the rollback frees {} page(s)",
                    "tree_mask": "the mask allows {} entries"}


def make_drill(kind: str, seed: int | str) -> Drill:
    """The drill of this kind for this seed; the same seed always gives the same drill."""
    if kind not in _GENERATORS:
        raise ValueError(f"kind must be one of {', '.join(DRILL_KINDS)}; got {kind!r}")
    return Drill(kind=kind, params=_GENERATORS[kind](_rng(seed, kind)))


def drill_set(seed: int | str, kinds: tuple[str, ...] = DRILL_KINDS) -> list[Drill]:
    """One drill of each kind for this seed."""
    return [make_drill(k, seed) for k in kinds]


# --------------------------------------------------------------- grading ----
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d*)?$")     # 1,000 or 12,345.6: commas group digits
NOT_A_NUMBER = "That is not a number: type digits, for example 2.53."


def _clean(text: str) -> str:
    """Lower case, no spaces at the ends, a trailing 'x' or multiplication sign dropped ('2.8x' -> '2.8')."""
    return str(text).strip().lower().replace("\u00d7", "x").rstrip("x").strip()


def decimal_comma_message(text: str) -> str | None:
    """A message if the typed number contains a comma, else None.

    In a drill answer a comma is ambiguous: '1,57' is 1.57 to half of Europe and 157 to a parser that
    drops thousands separators. Every drill answer is below 1000, so no separator is ever needed; the
    answer is asked again, with both readings spelled out (they are digits and a point, nothing typed).
    """
    s = _clean(text)
    if "," not in s:
        return None
    as_point, as_group = s.replace(",", ".", 1), s.replace(",", "")
    if s.count(",") == 1 and _NUMBER.match(as_point) and _NUMBER.match(as_group):
        return (f"That has a comma, which could mean {as_point} or {as_group}. Type decimals with a point "
                f"({as_point}) and no thousands separator, then check again.")
    return "That has a comma: type decimals with a point (for example 2.53) and no thousands separator."


def parse_number(text: str) -> float:
    """A float from typed text; allows '1,000' (commas grouping thousands), '2.8x', '2.8 x'.
    A comma that does not group digits in threes ('1,57') is refused as a possible decimal comma."""
    s = _clean(text)
    if "," in s:
        if not _THOUSANDS.match(s):
            raise ValueError(decimal_comma_message(text) or NOT_A_NUMBER)
        s = s.replace(",", "")
    if not _NUMBER.match(s):
        raise ValueError(NOT_A_NUMBER)
    return float(s)


def within_tolerance(x: float, answer: float) -> bool:
    """|x - answer| <= max(REL_TOL |answer|, ABS_TOL)."""
    return abs(x - answer) <= max(REL_TOL * abs(answer), ABS_TOL)


def neighbouring_integers(answer: float) -> tuple[int, ...]:
    """The integers either side of a fractional answer (floor and ceil); the answer itself if integral."""
    lo, hi = math.floor(answer), math.ceil(answer)
    return (lo,) if lo == hi else (lo, hi)


def accepts_whole_batch(drill: Drill, x: float) -> bool:
    """A batch drill (BATCH_KINDS) asks for a whole number of requests: either integer beside the exact
    (fractional) crossover is accepted, since the crossover lies between them."""
    return drill.kind in BATCH_KINDS and float(x).is_integer() and int(x) in neighbouring_integers(drill.answer())


def diagnose(drill: Drill, response: str) -> str:
    """The common mistake a wrong response matches (drill_mistakes, within the drill tolerance), or ''."""
    if drill.answer_type == "choice":
        x: float | str = str(response).strip().upper()
    else:
        try:
            x = parse_number(response)
        except ValueError:
            return ""
    answer = drill.answer()
    for m in mistakes(drill.kind, drill.params):
        if isinstance(m.value, str) or isinstance(x, str):
            hit = m.value == x
        elif drill.answer_type == "integer":
            hit = x == m.value and m.value != answer
        else:
            hit = within_tolerance(float(x), float(m.value)) and not within_tolerance(float(m.value), float(answer))
        if hit:
            return m.looks_like
    return ""


RETRY_TEXT = "One more try before the answer is shown."


def _wrong(drill: Drill, response: str, shown: str, final: bool) -> Grade:
    """A valid wrong answer: the diagnosis, then the answer (final) or a retry."""
    why = diagnose(drill, response)
    if not final:
        return Grade(True, False, f"Not quite: that looks like {why}. {RETRY_TEXT}" if why else
                     f"Not quite. {RETRY_TEXT}", why, final=False)
    return Grade(True, False, shown + (f" Your answer looks like {why}." if why else ""), why)


def grade(drill: Drill, response: str, final: bool = True) -> Grade:
    """Grade a typed response against the drill's computed answer. Nothing typed is echoed in the message.
    final=False: a wrong answer gets its diagnosis and a retry, not the answer."""
    answer = drill.answer()
    if not str(response).strip():
        return Grade(False, False, "Type an answer first.")
    if drill.answer_type == "choice":
        choice = str(response).strip().upper()
        if choice not in ("A", "B"):
            return Grade(False, False, "That is not a choice: answer A or B.")
        verdict = "is faster" if drill.kind == "compare" else "emits exactly p"
        return Grade(True, True, "Right.") if choice == answer else \
            _wrong(drill, choice, f"Not quite: {answer} {verdict}.", final)
    comma = decimal_comma_message(response)
    if comma:
        return Grade(False, False, comma)
    try:
        x = parse_number(response)
    except ValueError as exc:
        return Grade(False, False, str(exc))
    if drill.answer_type == "integer":
        return Grade(True, True, "Right.") if x == answer else \
            _wrong(drill, response, f"Not quite: {INTEGER_VERDICTS[drill.kind].format(answer)}.", final)
    exact = float(answer)
    if drill.kind in BATCH_KINDS:
        either = " or ".join(str(b) for b in neighbouring_integers(exact))
        why = f"A batch is a whole number of requests, so {either} (either side of {exact:.4g}) counts as right."
        if within_tolerance(x, exact) or accepts_whole_batch(drill, x):
            return Grade(True, True, f"Right: the crossover is {exact:.4g}. {why}")
        return _wrong(drill, response, f"Not quite: the crossover is {exact:.4g}. {why}", final)
    if within_tolerance(x, exact):
        return Grade(True, True, f"Right: {exact:.4g}.")
    return _wrong(drill, response, f"Not quite: the answer is {exact:.4g}.", final)
