"""Hostile URLs on every page, through AppTest: no exception, no NaN or inf on screen, no injected link or image.

Every page's URL parameter names are discovered from ui.controls' registry after a run (with the choices that
reveal conditional controls), so a control added later is fuzzed too. The named values run on
every page as a fast deterministic list; hypothesis adds random strings and numbers (marked slow).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as hs

from ui.controls import SPECS

PAGES = {  # page file -> settings that reveal its conditional controls (each set is one discovery run)
    "views/algebra.py": [{}, {"mode": "table"}],
    "views/roofline.py": [{}, {"hw": "Custom"}],
    "views/proof.py": [{"preset": "dirichlet", "section": "all"}, {"preset": "custom", "section": "all"},
                       {"preset": "logits", "section": "all"}],
    "views/interview.py": [{"part": "Drills"}, {"part": "Flashcards"}, {"part": "Walkthrough"}],
    "views/live.py": [{"apart": "true"}],
    "views/trees.py": [{"section": "all"}, {"case": "dirichlet", "src": "typed", "shape": "branching",
                                        "section": "all"}],
}
ROOT = Path(__file__).resolve().parents[1]
EVIL = "evil.example"
NAMED = [  # named hostile values, and their relatives
    "inf", "-inf", "+inf", "Infinity", "-Infinity", "1e999", "-1e999", "nan", "NaN", "", " ", "-1", "1e308",
    "9" * 400, "0x10", "abc", "true",
    "`", "`![x](http://evil.example/a.png)`", "[Click here to re-authenticate](https://evil.example/login)",
    "<img src=http://evil.example/i.png>", "\r\r![x](http://evil.example/b.png)", "www.evil.example",
    ":red[alarm] $x$ \x00 \u202e", "0.9,,0.1,0.1", "0.9, inf, nan", "x" * 100_000,
]
NAN_INF = re.compile(r"\bnan\b|\binf\b|infinity|∞", re.IGNORECASE)


def _scope(page: str) -> str:
    return page.split("/")[-1].removesuffix(".py")


@functools.cache
def page_params(page: str) -> tuple[str, ...]:
    """Every URL parameter the page binds, found by rendering it with each of its revealing settings."""
    from streamlit.testing.v1 import AppTest

    names: set[str] = set()
    for reveal in PAGES[page]:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.run()
        at.query_params.update(reveal)
        at.switch_page(page).run()
        assert not at.exception, [e.value for e in at.exception]
        names |= set(at.session_state[SPECS][_scope(page)])
    return tuple(sorted(names))


def _texts(at) -> list[str]:
    out = [x.value for x in (*at.markdown, *at.caption, *at.latex, *at.warning, *at.error, *at.info, *at.success)]
    out += [f"{m.label} {m.value} {m.delta or ''}" for m in at.metric]
    return out


def _without_echo(text: str) -> str:
    """A message with the echoed user value taken out: what the app computed is left to check."""
    text = re.sub(r"\b\w+=.*? in the URL", "", text)          # 'gamma=inf in the URL is not a finite number'
    text = re.sub(r"got \\?\[[^\]]*\]", "got", text)           # 'alphas must be finite; got [0.9, inf, nan]'
    text = re.sub(r"\(could not convert[^)]*\)", "", text)
    text = re.sub(r"seed=[^`]*`", "", text)                    # ... and in the link to share it
    return re.sub(r"Drill set \*\*.*?\*\*", "", text)         # the drill seed is free text, echoed as set


def check_page(at, query: dict[str, str]) -> None:
    """No exception; no NaN or inf the app computed; no link, image or tag reaching the payload's address."""
    assert not at.exception, (query, [e.value for e in at.exception])
    for text in _texts(at):
        assert not NAN_INF.search(_without_echo(text)), (query, text[:300])
        rendered = re.sub(r"\\.", "", text)                     # what is left once escaped characters are shown,
        rendered = re.sub(r"`[^`\n]*`", "", rendered)          # minus the app's code spans (never parsed for links)
        for opener in ("://" + EVIL, "www." + EVIL, "<img", "<a "):
            assert opener not in rendered, (query, text[:300])


def run_page(page: str, query: dict[str, str]):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()                                                    # the home page first, as a visitor lands
    at.query_params.update(query)
    at.switch_page(page).run()
    return at


CORE = ["inf", "-Infinity", "1e999", "NaN", "`![x](http://evil.example/a.png)`",
        "\r\r<img src=http://evil.example/i.png>[a](http://evil.example)", "x" * 100_000, "0.9,,0.1,0.1", "abc"]


@pytest.mark.parametrize("page", list(PAGES))
def test_core_hostile_values_rotated_through_every_parameter(page):
    """Fast: in run k, parameter i gets CORE[(i + k) % len(CORE)], so every parameter meets every core value
    (the revealing settings rotate too, so conditional controls are reached)."""
    names = page_params(page)
    assert len(names) >= 4, names
    reveals = PAGES[page]
    for k in range(len(CORE)):
        reveal = reveals[k % len(reveals)]
        query = {name: CORE[(i + k) % len(CORE)] for i, name in enumerate(names) if name not in reveal} | reveal
        check_page(run_page(page, query), query)


@pytest.mark.slow
@pytest.mark.parametrize("page", list(PAGES))
def test_every_named_hostile_value_in_every_parameter(page):
    """Each named value in every parameter of the page at once, under each of its revealing settings."""
    names = page_params(page)
    assert len(names) >= 4, names
    for reveal in PAGES[page]:
        for raw in NAMED:
            query = {name: raw for name in names if name not in reveal} | reveal
            check_page(run_page(page, query), query)


VALUES = hs.one_of(
    hs.sampled_from(NAMED),
    hs.text(max_size=40),
    hs.floats(allow_nan=True, allow_infinity=True).map(repr),
    hs.integers(min_value=-(10**30), max_value=10**30).map(str),
)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=hs.data())
def test_random_values_in_random_parameters(data):
    page = data.draw(hs.sampled_from(list(PAGES)), label="page")
    names = page_params(page)
    reveal = data.draw(hs.sampled_from(PAGES[page]), label="reveal")
    chosen = data.draw(hs.lists(hs.sampled_from(names), min_size=1, max_size=6, unique=True), label="names")
    query = reveal | {name: data.draw(VALUES, label=name).replace("\x00", "") for name in chosen}
    check_page(run_page(page, query), query)
