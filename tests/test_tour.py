"""AppTest: the guided tour's bar, drawn by app.py around the page run from ?tour=N: step N of M on the step's
own page, Back and Next linking the neighbouring steps in their states, startable from Home and the sidebar."""

from __future__ import annotations

from urllib.parse import parse_qsl

import pytest

from content import interview_content
from ui.tour import TOUR_PARAM, step_params, tour_step, url_path

M = len(interview_content.WALKTHROUGH)


def _links(at) -> list[tuple[str, str, dict[str, str]]]:
    return [(pl.proto.label, pl.proto.page, dict(parse_qsl(pl.proto.query_string))) for pl in at.get("page_link")]


def _page(link: interview_content.Link) -> str:
    """The page's url path as a page link carries it (Home, the default page, is '')."""
    name = link.page.removeprefix("views/").removesuffix(".py")
    return "" if name == "home" else name


@pytest.mark.parametrize("n", range(1, M + 1))
def test_each_step_shows_its_bar_and_links_its_neighbours(app_test, n):
    step = interview_content.WALKTHROUGH[n - 1]
    at = app_test(step.link.page, **step_params(n))
    assert not at.exception, [e.value for e in at.exception]
    assert any(p.proto.text.startswith(f"Guided tour: step {n} of {M}, {step.title}") for p in at.get("progress"))
    links = _links(at)
    here = url_path(step.link)
    for m_, label, key in (
        (n - 1, "Back", "tour_back"),
        (n + 1, f"Next: {interview_content.WALKTHROUGH[n].title}" if n < M else "", "tour_next"),
    ):
        if not 1 <= m_ <= M:
            assert key not in [b.key for b in at.button] and not any(x[0] == label for x in links)
            continue
        there = interview_content.WALKTHROUGH[m_ - 1].link
        if url_path(there) != here:
            assert (label, _page(there), step_params(m_)) in links
        else:  # same page: a button writes the step's URL
            at.button(key=key).click().run()
            assert not at.exception
            assert dict(at.query_params.to_dict() if hasattr(at.query_params, "to_dict") else at.query_params).get(
                TOUR_PARAM
            ) in (str(m_), [str(m_)])
            assert any(p.proto.text.startswith(f"Guided tour: step {m_} of {M}") for p in at.get("progress"))
            return
    if n == M:
        assert any("Done" in m.value for m in at.markdown)


def test_tour_starts_from_home_and_the_sidebar(app_test):
    at = app_test()  # Home
    assert not at.exception
    starts = [x for x in _links(at) if x[2] == step_params(1)]
    assert len(starts) == 2  # one in the sidebar, one on Home
    assert not at.get("progress")  # no bar without ?tour=


@pytest.mark.parametrize("raw", ["0", str(M + 1), "x", "", "1e9"])
def test_a_bad_tour_value_shows_no_bar_and_no_error(app_test, raw):
    at = app_test(None, **{TOUR_PARAM: raw})
    assert not at.exception and tour_step(raw) is None
    assert not any("Guided tour" in p.proto.text for p in at.get("progress"))
