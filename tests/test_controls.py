"""ui.controls and ui.safe_text: each page owns its settings, URL values are parsed once, user text is inert.

The AppTest hops clear the query string between pages, as the browser does on a page change (Streamlit's
frontend carries only parameters bound with its native ``bind=``, which the app no longer uses).
"""

from __future__ import annotations

import math
import re

import pytest

from ui.controls import Spec, widget_key
from ui.safe_text import ELLIPSIS, clip, html_text, md, md_escape, visible

HOSTILE_NUMBERS = ["inf", "-inf", "+inf", "Infinity", "-Infinity", "1e999", "-1e999", "nan", "NaN", "", " ", "abc",
                   "0x10", "1,5", "2.5e", "9" * 400, "1e308"]


# ------------------------------------------------------------------------------------------ safe_text ----
def test_clip_cuts_with_an_ellipsis_and_keeps_short_text():
    assert clip("abc", 5) == "abc"
    assert clip("abcdef", 5) == "abcd" + ELLIPSIS and len(clip("abcdef", 5)) == 5
    assert len(clip("x" * 100_000)) == 60
    with pytest.raises(ValueError, match=">= 1"):
        clip("abc", 0)


def test_visible_shows_every_control_character():
    assert visible("a\nb") == "a\u21b5b" and visible("a\nb", keep_newline=True) == "a\u21b5\nb"
    assert visible("a\r\rb") == "a\u240d\u240db"
    assert visible("\t\x00\x1b\x7f") == "\u2192\u2400\u241b\u2421"
    assert visible("\u202eevil\u200b") == "[U+202E]evil[U+200B]"           # bidi override, zero-width space
    assert visible("\u2028\x85") == "[U+2028][U+0085]"                     # line separator, C1 next-line
    assert visible("plain text, é ü 漢字") == "plain text, é ü 漢字"
    out = visible("".join(chr(i) for i in range(0x20)) + "\x7f")
    assert not any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in out)


OPENERS = "!#$&()*+:<>@[\\]^_`{|}~"       # punctuation that can open a Markdown/HTML/directive construct mid-line


def _unescaped_specials(escaped: str) -> list[str]:
    """ASCII punctuation characters in ``escaped`` that are not preceded by a backslash escape."""
    bad, i = [], 0
    while i < len(escaped):
        if escaped[i] == "\\":
            i += 2
            continue
        if escaped[i] in OPENERS:
            bad.append(escaped[i])
        i += 1
    return bad


@pytest.mark.parametrize("payload", [
    "![x](http://evil.example/a.png)",
    "[Click here to re-authenticate](https://evil.example/login)",
    "`code` **bold** _it_ <img src=x onerror=alert(1)> <a href='//evil.example'>a</a>",
    ":red[alarm] :material/warning: $x^2$ ~~gone~~ # heading",
    "www.evil.example and http://evil.example and a@evil.example",
    "\\`\\![x](http://evil.example)",                                      # pre-escaped: the backslashes too
])
def test_md_escapes_every_markdown_character(payload):
    out = md(payload, limit=500)
    assert _unescaped_specials(out) == []
    # Removing the escapes gives the text back: it is shown, not interpreted.
    assert re.sub(r"\\(.)", r"\1", out).replace("\u200b", "") == visible(payload)


def test_md_cuts_and_makes_line_breaks_visible():
    out = md("a\r\r![x](http://e.example)" + "y" * 1000)
    assert "\r" not in out and "\n" not in out and out.endswith(ELLIPSIS)
    assert len(re.sub(r"\\(.)", r"\1", out).replace("\u200b", "")) == 60


def test_md_escape_of_a_backslash_and_of_autolinks():
    assert md_escape("\\") == "\\\\" and md_escape("a.b") == "a.b" and md_escape("non-negative") == "non-negative"
    # GFM finds autolink literals after escapes are resolved: a zero-width space breaks each trigger.
    assert md_escape("see www.evil.example") == "see www\u200b.evil.example"
    assert md_escape("WwW.x") == "WwW\u200b.x"
    assert md_escape("http://e.example a@b.c") == "http\\:\u200b//e.example a\\@\u200bb.c"


def test_html_text_escapes_tags_quotes_and_line_breaks():
    out = html_text("<img src=\"x\" onerror='y'>\n\r&")
    assert "<" not in out and ">" not in out and '"' not in out and "'" not in out
    assert "\n" not in out and "\r" not in out and "&amp;" in out
    assert html_text("a\nb", keep_newline=True) == "a\u21b5\nb"
    assert html_text("x" * 10, limit=4) == "xxx" + ELLIPSIS


# ------------------------------------------------------------------------------------------------ Spec ----
@pytest.mark.parametrize("raw", HOSTILE_NUMBERS)
def test_number_specs_refuse_non_finite_and_garbage(raw):
    for spec in (Spec("int", 3, 0, 16), Spec("float", 0.7, 0.0, 1.0)):
        with pytest.raises(ValueError):
            spec.parse(raw)


def test_number_specs_accept_what_they_should():
    g = Spec("int", 3, 0, 16)
    assert g.parse("5") == 5 and isinstance(g.parse("5"), int)
    assert g.parse(" 7.0 ") == 7 and g.parse("1e1") == 10
    with pytest.raises(ValueError, match="whole"):
        g.parse("2.5")
    with pytest.raises(ValueError, match="range"):
        g.parse("17")
    a = Spec("float", 0.7, 0.0, 1.0)
    assert a.parse("0.8125") == 0.8125 and isinstance(a.parse("1"), float)
    assert a.to_url(0.1 + 0.2) == repr(0.1 + 0.2) and float(a.to_url(0.1 + 0.2)) == 0.1 + 0.2


@pytest.mark.parametrize("value", ["3", None, True, math.inf, math.nan, 2.5, 99, [1]])
def test_int_spec_check_refuses_wrong_types_from_any_source(value):
    with pytest.raises(ValueError):
        Spec("int", 3, 0, 16).check(value)


def test_other_specs():
    b = Spec("bool", False)
    assert [b.parse(x) for x in ("true", "1", "YES", "on", "false", "0", "no", "Off")] == [True] * 4 + [False] * 4
    with pytest.raises(ValueError):
        b.parse("maybe")
    with pytest.raises(ValueError):
        b.check(1)
    c = Spec("choice", "a", options=("a", "b"))
    assert c.parse("b") == "b"
    with pytest.raises(ValueError, match="choices"):
        c.parse("c")
    t = Spec("text", "", max_len=5)
    assert t.parse("abc") == "abc"
    with pytest.raises(ValueError, match="6 characters"):
        t.parse("abcdef")
    with pytest.raises(ValueError, match="not text"):
        t.check(12345)


# -------------------------------------------------------------------------------------- pages, AppTest ----
def _clean(at) -> None:
    assert not at.exception, [e.value for e in at.exception]


def _hop(at, page: str):
    """Switch page as the browser does: the query string of the page left behind is dropped."""
    at.query_params.clear()
    return at.switch_page(page).run()


def test_widget_keys_are_namespaced(app_test):
    at = app_test("views/algebra.py")
    assert widget_key("alpha", "algebra") == "algebra.alpha"
    assert at.number_input(key="algebra.alpha").value == 0.7
    assert "alpha" not in at.session_state and "gamma" not in at.session_state


def test_interview_new_set_then_live_page_does_not_crash(app_test):
    """Issue 17 item 1: a text seed from the drills made the live page raise TypeError ('<' str and float)."""
    at = app_test("views/interview.py", part="Drills")
    at.button(key="new_set").click().run()
    seed = at.text_input(key="interview.seed").value
    assert seed.isdigit()
    _hop(at, "views/live.py")
    _clean(at)
    assert at.number_input(key="live.seed").value == 0
    _hop(at, "views/interview.py")
    _clean(at)
    assert at.text_input(key="interview.seed").value == seed                      # kept its own setting


def test_live_seed_then_interview_does_not_crash(app_test):
    at = app_test("views/live.py", seed="777")
    assert at.number_input(key="live.seed").value == 777
    _hop(at, "views/interview.py")
    at.radio(key="interview.part").set_value("Drills").run()
    _clean(at)
    assert at.text_input(key="interview.seed").value == ""
    assert not any("777" in w.value for w in at.warning)


def test_live_gamma_and_walkthrough_step_do_not_leak(app_test):
    at = app_test("views/live.py")
    at.number_input(key="live.gamma").set_value(16).run()
    _hop(at, "views/algebra.py")
    assert at.number_input(key="algebra.gamma").value == 3
    _hop(at, "views/interview.py")
    at.radio(key="interview.part").set_value("Walkthrough").run()
    at.number_input(key="interview.step").set_value(3).run()
    _hop(at, "views/live.py")
    _clean(at)
    assert at.toggle(key="live.step").value is False                              # step mode stays off
    assert at.number_input(key="live.gamma").value == 16                          # and live kept its gamma
    assert at.query_params.get("gamma") == "16"                                   # written back to the URL


def test_algebra_decay_mode_does_not_move_the_roofline(app_test):
    at = app_test("views/algebra.py", mode="decay", alpha="0.95")
    assert at.radio(key="algebra.mode").value == "decay"
    _hop(at, "views/roofline.py")
    assert at.radio(key="roofline.mode").value == "bf16"
    assert at.number_input(key="roofline.alpha").value == 0.8
    assert "mode" not in at.query_params and "alpha" not in at.query_params


@pytest.mark.parametrize("raw", ["inf", "-inf", "Infinity", "1e999", "nan"])
def test_non_finite_url_values_are_refused_on_whole_number_settings(app_test, raw):
    """Issue 17 item 2: these raised OverflowError inside st.number_input."""
    at = app_test("views/algebra.py", gamma=raw, alpha=raw)
    _clean(at)
    shown = " ".join(w.value for w in at.warning)
    assert f"gamma={md(raw)} in the URL is not a finite number; using 3" in shown
    assert f"alpha={md(raw)} in the URL is not a finite number; using 0.7" in shown
    assert at.number_input(key="algebra.gamma").value == 3
    assert "gamma" not in at.query_params                                         # the URL now holds the value used


def test_refusal_stays_until_the_value_changes(app_test):
    at = app_test("views/algebra.py", gamma="abc")
    assert any("gamma=abc in the URL" in w.value for w in at.warning)
    at.number_input(key="algebra.c").set_value(0.2).run()
    assert any("gamma=abc in the URL" in w.value for w in at.warning)
    at.number_input(key="algebra.gamma").set_value(5).run()
    assert not any("gamma=abc" in w.value for w in at.warning)
    assert at.query_params.get("gamma") == "5"


def test_a_link_to_the_same_page_applies_its_values(app_test):
    """A URL change within a page (st.page_link to the page itself) is read; the values it lacks are kept."""
    at = app_test("views/algebra.py", c="0.2")
    at.query_params["alpha"] = "0.8"
    at.run()
    assert at.number_input(key="algebra.alpha").value == 0.8
    assert at.number_input(key="algebra.c").value == 0.2
