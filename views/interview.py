"""Interview prep: the checklist, graded drills, concept questions, the 30-second answer, flashcards,
a timed mock interview, a guided walkthrough, and a classroom mode for a projector. Content and answers
come from specdec_core.

URL: ?part=Drills&seed=classroom&classroom=true (also ?classroom=1), &level=Senior, ?part=Flashcards&card=3,
?part=Walkthrough&step=2.
"""

import random
from urllib.parse import quote

import streamlit as st

from content import interview_content
from specdec_core import drills
from specdec_core.drill_kinds import DRILL_KINDS, DRILL_LEVELS
from ui import presenter
from ui.controls import bound_radio, bound_text, bound_toggle, set_value, slider_input
from ui.interview import widgets
from ui.interview.mock import render_mock
from ui.safe_text import md

PARTS = ("Checklist", "Drills", "Concepts", "30-second", "Mock interview", "Flashcards", "Walkthrough")


def classroom_toggle() -> bool:
    """The URL-bound classroom switch; ?classroom=1 (or yes/on) is accepted as well as =true."""
    return bound_toggle(
        "Classroom mode", key="classroom",
        help="For a projector: presenter mode's large type, no sidebar, and drills become predict-then-reveal. "
             "Uses the shared 'classroom' seed unless the URL gives another.",
    )


def _random_seed() -> str:
    """A personal drill seed."""
    return str(random.randrange(1000, 100000))


def _use_seed(seed: str | None = None) -> None:
    """Callback: switch to this drill set (a fresh personal one if None) and clear the answer boxes."""
    set_value("seed", _random_seed() if seed is None else seed)
    for kind in DRILL_KINDS:
        st.session_state.pop(f"ans_{kind}", None)


def seed_controls(classroom: bool) -> str:
    """The drill seed: ?seed= if given, else the classroom seed in classroom mode, else a personal one."""
    personal = widgets.session_default("iv_personal_seed", _random_seed())
    cols = st.columns([2, 1, 1], vertical_alignment="bottom")
    with cols[0]:
        typed = bound_text(
            "Drill set (seed)", "seed", max_len=64,
            placeholder=f"{drills.CLASSROOM_SEED if classroom else personal} (empty: default)",
            help="The same seed gives everyone the same drills. 'classroom' is the shared set.",
        )
    cols[1].button("New set", key="new_set", on_click=_use_seed, icon=":material/casino:")
    cols[2].button("Classroom set", key="class_set", on_click=_use_seed, args=(drills.CLASSROOM_SEED,),
                   icon=":material/groups:")
    seed = typed.strip() or (drills.CLASSROOM_SEED if classroom else personal)
    st.caption(
        f"Drill set **{md(seed)}**: share `/interview?part=Drills&seed={quote(seed, safe='')}` to give someone the "
        "same drills."
    )
    return seed


def render() -> None:
    st.title("Interview prep")
    classroom = classroom_toggle()
    if classroom:
        presenter.inject(hide_sidebar=True)   # presenter mode's type, and no sidebar at all
    st.markdown(
        "Practise the points that separate a memorised answer from an understood one: numbers you can "
        "compute on a whiteboard, the traps interviewers probe, and a crisp 30-second summary."
    )
    part = bound_radio("Section", PARTS, key="part", label_visibility="collapsed")

    if part == "Checklist":
        widgets.render_checklist()
    elif part == "Drills":
        st.subheader("Numeric drills")
        seed = seed_controls(classroom)
        level = bound_radio("Drills to show", tuple(DRILL_LEVELS), key="level",
                            help="Senior: long context, paged KV rollback, sample-and-compare, tree masks, "
                                 "argmax drafts, MoE targets, uneven acceptance in a batch.")
        widgets.render_drills(seed, classroom, DRILL_LEVELS[level])
    elif part == "Concepts":
        widgets.render_concepts()
    elif part == "30-second":
        widgets.render_thirty_seconds()
    elif part == "Mock interview":
        render_mock()
    elif part == "Flashcards":
        st.subheader("Flashcards: one per formula")
        index = slider_input("Card", "card", 1, len(interview_content.FLASHCARDS), 1, 1)
        widgets.render_flashcards(int(index))
    else:
        st.subheader("Guided walkthrough: about 15 minutes through the whole app")
        step = slider_input("Step", "step", 1, len(interview_content.WALKTHROUGH), 1, 1)
        widgets.render_walkthrough(int(step))


render()
