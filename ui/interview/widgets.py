"""Widgets for the interview page: one render function per section, state kept in st.session_state.

Answer boxes, ticks and reveals are deliberately not bound to the URL: a shared link should carry the
view (section, seed, card, step, classroom mode), never a student's answers.
"""

from __future__ import annotations

import time

import streamlit as st

from content import drill_text, interview_content
from specdec_core import drills
from specdec_core.drill_kinds import DRILL_KINDS, DRILL_TITLES
from ui.controls import set_value
from ui.interview.figures import drill_figure
from ui.presenter import show
from ui.safe_text import md

SCORE = "iv_score"          # {(seed, kind): bool}, the first graded verdict per drill (frozen: the solution shows)
GRADES = "iv_grades"        # {(seed, kind): Grade}
LOCKED = "iv_locked"        # {(seed, kind): str}, classroom predictions committed before the reveal
REVEALED = "iv_revealed"    # {(seed, kind)}
TRIES = "iv_tries"          # {(seed, kind): int}, wrong answers that got a diagnosis and a retry


def session_default(name: str, default):
    """st.session_state[name], created with ``default`` on first use."""
    if name not in st.session_state:
        st.session_state[name] = default
    return st.session_state[name]


# ------------------------------------------------------------ checklist ----
def render_checklist() -> None:
    """The five points, each with its explanation and a link to the page state that shows it."""
    st.subheader("What interviewers listen for")
    for i, item in enumerate(interview_content.CHECKLIST, start=1):
        with st.container(border=True):
            st.markdown(f"**{i}. {item.point}**")
            st.markdown(item.explanation)
            st.page_link(item.link.page, label=item.link.label, icon=":material/open_in_new:",
                         query_params=item.link.params)


# ---------------------------------------------------------------- drills ----
def render_drills(seed: str, classroom: bool, kinds: tuple[str, ...] = DRILL_KINDS) -> None:
    """One drill of each of ``kinds`` for ``seed``; graded answers, or predict-then-reveal in classroom mode."""
    score = session_default(SCORE, {})
    mine = [ok for (s, k), ok in score.items() if s == seed and k in kinds]
    cols = st.columns([1, 1, 3])
    cols[0].metric("Score", f"{sum(mine)} / {len(kinds)}",
                   help="Right within two tries: a wrong first answer gets a diagnosis and one retry; then the worked "
                        "solution is shown, so later answers are checked but not scored.")
    cols[1].metric("Answered", f"{len(mine)} / {len(kinds)}")
    cols[2].caption(f"Graded {drills.TOLERANCE_TEXT}. Answers rounded to two decimals always pass; "
                    "typed units such as '2.8x' are fine; write decimals with a point (2.53, not 2,53).")
    for i, drill in enumerate(drills.drill_set(seed, kinds), start=1):
        with st.container(border=True):
            st.markdown(f"**Drill {i}. {DRILL_TITLES[drill.kind]}**")
            st.markdown(drill_text.prompt(drill))
            if classroom:
                _predict_then_reveal(drill, seed)
            else:
                _graded(drill, seed)


def _record(drill: drills.Drill, seed: str, response: str, final: bool | None = None) -> None:
    """Grade ``response`` and keep the verdict. Invalid input is reported, not scored. A first wrong answer gets
    its diagnosis and one retry; the answer that shows the solution (right, or the retry) is the score, and
    later answers are graded but cannot change it."""
    key = (seed, drill.kind)
    shown = key in session_default(SCORE, {})
    tries = session_default(TRIES, {})
    g = drills.grade(drill, response, final=True if shown else bool(final or tries.get(key, 0) >= 1))
    session_default(GRADES, {})[key] = g
    if g.valid and not g.final:
        tries[key] = tries.get(key, 0) + 1
    if g.valid and g.final:
        session_default(SCORE, {}).setdefault(key, g.correct)


def _on_check(drill: drills.Drill, seed: str) -> None:
    _record(drill, seed, st.session_state.get(f"ans_{drill.kind}", ""))


def _on_give_up(drill: drills.Drill, seed: str) -> None:
    _record(drill, seed, st.session_state.get(f"ans_{drill.kind}", ""), final=True)


def _answer_box(drill: drills.Drill, label: str, disabled: bool = False) -> None:
    if drill.answer_type == "choice":
        st.radio(label, ["A", "B"], index=None, key=f"ans_{drill.kind}", horizontal=True, disabled=disabled)
    else:
        st.text_input(label, key=f"ans_{drill.kind}", disabled=disabled, placeholder="a number, e.g. 2.53")


def _graded(drill: drills.Drill, seed: str) -> None:
    """Answer box, Check button, verdict and (after any graded attempt) the worked solution."""
    grades = session_default(GRADES, {})
    _answer_box(drill, "Your answer")
    st.button("Check", key=f"chk_{drill.kind}", on_click=_on_check, args=(drill, seed))
    g = grades.get((seed, drill.kind))
    if g is None:
        return
    if not g.valid:
        st.warning(g.message)
    elif g.correct:
        st.success(g.message, icon=":material/check_circle:")
    else:
        st.error(g.message, icon=":material/cancel:")
    first = session_default(SCORE, {}).get((seed, drill.kind))
    if first is None:
        if session_default(TRIES, {}).get((seed, drill.kind)):
            st.button("Show the answer", key=f"give_{drill.kind}", on_click=_on_give_up, args=(drill, seed))
        return
    st.caption(f"Scored {'right' if first else 'not right'}: the solution below is shown, so later answers are "
               "checked but do not change the score.")
    _solution(drill, large=False)


def _predict_then_reveal(drill: drills.Drill, seed: str) -> None:
    """Classroom: the class commits to a prediction, then the answer and the working appear."""
    locked, revealed = session_default(LOCKED, {}), session_default(REVEALED, set())
    key = (seed, drill.kind)
    if key not in locked:
        _answer_box(drill, "The class predicts")

        def _lock() -> None:
            guess = str(st.session_state.get(f"ans_{drill.kind}") or "").strip()
            if guess:
                st.session_state[LOCKED][key] = guess

        st.button("Lock in the prediction", key=f"lock_{drill.kind}", on_click=_lock)
        st.caption("Commit to a number before anyone sees the answer.")
        return
    st.markdown(f"Prediction locked in: **{md(locked[key])}**")
    if key not in revealed:
        def _reveal() -> None:
            st.session_state[REVEALED].add(key)
            _record(drill, seed, locked[key], final=True)

        st.button("Reveal the answer", key=f"rev_{drill.kind}", on_click=_reveal, type="primary")
        return
    g = session_default(GRADES, {}).get(key)
    if g is not None:
        (st.success if g.correct else st.error)(g.message)
    _solution(drill, large=True)


def _solution(drill: drills.Drill, large: bool) -> None:
    """The governing formula, the worked lines, and the drill on its curve."""
    with st.expander("Worked solution", expanded=True):
        st.latex(drill_text.formula(drill))
        st.code("\n".join(drill_text.solution(drill)), language=None, wrap_lines=True)
        show(drill_figure(drill, large), key=f"fig_{drill.kind}", width="stretch")


# ------------------------------------------------------ concept questions ----
def render_concepts() -> None:
    """Multiple choice on the seed's traps; every option, right or wrong, explains itself."""
    st.subheader("Concept questions: the traps")
    for i, q in enumerate(interview_content.CONCEPT_QUESTIONS, start=1):
        with st.container(border=True):
            st.markdown(f"**{i}. {q.question}**")
            labels = [o.text for o in q.options]
            pick = st.radio("Your choice", range(len(labels)), format_func=lambda j, L=labels: L[j],
                            index=None, key=f"cq_{q.key}", label_visibility="collapsed")
            if pick is None:
                continue
            ok, why = interview_content.check_choice(q, pick)
            (st.success if ok else st.error)(("Right. " if ok else "Not this one. ") + why)
            st.caption(f"The trap this question probes: {q.trap}." + (f" Source: {q.source}." if q.source else ""))
            if not ok:
                with st.expander("Try again, or show the right answer"):
                    st.markdown(q.options[q.answer_index].text)


# --------------------------------------------------- the 30-second answer ----
T0, RUNNING = "iv_t0", "iv_running"


def render_thirty_seconds() -> None:
    """The answer (the same text as on the home page), then a timed practice; its key phrases to tick off show only
    when the timer is not running (shown during it, they would give the answer away)."""
    st.subheader("Say it in 30 seconds")
    running = session_default(RUNNING, False)
    if not running:
        st.info(interview_content.THIRTY_SECOND_ANSWER)
        words = interview_content.word_count(interview_content.THIRTY_SECOND_ANSWER)
        st.caption(f"{words} words: about {60 * words / interview_content.SPEAKING_WORDS_PER_MINUTE:.0f} s at "
                   f"{interview_content.SPEAKING_WORDS_PER_MINUTE} words a minute, "
                   f"inside the {interview_content.PRACTICE_SECONDS} s timer.")

    def _start() -> None:
        st.session_state[T0], st.session_state[RUNNING] = time.monotonic(), True

    st.button(
        "Start a 30-second practice" if not running else "Restart",
        key="practice_start",
        on_click=_start,
        icon=":material/timer:",
    )
    if running:
        st.caption(
            "The model answer and its key phrases are hidden while you practise. Speak out loud; "
            "tick what you said when the timer ends."
        )
        _countdown()
        return
    st.markdown("**Key phrases: tick what you said**")
    ticked = sum(bool(st.checkbox(p, key=f"phrase_{i}")) for i, p in enumerate(interview_content.KEY_PHRASES))
    st.progress(
        ticked / len(interview_content.KEY_PHRASES),
        text=f"{ticked} of {len(interview_content.KEY_PHRASES)} key phrases",
    )


@st.fragment(run_every=1)
def _countdown() -> None:
    """Reruns every second while practice runs; a full rerun at zero stops it."""
    left = interview_content.PRACTICE_SECONDS - (time.monotonic() - st.session_state[T0])
    if left <= 0:
        st.session_state[RUNNING] = False
        st.rerun()
    st.progress(left / interview_content.PRACTICE_SECONDS, text=f"{left:.0f} s left")


# ------------------------------------------------------------ flashcards ----
def render_flashcards(index: int) -> None:
    """One card: the name of a formula; reveal shows the formula and why it matters."""
    card = interview_content.FLASHCARDS[index - 1]
    with st.container(border=True):
        st.markdown(f"### {card.front}")
        if st.toggle("Reveal", key=f"fc_reveal_{index}"):
            st.latex(card.latex)
            st.caption(card.note)


# ----------------------------------------------------------- walkthrough ----
def render_walkthrough(step: int) -> None:
    """Step ``step`` (1-based): open a page in a state, answer before revealing, go on."""
    steps = interview_content.WALKTHROUGH
    s = steps[step - 1]
    left = sum(x.minutes for x in steps[step - 1 :])
    st.progress(step / len(steps), text=f"Step {step} of {len(steps)}, about {left} min to go")
    with st.container(border=True):
        st.markdown(f"### {step}. {s.title}")
        st.page_link(
            s.link.page, label=f"Open: {s.link.url}", icon=":material/open_in_new:", query_params=s.link.params
        )
        st.markdown(f"**Answer before you reveal:** {s.question}")
        if st.toggle("Reveal", key=f"walk_reveal_{step}"):
            st.success(interview_content.reveal_text(s))
    if step < len(steps):

        def _next() -> None:
            set_value("step", step + 1)

        st.button(f"Next step: {steps[step].title}", key="walk_next", on_click=_next, icon=":material/arrow_forward:")
    else:
        st.success("Done: you have been through the whole app.")
