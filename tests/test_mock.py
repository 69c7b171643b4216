"""The mock interview: after Submit every question shows its own worked solution or reasons, right or wrong."""

from __future__ import annotations

from content import drill_text, interview_content, mock


def _wrong_answers(m: mock.MockSet) -> tuple[dict[str, str], dict[str, int | None]]:
    answers = {d.kind: ("B" if d.answer() == "A" else "A") if d.answer_type == "choice" else "123456"
               for d in m.drills}
    picks = {q.key: next(i for i, o in enumerate(q.options) if not o.correct) for q in m.concepts}
    return answers, picks


def test_every_question_gets_its_solution_after_submit():
    m = mock.mock_set("classroom")
    answers, picks = _wrong_answers(m)
    r = mock.score(m, answers, picks, phrases=0, seconds=60.0)
    assert len(r.items) == len(m.drills) + len(m.concepts)
    assert not any(i.correct for i in r.items)
    for d, item in zip(m.drills, r.items):
        assert list(item.lines[-len(drill_text.solution(d)):]) == drill_text.solution(d)
    for q, item in zip(m.concepts, r.items[len(m.drills):]):
        right = next(o for o in q.options if o.correct)
        assert any(right.text in line for line in item.lines)
        assert item.lines[0].startswith("You picked: ")


def test_right_answers_are_marked_right():
    m = mock.mock_set("classroom")
    answers = {d.kind: str(d.answer()) for d in m.drills}
    picks = {q.key: next(i for i, o in enumerate(q.options) if o.correct) for q in m.concepts}
    r = mock.score(m, answers, picks, phrases=len(interview_content.KEY_PHRASES), seconds=60.0)
    assert all(i.correct for i in r.items) and r.points == r.total


def test_the_page_shows_one_expander_per_question_after_submit(app_test):
    at = app_test("views/interview.py", part="Mock interview")
    assert not [e for e in at.expander if e.label.endswith(("(wrong)", "(right)"))]     # nothing before a submit
    at.session_state["iv_mock_results"] = [mock.score(mock.mock_set("x"), {}, {}, 0, 30.0)]
    at.run()
    titles = [e.label for e in at.expander]
    m = mock.mock_set("x")
    assert sum(1 for t in titles if t.endswith("(wrong)")) == len(m.drills) + len(m.concepts)
    assert not at.exception
