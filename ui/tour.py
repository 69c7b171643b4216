"""The guided tour: the walkthrough's steps (content.interview_content.WALKTHROUGH) as a bar above each toured
page, "step N of M", with Back / Next links to the neighbouring steps' pages in their states.

Driven by the query param ``tour`` (1..M): app.py draws the bar around the page run, so page files need no
edits. A value out of range or not a number shows no bar (bad URLs never raise).
"""

from __future__ import annotations

import streamlit as st

from content import interview_content

TOUR_PARAM = "tour"


def tour_step(raw: object) -> int | None:
    """The step 1..M from a query-param value, or None (absent, not an integer, or out of range)."""
    try:
        n = int(str(raw).strip())
    except (TypeError, ValueError):
        return None
    return n if 1 <= n <= len(interview_content.WALKTHROUGH) else None


def step_params(n: int) -> dict[str, str]:
    """The query params that open step n: its page's state plus tour=n."""
    return {**interview_content.WALKTHROUGH[n - 1].link.params, TOUR_PARAM: str(n)}


def start_link(label: str = "Take the 15-minute guided tour") -> None:
    """A link to the tour's first step."""
    first = interview_content.WALKTHROUGH[0].link
    st.page_link(first.page, label=label, icon=":material/tour:", query_params=step_params(1))


def url_path(link: interview_content.Link) -> str:
    """The url path of a link's page, as st.navigation names it (Home is 'index')."""
    name = link.page.removeprefix("views/").removesuffix(".py")
    return "index" if name == "home" else name


def _go(n: int) -> None:
    """Callback: step n on the page already open. A page link to the open page leaves its URL as it was, so
    the step's params are written to the URL here and the page's bound controls read them on this rerun."""
    st.query_params.update(step_params(n))


def _neighbour(col, n: int, label: str, icon: str, current: str, key: str) -> None:
    """A link to step n's page in its state; a button when step n is on the open page."""
    link = interview_content.WALKTHROUGH[n - 1].link
    if url_path(link) == current:
        col.button(label, key=key, icon=icon, on_click=_go, args=(n,))
    else:
        col.page_link(link.page, label=label, icon=icon, query_params=step_params(n))


def tour_bar(n: int, current: str = "") -> None:
    """'Step n of M', the step's question and reveal, and Back / Next (or the end); ``current`` is the open
    page's url path."""
    steps = interview_content.WALKTHROUGH
    s = steps[n - 1]
    with st.container(border=True, key="tour_bar"):
        left = sum(x.minutes for x in steps[n - 1:])
        st.progress(n / len(steps), text=f"Guided tour: step {n} of {len(steps)}, {s.title} (about {left} min to go)")
        st.markdown(f"**Answer before you reveal:** {s.question}")
        with st.expander("Reveal"):
            st.markdown(interview_content.reveal_text(s))
        back, nxt, end = st.columns([1, 2, 1])
        if n > 1:
            _neighbour(back, n - 1, "Back", ":material/arrow_back:", current, "tour_back")
        if n < len(steps):
            _neighbour(nxt, n + 1, f"Next: {steps[n].title}", ":material/arrow_forward:", current, "tour_next")
        else:
            nxt.markdown("**Done: you have been through the whole app.**")
        end.page_link("views/home.py", label="End the tour", icon=":material/close:")
