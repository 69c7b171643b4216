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
from dataclasses import dataclass, field

import numpy as np

from specdec_core.drill_kinds import DRILL_KINDS, KINDS
from specdec_core.drill_mistakes import Mistake

REL_TOL = 0.01          # 1 % of the exact value ...
ABS_TOL = 0.005         # ... or 0.005, whichever is larger
CLASSROOM_SEED = "classroom"
TOLERANCE_TEXT = (
    "within 1% of the exact value or 0.005, whichever is larger; a whole-number answer (best gamma, pages, "
    "mask entries) must be exact; a batch may also be either whole number beside the exact value"
)

@dataclass(frozen=True)
class Drill:
    """One drill: its kind and inputs. The answer is not a field: it is computed on demand."""

    kind: str
    params: dict = field(hash=False)

    @property
    def answer_type(self) -> str:
        """'number', 'integer' or 'choice' (drill_kinds.DrillKind)."""
        return KINDS[self.kind].answer_type

    def answer(self) -> float | int | str:
        """The exact answer, from specdec_core."""
        return KINDS[self.kind].answer(self.params)


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


def make_drill(kind: str, seed: int | str) -> Drill:
    """The drill of this kind for this seed; the same seed always gives the same drill."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {', '.join(DRILL_KINDS)}; got {kind!r}")
    return Drill(kind=kind, params=KINDS[kind].generate(_rng(seed, kind)))


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
    """A batch drill (DrillKind.whole_batch) asks for a whole number of requests: either integer beside the exact
    (fractional) crossover is accepted, since the crossover lies between them."""
    return KINDS[drill.kind].whole_batch and float(x).is_integer() and int(x) in neighbouring_integers(drill.answer())


def mistakes(kind: str, params: dict) -> list[Mistake]:
    """The tempting wrong answers of this drill kind for these inputs (non-finite values dropped)."""
    return [m for m in KINDS[kind].mistakes(params) if isinstance(m.value, str) or np.isfinite(float(m.value))]


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
        return Grade(True, True, "Right.") if choice == answer else \
            _wrong(drill, choice, f"Not quite: {KINDS[drill.kind].verdict.format(answer)}.", final)
    comma = decimal_comma_message(response)
    if comma:
        return Grade(False, False, comma)
    try:
        x = parse_number(response)
    except ValueError as exc:
        return Grade(False, False, str(exc))
    if drill.answer_type == "integer":
        return Grade(True, True, "Right.") if x == answer else \
            _wrong(drill, response, f"Not quite: {KINDS[drill.kind].verdict.format(answer)}.", final)
    exact = float(answer)
    if KINDS[drill.kind].whole_batch:
        either = " or ".join(str(b) for b in neighbouring_integers(exact))
        why = f"A batch is a whole number of requests, so {either} (either side of {exact:.4g}) counts as right."
        if within_tolerance(x, exact) or accepts_whole_batch(drill, x):
            return Grade(True, True, f"Right: the crossover is {exact:.4g}. {why}")
        return _wrong(drill, response, f"Not quite: the crossover is {exact:.4g}. {why}", final)
    if within_tolerance(x, exact):
        return Grade(True, True, f"Right: {exact:.4g}.")
    return _wrong(drill, response, f"Not quite: the answer is {exact:.4g}.", final)
