"""A mock interview: a timed mixed set (numeric drills, concept questions, the 30-second answer), its score and
the topics to review. Plain data and selection; every answer is graded by specdec_core.drills or the content's
own check_choice.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from content import drill_text, interview_content
from specdec_core.drill_kinds import DRILL_KINDS, DRILL_TITLES
from specdec_core.drills import Drill, grade, make_drill, seed_to_int

N_DRILLS, N_CONCEPTS = 4, 3
TIME_LIMIT_S = 10 * 60            # a first-round screen's budget for this much
PHRASES_TO_PASS = 6               # of the 30-second answer's key phrases


@dataclass(frozen=True)
class MockSet:
    """The questions of one mock interview, fixed by its seed."""

    seed: str
    drills: tuple[Drill, ...]
    concepts: tuple[interview_content.ConceptQuestion, ...]


@dataclass(frozen=True)
class MockItem:
    """One answered question of a finished mock: right or not, and the worked solution or the reasons, in lines."""

    title: str
    correct: bool
    lines: tuple[str, ...]


@dataclass(frozen=True)
class MockResult:
    """A finished mock: points per part, the time it took, what to review, and each question's solution."""

    seed: str
    points: int
    total: int
    seconds: float
    review: tuple[str, ...] = field(default=())
    items: tuple[MockItem, ...] = field(default=())

    @property
    def over_time(self) -> bool:
        """True when it took longer than the time limit."""
        return self.seconds > TIME_LIMIT_S


def mock_set(seed: str) -> MockSet:
    """N_DRILLS drill kinds and N_CONCEPTS concept questions drawn by the seed (same seed, same interview)."""
    rng = np.random.default_rng(seed_to_int(f"mock:{seed}"))
    kinds = rng.choice(len(DRILL_KINDS), size=N_DRILLS, replace=False)
    qs = rng.choice(len(interview_content.CONCEPT_QUESTIONS), size=N_CONCEPTS, replace=False)
    return MockSet(seed, tuple(make_drill(DRILL_KINDS[int(k)], seed) for k in sorted(kinds)),
                   tuple(interview_content.CONCEPT_QUESTIONS[int(i)] for i in sorted(qs)))


def score(m: MockSet, answers: dict[str, str], picks: dict[str, int | None], phrases: int,
          seconds: float) -> MockResult:
    """One point per right drill (graded at once, no retry), per right concept, and one for saying at least
    PHRASES_TO_PASS key phrases; the topics to review are the missed ones' titles and traps."""
    review: list[str] = []
    items: list[MockItem] = []
    points = 0
    for d in m.drills:
        g = grade(d, answers.get(d.kind, ""))
        points += g.correct
        if not g.correct:
            review.append(f"Drill: {DRILL_TITLES[d.kind]}")
        verdict = [g.message] + ([f"The common mistake behind it: {g.mistake}"] if g.mistake else [])
        items.append(MockItem(DRILL_TITLES[d.kind], bool(g.correct), (*verdict, *drill_text.solution(d))))
    for q in m.concepts:
        pick = picks.get(q.key)
        ok = pick is not None and interview_content.check_choice(q, pick)[0]
        points += ok
        if not ok:
            review.append(f"Concept: {q.trap}")
        items.append(MockItem(q.question, bool(ok), _concept_lines(q, pick)))
    said = phrases >= PHRASES_TO_PASS
    points += said
    if not said:
        review.append("The 30-second answer: practise it until you say its key phrases")
    return MockResult(m.seed, int(points), len(m.drills) + len(m.concepts) + 1, float(seconds), tuple(review),
                      tuple(items))


def _concept_lines(q: interview_content.ConceptQuestion, pick: int | None) -> tuple[str, ...]:
    """Why the picked option is right or wrong (or that none was picked), then the right option and its reason."""
    right = next(o for o in q.options if o.correct)
    mine = ("You picked none." if pick is None else
            f"You picked: {q.options[pick].text} {interview_content.check_choice(q, pick)[1]}")
    return (mine, f"The right answer: {right.text} {right.why}", f"The trap: {q.trap}")
