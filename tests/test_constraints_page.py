"""AppTest of the live page's constrained-decoding section.

The built-in pair runs at the page's defaults (fast); SmolLM2 runs the JSON-schema preset (slow: a few
seconds of decoding on a CPU) and the page must show valid JSON.
"""

from __future__ import annotations

import json

import pytest

from gpu_demo import constraints

PAGE = "views/live.py"


def run_constrained(app_test, **query):
    at = app_test(PAGE, timeout=300, **query)
    assert not at.exception, at.exception
    at.button(key="constraint_btn").click().run()
    assert not at.exception, at.exception
    return at


def texts(elements) -> str:
    return " ".join(e.value for e in elements)


def test_builtin_default_request_satisfies_its_constraint_and_reports_alpha(app_test) -> None:
    at = run_constrained(app_test)
    req = at.session_state["live_constraint"]
    assert (
        req.label == constraints.CHAR_PRESETS["short"].label and req.shown.state == "complete" and not req.shown.error
    )
    assert "Constraint check: complete" in texts(at.success)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["alpha with the constraint"] == f"{req.shown.alpha():.3f}"
    assert metrics["alpha without it"] == f"{req.free.alpha():.3f}"
    assert req.free.state == "" and req.free.events  # the free run is the same prompt without the constraint
    html = next(h.value for h in at.html if 'class="live-tokens"' in h.value and "full stop" not in h.value)
    assert "tok-accepted" in html


def test_forget_the_parser_rollback_shows_what_breaks_at_the_page_defaults(app_test) -> None:
    at = run_constrained(app_test, cforget_parser="true")
    req = at.session_state["live_constraint"]
    assert req.shown.state == "violated"  # the parser refused a token, or the text left the language
    assert req.correct is not None and req.correct.state in ("complete", "unfinished")
    assert "Bug demonstration" in texts(at.warning)
    errors = texts(at.error)
    assert "The parser stopped the run" in errors or "VIOLATES the constraint" in errors


def test_forget_the_kv_rollback_shows_the_cache_running_ahead(app_test) -> None:
    at = run_constrained(app_test, cforget_kv="true")
    req = at.session_state["live_constraint"]
    last = req.shown.events[-1]
    committed = req.prompt_len + len(req.shown.tokens)
    assert last.kv_target > committed - 1  # stale entries of rejected drafts
    assert req.correct.events[-1].kv_target <= req.prompt_len + len(req.correct.tokens) - 1
    table = next(d.value for d in at.dataframe if "target KV" in d.value.columns)
    assert (table["target KV"] > table["committed"] - 1).any()


@pytest.mark.parametrize(
    ("query", "message"),
    [
        (dict(cpreset="own", ckind="regex", csource="abc("), "unclosed group"),
        (dict(cpreset="own", ckind="json", csource="{not json"), "not valid JSON"),
        (dict(cpreset="own", ckind="lark", csource="start: foo"), "unknown name"),
        (dict(cpreset="own", ckind="regex", csource="[a-z]+", cprompt="It is"), "already violates"),
        (dict(cpreset="own", ckind="regex", csource=""), "the regex is empty"),
        (dict(cpreset="own", ckind="json", csource="[" * 2000), "nested too deeply"),  # was a RecursionError traceback
    ],
)
def test_bad_constraints_show_a_message_not_a_traceback(app_test, query, message) -> None:
    at = run_constrained(app_test, **query)
    assert message in texts(at.error)
    shown = " ".join(texts(els) for els in (at.success, at.info, at.warning, at.markdown, at.caption))
    assert len(at.error) == 1 and "valid so far" not in shown, texts(at.error)  # one message, one cause
    assert "live_constraint" not in at.session_state


def test_builtin_json_request_has_one_verdict_the_prompt_being_the_start_of_the_json(app_test) -> None:
    """The JSON view parses what the constraint check read (prompt + reply): it used to parse the reply alone
    and said 'Not valid JSON' beside 'Constraint check: complete'."""
    schema = '{"type": "array", "items": {"const": 1}, "minItems": 3, "maxItems": 3}'
    at = run_constrained(app_test, cpreset="own", ckind="json", csource=schema, cprompt="[1")
    req = at.session_state["live_constraint"]
    assert req.shown.state == "complete" and req.shown.value == [1, 1, 1], req.shown.detail
    assert "Constraint check: complete" in texts(at.success) and "Valid JSON" in texts(at.success)
    assert not at.error, texts(at.error)
    assert json.loads(at.json[0].value) == [1, 1, 1]


@pytest.mark.slow
def test_smollm2_json_schema_request_shows_valid_json(app_test) -> None:
    at = run_constrained(app_test, pair="smollm2-draft", greedy="true", cmaxnew="32")
    req = at.session_state["live_constraint"]
    assert req.kind == "json" and req.shown.state == "complete", req.shown.detail
    assert "Valid JSON" in texts(at.success)
    shown = [j.value for j in at.json]
    obj = json.loads(shown[0]) if isinstance(shown[0], str) else shown[0]
    assert set(obj) == {"name", "age", "city"}
