"""AppTest: the interview page. Checklist and walkthrough links open their pages in the stated state;
drills are graded right and wrong; classroom mode predicts then reveals; the other sections work."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qsl

import pytest

from content import drill_text, interview_content
from specdec_core import drills
from specdec_core.drill_kinds import DRILL_KINDS, DRILL_TITLES, SENIOR_KINDS
from specdec_core.drills import mistakes
from ui.controls import widget_key
from ui.interview import widgets

PAGE = "views/interview.py"


def _no_exception(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _links(at) -> list[tuple[str, dict[str, str]]]:
    """(url path, query params) of every st.page_link on the current run, but the sidebar's tour start."""
    links = [(pl.proto.page, dict(parse_qsl(pl.proto.query_string))) for pl in at.get("page_link")]
    return [x for x in links if "tour" not in x[1]]


def _assert_page_took_params(app_test, link: interview_content.Link) -> None:
    """Open link.page with link.params; each bound widget holds the value given in the URL."""
    at = app_test(link.page, **link.params)
    _no_exception(at)
    assert not [w.value for w in at.warning if "in the URL" in w.value], (
        f"{link.url}: a URL value was refused"
    )
    page = Path(link.page).stem  # the page's scope in ui.controls
    for key, raw in link.params.items():
        wkey = widget_key(key, page)
        assert wkey in at.session_state, f"{link.url}: the page binds no widget with key {wkey!r}"
        value = at.session_state[wkey]
        if isinstance(value, bool):
            assert value == (raw.lower() in ("1", "true")), (link.url, key, value)
        elif isinstance(value, (int, float)):
            assert float(value) == pytest.approx(float(raw)), (link.url, key, value)
        else:
            assert str(value) == raw, (link.url, key, value)


# -------------------------------------------------------------- checklist ----
def test_checklist_shows_five_points_each_linking_its_state(app_test):
    at = app_test(PAGE)  # the checklist is the default section
    _no_exception(at)
    text = " ".join(m.value for m in at.markdown)
    for item in interview_content.CHECKLIST:
        assert item.point in text and item.explanation in text
    links = _links(at)
    want = [
        (item.link.page.removeprefix("views/").removesuffix(".py"), item.link.params)
        for item in interview_content.CHECKLIST
    ]
    assert links == want


@pytest.mark.parametrize("item", interview_content.CHECKLIST, ids=lambda i: i.point[:30])
def test_checklist_link_opens_its_page_with_those_params(app_test, item):
    _assert_page_took_params(app_test, item.link)


@pytest.mark.parametrize("step", interview_content.WALKTHROUGH, ids=lambda s: s.title[:30])
def test_walkthrough_link_opens_its_page_with_those_params(app_test, step):
    _assert_page_took_params(app_test, step.link)


# ----------------------------------------------------------------- drills ----
def _drills(app_test, **query):
    at = app_test(PAGE, part="Drills", seed="classroom", **query)
    _no_exception(at)
    return at


def test_drill_answered_right_then_wrong_is_graded_each_time_but_scored_once(app_test):
    at = _drills(app_test)
    tokens = drills.make_drill("tokens", "classroom")
    assert drill_text.prompt(tokens) in " ".join(m.value for m in at.markdown)
    assert at.metric[0].value == f"0 / {len(DRILL_KINDS)}"

    at.text_input(key="ans_tokens").input(f"{tokens.answer():.2f}").run()  # 3.95: right
    at.button(key="chk_tokens").click().run()
    _no_exception(at)
    assert [s.value for s in at.success] == [f"Right: {tokens.answer():.4g}."]
    assert not at.error
    assert at.metric[0].value == f"1 / {len(DRILL_KINDS)}"
    assert any("tokens per pass" in c.value for c in at.code)  # the worked solution

    at.text_input(key="ans_tokens").input("3.5").run()  # wrong, after the solution
    at.button(key="chk_tokens").click().run()
    _no_exception(at)
    assert [e.value for e in at.error] == [f"Not quite: the answer is {tokens.answer():.4g}."]
    assert at.metric[0].value == f"1 / {len(DRILL_KINDS)}"  # the first answer stands
    assert at.metric[1].value == f"1 / {len(DRILL_KINDS)}"


def test_copying_the_shown_solution_does_not_raise_the_score(app_test):
    """The reviewer's exploit: answer wrong twice, read the worked solution, type its number. The score stays 0."""
    at = _drills(app_test)
    d = drills.make_drill("speedup", "classroom")
    for _ in range(2):  # a retry, then the solution
        at.text_input(key="ans_speedup").input("9").run()
        at.button(key="chk_speedup").click().run()
    assert any(f"= {d.answer():.2f}x" in c.value for c in at.code)  # the solution is on screen
    at.text_input(key="ans_speedup").input(f"{d.answer():.2f}").run()
    at.button(key="chk_speedup").click().run()
    _no_exception(at)
    assert [s.value for s in at.success] == [f"Right: {d.answer():.4g}."]  # graded ...
    assert at.metric[0].value == f"0 / {len(DRILL_KINDS)}"  # ... but not scored
    assert any("Scored not right" in c.value for c in at.caption)


def test_wrong_answer_gets_its_diagnosis_then_one_retry(app_test):
    """The reviewer's case: 1.65 to the speedup drill is E[N] before dividing by the cost. It is named, the answer
    stays hidden, and the retry (right here) scores."""
    at = _drills(app_test)
    d = drills.make_drill("speedup", "classroom")  # alpha 0.65, gamma 1: E[N] 1.65
    at.text_input(key="ans_speedup").input("1.65").run()
    at.button(key="chk_speedup").click().run()
    _no_exception(at)
    err = at.error[0].value
    assert "E[N] before dividing by the cost" in err and drills.RETRY_TEXT in err and f"{d.answer():.4g}" not in err
    assert not at.code and at.metric[1].value == f"0 / {len(DRILL_KINDS)}"  # no solution, not scored yet
    assert "give_speedup" in [b.key for b in at.button]
    at.text_input(key="ans_speedup").input(f"{d.answer():.3f}").run()
    at.button(key="chk_speedup").click().run()
    assert at.metric[0].value == f"1 / {len(DRILL_KINDS)}"
    assert any(drill_text.solution(d)[-1] in c.value for c in at.code)


def test_show_the_answer_after_a_wrong_try_reveals_and_scores_wrong(app_test):
    at = _drills(app_test)
    d = drills.make_drill("tokens", "classroom")
    at.text_input(key="ans_tokens").input("1").run()
    at.button(key="chk_tokens").click().run()
    at.button(key="give_tokens").click().run()
    _no_exception(at)
    assert at.error[0].value.startswith(f"Not quite: the answer is {d.answer():.4g}.")
    assert at.metric[0].value == f"0 / {len(DRILL_KINDS)}" and at.metric[1].value == f"1 / {len(DRILL_KINDS)}"


def test_invalid_input_before_the_first_answer_does_not_freeze_the_score(app_test):
    at = _drills(app_test)
    d = drills.make_drill("speedup", "classroom")  # 1.5714
    at.text_input(key="ans_speedup").input("1,57").run()  # a decimal comma: asked again
    at.button(key="chk_speedup").click().run()
    _no_exception(at)
    assert any("comma" in w.value and "1.57" in w.value for w in at.warning)
    assert not any("tokens per pass" in c.value for c in at.code)  # no solution shown yet
    assert at.metric[1].value == f"0 / {len(DRILL_KINDS)}"
    at.text_input(key="ans_speedup").input("1.57").run()
    at.button(key="chk_speedup").click().run()
    assert at.metric[0].value == f"1 / {len(DRILL_KINDS)}"
    assert d.answer() == pytest.approx(1.5714, abs=1e-4)


def test_crossover_drill_accepts_the_rounded_batch_and_says_why(app_test):
    at = app_test(PAGE, part="Drills", seed="2")  # H100 PCIe, W8A16, gamma 7: 23.62
    d = drills.make_drill("crossover", "2")
    assert 23 < d.answer() < 24
    at.text_input(key="ans_crossover").input("24").run()
    at.button(key="chk_crossover").click().run()
    _no_exception(at)
    assert len(at.success) == 1 and "whole number" in at.success[0].value and "23 or 24" in at.success[0].value
    assert at.metric[0].value == f"1 / {len(DRILL_KINDS)}"


def test_score_counts_several_drills_and_a_choice(app_test):
    at = _drills(app_test)
    best = drills.make_drill("best_gamma", "classroom").answer()
    at.text_input(key="ans_best_gamma").input(str(best)).run()
    at.button(key="chk_best_gamma").click().run()
    winner = drills.make_drill("compare", "classroom").answer()
    at.radio(key="ans_compare").set_value(winner).run()
    at.button(key="chk_compare").click().run()
    loser = "B" if winner == "A" else "A"
    for _ in range(2):  # wrong, and wrong on the retry
        at.text_input(key="ans_alpha_pq").input("0.1").run()
        at.button(key="chk_alpha_pq").click().run()
    _no_exception(at)
    assert at.metric[0].value == f"2 / {len(DRILL_KINDS)}"
    assert at.metric[1].value == f"3 / {len(DRILL_KINDS)}"
    assert loser not in [s.value for s in at.success]


def test_bad_input_gets_a_message_and_is_not_scored(app_test):
    at = _drills(app_test)
    at.text_input(key="ans_speedup").input("fast").run()
    at.button(key="chk_speedup").click().run()
    _no_exception(at)
    assert any("is not a number" in w.value for w in at.warning)
    assert at.metric[1].value == f"0 / {len(DRILL_KINDS)}"


def test_seed_in_url_fixes_the_set(app_test):
    at = app_test(PAGE, part="Drills", seed="42")
    _no_exception(at)
    text = " ".join(m.value for m in at.markdown)
    for d in drills.drill_set("42"):
        assert drill_text.prompt(d) in text


def test_new_set_changes_the_seed(app_test):
    at = _drills(app_test)
    at.button(key="new_set").click().run()
    _no_exception(at)
    seed = at.text_input(key="interview.seed").value
    assert seed and seed != "classroom"
    assert drill_text.prompt(drills.make_drill("tokens", seed)) in " ".join(m.value for m in at.markdown)


def test_classroom_button_and_a_shareable_link_for_any_seed(app_test):
    at = app_test(PAGE, part="Drills", seed="my set&x")
    _no_exception(at)
    captions = " ".join(c.value for c in at.caption)
    assert "seed=my%20set%26x" in captions  # the link text survives a copy-paste
    at.button(key="class_set").click().run()
    assert at.text_input(key="interview.seed").value == drills.CLASSROOM_SEED


# -------------------------------------------------------------- classroom ----
@pytest.mark.parametrize("flag", ["1", "true"])
def test_classroom_flag_in_url_turns_it_on(app_test, flag):
    at = app_test(PAGE, part="Drills", classroom=flag)
    _no_exception(at)
    assert at.toggle(key="interview.classroom").value is True
    css = " ".join(m.value for m in at.sidebar.markdown)  # ui.presenter.inject: presenter mode's CSS
    assert "stSidebar" in css and "display: none" in css and "font-size" in css
    # without a seed in the URL, classroom mode uses the shared classroom set
    assert drill_text.prompt(drills.make_drill("tokens", drills.CLASSROOM_SEED)) in " ".join(
        m.value for m in at.markdown
    )


def test_classroom_predict_then_reveal(app_test):
    at = app_test(PAGE, part="Drills", classroom="true")
    d = drills.make_drill("speedup", drills.CLASSROOM_SEED)
    assert "rev_speedup" not in [b.key for b in at.button]  # nothing to reveal before a prediction
    at.text_input(key="ans_speedup").input("2").run()
    at.button(key="lock_speedup").click().run()
    _no_exception(at)
    assert any("Prediction locked in: **2**" in m.value for m in at.markdown)
    assert not any("speedup =" in c.value for c in at.code)  # the answer is not shown yet
    at.button(key="rev_speedup").click().run()
    _no_exception(at)
    assert [e.value for e in at.error] == [f"Not quite: the answer is {d.answer():.4g}."]
    assert any(f"= {d.answer():.2f}x" in c.value for c in at.code)
    assert at.metric[1].value == f"1 / {len(DRILL_KINDS)}"


def test_classroom_empty_prediction_is_not_locked(app_test):
    at = app_test(PAGE, part="Drills", classroom="true")
    at.button(key="lock_tokens").click().run()
    _no_exception(at)
    assert "rev_tokens" not in [b.key for b in at.button]


# ------------------------------------------------------------ other parts ----
def test_concept_question_wrong_then_right(app_test):
    at = app_test(PAGE, part="Concepts")
    _no_exception(at)
    q = interview_content.CONCEPT_QUESTIONS[0]
    wrong = next(i for i, o in enumerate(q.options) if not o.correct)
    at.radio(key=f"cq_{q.key}").set_value(wrong).run()
    assert [e.value for e in at.error] == ["Not this one. " + q.options[wrong].why]
    at.radio(key=f"cq_{q.key}").set_value(q.answer_index).run()
    assert [s.value for s in at.success] == ["Right. " + q.options[q.answer_index].why]


def test_a_trap_is_named_only_after_its_question_is_answered(app_test):
    at = app_test(PAGE, part="Concepts")
    _no_exception(at)
    shown = lambda: " ".join([m.value for m in at.markdown] + [c.value for c in at.caption])  # noqa: E731
    assert "Trap" not in shown() and not any(q.trap in shown() for q in interview_content.CONCEPT_QUESTIONS)
    first, second = interview_content.CONCEPT_QUESTIONS[:2]
    at.radio(key=f"cq_{first.key}").set_value(0).run()
    assert first.trap in shown() and second.trap not in shown()


def test_thirty_second_practice(app_test):
    at = app_test(PAGE, part="30-second")
    _no_exception(at)
    assert at.info[0].value == interview_content.THIRTY_SECOND_ANSWER
    assert any(
        f"{interview_content.word_count(interview_content.THIRTY_SECOND_ANSWER)} words" in c.value for c in at.caption
    )
    at.button(key="practice_start").click().run()
    _no_exception(at)
    assert not at.info or at.info[0].value != interview_content.THIRTY_SECOND_ANSWER  # hidden while practising
    assert any("s left" in p.proto.text for p in at.get("progress"))
    assert not at.checkbox and not any(
        p in m.value for p in interview_content.KEY_PHRASES for m in at.markdown
    )  # not given away
    at.session_state[widgets.T0] = (
        at.session_state[widgets.T0] - interview_content.PRACTICE_SECONDS - 1
    )  # the timer runs out
    at.run()
    _no_exception(at)
    assert at.session_state[widgets.RUNNING] is False and len(at.checkbox) == len(interview_content.KEY_PHRASES)
    at.checkbox(key="phrase_0").check().run()
    at.checkbox(key="phrase_4").check().run()
    assert any(p.proto.text == f"2 of {len(interview_content.KEY_PHRASES)} key phrases" for p in at.get("progress"))


def test_flashcard_reveal(app_test):
    at = app_test(PAGE, part="Flashcards", card="3")
    _no_exception(at)
    card = interview_content.FLASHCARDS[2]
    assert any(card.front in m.value for m in at.markdown)
    assert not at.latex
    at.toggle(key="fc_reveal_3").set_value(True).run()
    assert card.latex in at.latex[0].value


def test_walkthrough_reveal_and_next(app_test):
    at = app_test(PAGE, part="Walkthrough", step="2")
    _no_exception(at)
    assert any(p.proto.text.startswith(f"Step 2 of {len(interview_content.WALKTHROUGH)}") for p in at.get("progress"))
    step = interview_content.WALKTHROUGH[1]
    assert _links(at)[0] == (step.link.page.removeprefix("views/").removesuffix(".py"), step.link.params)
    at.toggle(key="walk_reveal_2").set_value(True).run()
    assert at.success[0].value == interview_content.reveal_text(step)
    at.button(key="walk_next").click().run()
    _no_exception(at)
    assert at.session_state["interview.step"] == 3
    assert any(interview_content.WALKTHROUGH[2].title in m.value for m in at.markdown)


@pytest.mark.parametrize(
    "query",
    [
        {"part": "Nonsense"},
        {"part": "Flashcards", "card": "99"},
        {"part": "Walkthrough", "step": "0"},
        {"part": "Drills", "seed": "x" * 300},
        {"part": "Drills", "level": "Expert"},
    ],
)
def test_bad_urls_give_no_traceback(app_test, query):
    at = app_test(PAGE, **query)
    _no_exception(at)
    assert at.title[0].value == "Interview prep"


# ------------------------------------------------ every kind's solution ----
def _right(d: drills.Drill) -> str:
    a = d.answer()
    return str(a) if d.answer_type != "number" else f"{a:.4f}"


def _wrong(d: drills.Drill) -> str:
    a = d.answer()
    if d.answer_type == "choice":
        return "B" if a == "A" else "A"
    return str(a + 3) if d.answer_type == "integer" else f"{2 * a + 1:.4f}"


def _answer(at, d: drills.Drill, text: str) -> None:
    if d.answer_type == "choice":
        at.radio(key=f"ans_{d.kind}").set_value(text).run()
    else:
        at.text_input(key=f"ans_{d.kind}").input(text).run()


@pytest.mark.parametrize("kind", DRILL_KINDS)
@pytest.mark.parametrize("how", ["right", "wrong"])
def test_every_kind_answered_shows_its_solution_and_figure(app_test, kind, how):
    """The reviewer's crash: the tree drill answered right raised KeyError 'p' from the figure, and every
    later rerun of that session too. Each kind's worked solution and figure render, and survive a rerun."""
    at = _drills(app_test)
    d = drills.make_drill(kind, "classroom")
    for _ in range(1 if how == "right" else 2):  # a wrong answer has one retry
        _answer(at, d, _right(d) if how == "right" else _wrong(d))
        at.button(key=f"chk_{kind}").click().run()
        _no_exception(at)
    verdicts = at.success if how == "right" else at.error
    assert len(verdicts) == 1, [v.value for v in verdicts]
    assert any(drill_text.solution(d)[-1] in c.value for c in at.code)
    assert len(at.get("plotly_chart")) == 1  # the drill on its curve
    at.run()  # a later rerun still renders
    _no_exception(at)


@pytest.mark.parametrize("kind", DRILL_KINDS)
def test_every_kind_wrong_in_a_common_way_is_diagnosed_then_retried(app_test, kind):
    """Each kind's first common mistake, typed as the answer: its diagnosis shows, the answer does not."""
    at = _drills(app_test)
    d = drills.make_drill(kind, "classroom")
    m = next(m for m in mistakes(kind, d.params) if drills.diagnose(d, _typed(m.value)))
    _answer(at, d, _typed(m.value))
    at.button(key=f"chk_{kind}").click().run()
    _no_exception(at)
    assert [e.value for e in at.error] == [f"Not quite: that looks like {m.looks_like}. {drills.RETRY_TEXT}"]
    assert not at.code and not at.get("plotly_chart")


def _typed(value) -> str:
    return value if isinstance(value, str) else (str(value) if isinstance(value, int) else f"{value:.4f}")


@pytest.mark.parametrize("kind", DRILL_KINDS)
def test_every_kind_revealed_in_classroom_mode(app_test, kind):
    at = app_test(PAGE, part="Drills", classroom="true")
    d = drills.make_drill(kind, drills.CLASSROOM_SEED)
    _answer(at, d, _right(d))
    at.button(key=f"lock_{kind}").click().run()
    at.button(key=f"rev_{kind}").click().run()
    _no_exception(at)
    assert any(drill_text.solution(d)[-1] in c.value for c in at.code)
    assert len(at.get("plotly_chart")) == 1


def test_senior_level_shows_only_its_drills_each_diagnosed_then_right(app_test):
    """?level=Senior: the four senior kinds alone, scored out of 4; each one's typical mistake is named, then the
    right answer on the retry scores it, with its solution and its own figure."""
    at = _drills(app_test, level="Senior")
    text = " ".join(m.value for m in at.markdown)
    senior = [drills.make_drill(k, "classroom") for k in SENIOR_KINDS]
    assert all(drill_text.prompt(d) in text for d in senior)
    assert drill_text.prompt(drills.make_drill("tokens", "classroom")) not in text
    assert at.metric[0].value == f"0 / {len(SENIOR_KINDS)}"
    for n, d in enumerate(senior, start=1):
        m = next(m for m in mistakes(d.kind, d.params) if drills.diagnose(d, _typed(m.value)))
        _answer(at, d, _typed(m.value))
        at.button(key=f"chk_{d.kind}").click().run()
        _no_exception(at)
        assert f"Not quite: that looks like {m.looks_like}. {drills.RETRY_TEXT}" in [e.value for e in at.error]
        _answer(at, d, _right(d))
        at.button(key=f"chk_{d.kind}").click().run()
        _no_exception(at)
        assert at.metric[0].value == f"{n} / {len(SENIOR_KINDS)}"
        assert any(drill_text.solution(d)[-1] in c.value for c in at.code)
    assert len(at.get("plotly_chart")) == len(SENIOR_KINDS)


# ---------------------------------------------------------- mock interview ----
def test_mock_interview_scores_and_names_topics_to_review_and_keeps_results(app_test):
    from content import mock
    from ui.interview import mock as interview_mock

    at = app_test(PAGE, part="Mock interview")
    _no_exception(at)
    at.button(key="mock_start").click().run()
    _no_exception(at)
    m, _ = at.session_state[interview_mock.ACTIVE]
    assert len(m.drills) == mock.N_DRILLS and len(m.concepts) == mock.N_CONCEPTS
    assert not at.code  # no worked solution while it runs
    right, wrong = m.drills[0], m.drills[1]  # one drill right, one wrong, the rest blank
    for d, text in ((right, _right(right)), (wrong, _wrong(wrong))):
        if d.answer_type == "choice":
            at.radio(key=f"mock_ans_{d.kind}").set_value(text)
        else:
            at.text_input(key=f"mock_ans_{d.kind}").input(text)
    q = m.concepts[0]
    at.radio(key=f"mock_cq_{q.key}").set_value(q.answer_index)
    for k in range(mock.PHRASES_TO_PASS):
        at.checkbox(key=f"mock_phrase_{k}").check()
    next(b for b in at.button if b.label == "Submit").click().run()  # the form sends everything at once
    _no_exception(at)
    results = at.session_state[interview_mock.RESULTS]
    assert len(results) == 1 and results[0].points == 3 and results[0].total == mock.N_DRILLS + mock.N_CONCEPTS + 1
    review = " ".join(m.value for m in at.markdown)
    assert f"Drill: {DRILL_TITLES[wrong.kind]}" in review and f"Drill: {DRILL_TITLES[right.kind]}" not in review
    assert f"Concept: {m.concepts[1].trap}" in review and f"Concept: {q.trap}" not in review
    assert at.metric[0].value == f"3 / {results[0].total}"
    at.button(key="mock_start").click().run()  # a second mock: the first result is kept
    assert len(at.session_state[interview_mock.RESULTS]) == 1 and at.session_state[interview_mock.ACTIVE] is not None
