"""AppTest: the home page shows the one 30-second answer (the interview page's text) and links to practise it."""

from __future__ import annotations

from content import interview_content


def test_home_shows_the_same_thirty_second_answer_as_the_interview_page(app_test):
    home = app_test("views/home.py")
    assert not home.exception, [e.value for e in home.exception]
    interview = app_test("views/interview.py", part="30-second")
    assert [i.value for i in home.info] == [interview_content.THIRTY_SECOND_ANSWER] == [interview.info[0].value]
    links = [(pl.proto.page, pl.proto.query_string) for pl in home.get("page_link")]
    assert ("interview", "part=30-second") in links


def test_home_does_not_promise_sooner_and_names_its_v(app_test):
    """Issue 14: the output is exactly the target's law; sooner only when acceptance and costs allow it."""
    at = app_test("views/home.py")
    assert not at.exception
    text = " ".join(m.value for m in at.markdown)
    assert "only sooner" not in text
    assert ("exactly the target's distribution. Whether it comes sooner depends on the acceptance and on the "
            "costs") in text
    speedup = next(m for m in at.metric if m.label == "Speedup")
    assert "v = 1" in speedup.help and "small batch" in speedup.help

