"""The mock interview section: start, answer in one form (no rerun per keystroke), submit, score and topics
to review. Results are kept in st.session_state for the browser session, never in the URL."""

from __future__ import annotations

import random
import time

import streamlit as st

from content import drill_text, interview_content, mock
from specdec_core.drill_kinds import DRILL_TITLES

ACTIVE, RESULTS = "iv_mock", "iv_mock_results"    # (MockSet, t0) while running; [MockResult] of this session


def _start() -> None:
    st.session_state[ACTIVE] = (mock.mock_set(str(random.randrange(1000, 100000))), time.monotonic())


def render_mock() -> None:
    """Start a mock, answer it, see its score; earlier results of this session below."""
    st.subheader("Mock interview")
    st.caption(f"{mock.N_DRILLS} numeric drills, {mock.N_CONCEPTS} concept questions and the 30-second answer, "
               f"in {mock.TIME_LIMIT_S // 60} minutes. No retries and no worked solutions until you submit.")
    active = st.session_state.get(ACTIVE)
    if active is None:
        st.button("Start a mock interview", key="mock_start", on_click=_start, icon=":material/timer:",
                  type="primary")
    else:
        _form(*active)
    results = st.session_state.get(RESULTS, [])
    if results:
        _results(results)


def _form(m: mock.MockSet, t0: float) -> None:
    left = mock.TIME_LIMIT_S - (time.monotonic() - t0)
    st.caption(f"Started {int(time.monotonic() - t0) // 60} min ago: about {max(0, int(left)) // 60} min left "
               "(the time is counted when you submit).")
    with st.form("mock_form"):
        for i, d in enumerate(m.drills, start=1):
            st.markdown(f"**{i}. {DRILL_TITLES[d.kind]}.** " + drill_text.prompt(d))
            if d.answer_type == "choice":
                st.radio("Answer", ["A", "B"], index=None, key=f"mock_ans_{d.kind}", horizontal=True)
            else:
                st.text_input("Answer", key=f"mock_ans_{d.kind}", placeholder="a number, e.g. 2.53")
        for j, q in enumerate(m.concepts, start=len(m.drills) + 1):
            labels = [o.text for o in q.options]
            st.radio(f"{j}. {q.question}", range(len(labels)), format_func=lambda k, L=labels: L[k], index=None,
                     key=f"mock_cq_{q.key}")
        st.markdown(f"**{len(m.drills) + len(m.concepts) + 1}. Say the 30-second answer out loud**, then tick what "
                    "you said.")
        for k, p in enumerate(interview_content.KEY_PHRASES):
            st.checkbox(p, key=f"mock_phrase_{k}")
        st.form_submit_button("Submit", on_click=_submit, args=(m, t0), type="primary")


def _submit(m: mock.MockSet, t0: float) -> None:
    ss = st.session_state
    answers = {d.kind: str(ss.get(f"mock_ans_{d.kind}") or "") for d in m.drills}
    picks = {q.key: ss.get(f"mock_cq_{q.key}") for q in m.concepts}
    phrases = sum(bool(ss.get(f"mock_phrase_{k}")) for k in range(len(interview_content.KEY_PHRASES)))
    ss.setdefault(RESULTS, []).append(mock.score(m, answers, picks, phrases, time.monotonic() - t0))
    ss[ACTIVE] = None
    for key in [k for k in ss if str(k).startswith(("mock_ans_", "mock_cq_", "mock_phrase_"))]:
        del ss[key]


def _results(results: list[mock.MockResult]) -> None:
    last = results[-1]
    st.metric("Last mock", f"{last.points} / {last.total}",
              help=f"{len(results)} mock interview(s) this session")
    st.caption(f"Took {last.seconds / 60:.1f} min" + (" (over the time limit)." if last.over_time else "."))
    if last.review:
        st.markdown("**Topics to review:**\n" + "\n".join(f"- {t}" for t in last.review))
    else:
        st.success("Nothing to review: every answer was right.")
    for i, item in enumerate(last.items, start=1):
        mark = "right" if item.correct else "wrong"
        with st.expander(f"{i}. {item.title} ({mark})", expanded=not item.correct):
            st.text("\n".join(item.lines))
    if len(results) > 1:
        st.caption("Earlier this session: " + ", ".join(f"{r.points}/{r.total}" for r in results[:-1]))
