"""The guided tour: the walkthrough's steps (content.interview_content.WALKTHROUGH) as a bar above each toured
page, "step N of M", with Back / Next links to the neighbouring steps' pages in their states.

Driven by the query param ``tour`` (1..M): app.py draws the bar around the page run, so page files need no
edits. A value out of range or not a number shows no bar (bad URLs never raise).
"""

from __future__ import annotations

import streamlit as st

from content import interview_content as ic

TOUR_PARAM = "tour"


def tour_step(raw: object) -> int | None:
    """The step 1..M from a query-param value, or None (absent, not an integer, or out of range)."""
    try:
        n = int(str(raw).strip())
    except (TypeError, ValueError):
        return None
    return n if 1 <= n <= len(ic.WALKTHROUGH) else None


def step_params(n: int) -> dict[str, str]:
    """The query params that open step n: its page's state plus tour=n."""
    return {**ic.WALKTHROUGH[n - 1].link.params, TOUR_PARAM: str(n)}


def start_link(label: str = "Take the 15-minute guided tour") -> None:
    """A link to the tour's first step."""
    first = ic.WALKTHROUGH[0].link
    st.page_link(first.page, label=label, icon=":material/tour:", query_params=step_params(1))


def tour_bar(n: int) -> None:
    """'Step n of M', the step's question and reveal, and Back / Next (or the end) as links."""
    steps = ic.WALKTHROUGH
    s = steps[n - 1]
    with st.container(border=True, key="tour_bar"):
        left = sum(x.minutes for x in steps[n - 1:])
        st.progress(n / len(steps), text=f"Guided tour: step {n} of {len(steps)}, {s.title} (about {left} min to go)")
        st.markdown(f"**Answer before you reveal:** {s.question}")
        with st.expander("Reveal"):
            st.markdown(ic.reveal_text(s))
        back, nxt, end = st.columns([1, 2, 1])
        if n > 1:
            back.page_link(steps[n - 2].link.page, label="Back", icon=":material/arrow_back:",
                           query_params=step_params(n - 1))
        if n < len(steps):
            nxt.page_link(steps[n].link.page, label=f"Next: {steps[n].title}", icon=":material/arrow_forward:",
                          query_params=step_params(n + 1))
        else:
            nxt.markdown("**Done: you have been through the whole app.**")
        end.page_link("views/home.py", label="End the tour", icon=":material/close:")
