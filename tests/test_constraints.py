"""gpu_demo.constraints on the built-in character pair: bad constraints, parser state, greedy exactness, events.

The character pair's alphabet has no end-of-text symbol: under a constraint the newline is the end marker.
Greedy constrained speculative output must equal greedy constrained autoregressive output token for token,
for several gammas, and satisfy the constraint; the bug demonstrations must visibly break.
"""

from __future__ import annotations

import pytest
import torch

from gpu_demo import constraints
from gpu_demo.decode import Forget, autoregressive, run, speculative
from gpu_demo.pairs import load_pair
from gpu_demo.sampler import SamplingConfig

pytestmark = pytest.mark.usefixtures("one_torch_thread")
GREEDY = SamplingConfig(temperature=0.0)
SHORT = constraints.CHAR_PRESETS["short"]


@pytest.fixture(scope="module")
def pair():
    return load_pair("builtin", "cpu")


# ------------------------------------------------------------------------------------ bad constraints


@pytest.mark.parametrize(("kind", "source", "message"), [
    ("regex", "abc(", "invalid regex: .*unclosed group"),
    ("regex", "", "the regex is empty"),
    ("lark", "start: foo", 'invalid lark: unknown name: "foo"'),
    ("json", "{", "not valid JSON"),
    ("json", '{"type": "objectx"}', "invalid json: Invalid type: objectx"),
    ("json", "[1, 2]", "must be a JSON object"),
    ("json", '{"type": "integer", "minimum": 5, "maximum": 3}', "invalid json: Unsatisfiable schema"),
    ("regex", r"[^\s\S]", "allows no text at all"),
    ("xml", "<a/>", "kind must be one of regex, json, lark"),
])
def test_bad_constraints_raise_a_clear_value_error(pair, kind: str, source: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        constraints.build(kind, source, pair.tokenizer)
    assert "<state>" not in str(info.value) and "\n" not in str(info.value)  # one line, no parser dump


def test_a_prompt_that_already_violates_the_constraint_is_refused(pair) -> None:
    tok = pair.tokenizer
    with pytest.raises(ValueError, match="the prompt already violates the constraint.*'i'"):
        constraints.regex(constraints.CHAR_PRESETS["sentence"].source, tok, prefix=tok.encode("it is"))
    with pytest.raises(ValueError, match="allows no text after the prompt"):
        constraints.regex(r"It is\.", tok, prefix=tok.encode("It is."))


def test_a_constraint_over_another_vocabulary_is_refused(pair) -> None:
    from gpu_demo.models.char import CharTokenizer

    other = constraints.regex("[a-c]+", CharTokenizer("abc\n"))
    with pytest.raises(ValueError, match=r"constraint's vocabulary \(4\) differs from the model's \(81\)"):
        speculative(pair.target, pair.drafter, [5], 4, constraint=other)


# ---------------------------------------------------------------------------------------- parser state


def test_masks_consume_rollback_and_memo_match_a_fresh_parser(pair) -> None:
    tok = pair.tokenizer
    c = constraints.regex(SHORT.source, tok)
    fresh = constraints.regex(SHORT.source, tok)
    assert c.mask()[tok.encode("I")[0]] and not c.mask()[tok.encode(" ")[0]] and not c.mask()[c.end_token]
    c.consume(tok.encode("Abcde"))
    assert c.position == 5 and not c.allows(tok.encode("f")[0]) and c.allows(tok.encode(" ")[0])
    c.rollback(2)  # back to "Abc": a fourth letter is allowed again
    assert c.position == 3 and c.allows(tok.encode("f")[0])
    c.consume(tok.encode("x y."))
    fresh.consume(tok.encode("Abcx y."))
    assert torch.equal(c.mask(), fresh.mask()) and c.finished and fresh.finished
    assert c.mask().nonzero().view(-1).tolist() == [c.end_token]  # only the end can follow
    with pytest.raises(ValueError, match=r"parser rollback must be an integer in \[0, 7\]"):
        c.rollback(8)
    with pytest.raises(constraints.ConstraintError, match="the parser refused token"):
        constraints.regex(SHORT.source, tok).consume(tok.encode("Abcdef"))


def test_check_reports_complete_unfinished_and_violated(pair) -> None:
    tok = pair.tokenizer
    c = constraints.regex(SHORT.source, tok)
    assert c.check(tok.encode("It is.\n")) == ("complete", "")
    assert c.check(tok.encode("It is"))[0] == "unfinished"
    state, detail = c.check(tok.encode("It isnotshort."))
    assert state == "violated" and "token 8" in detail  # I,t,space,i,s,n,o,t: the ninth is a sixth letter


# ----------------------------------------------------------------------------------- greedy exactness


THREE_ONES = '{"type": "array", "items": {"const": 1}, "minItems": 3, "maxItems": 3}'


def test_check_json_parses_the_constrained_text_the_check_read_prompt_included(pair) -> None:
    """On the raw-text pair the prompt '[1' starts the JSON: the reply alone (', 1, 1]') is not JSON."""
    tok = pair.tokenizer
    c = constraints.build("json", THREE_ONES, tok, pair.target.vocab_size, prefix=tok.encode("[1"))
    assert c.check_json(tok.encode(", 1, 1]\n"), tok.decode) == ("complete", "", [1, 1, 1])
    assert c.check_json(tok.encode(", 1"), tok.decode) == ("unfinished", "valid so far, not ended", None)
    state, _, value = c.check_json(tok.encode(", 2"), tok.decode)
    assert (state, value) == ("violated", None)


@pytest.mark.parametrize("key", list(constraints.CHAR_PRESETS))
def test_greedy_constrained_speculative_equals_greedy_constrained_autoregressive(pair, key: str) -> None:
    preset = constraints.CHAR_PRESETS[key]
    ids = pair.tokenizer.encode(preset.prompt)
    c = constraints.build(preset.kind, preset.source, pair.tokenizer, prefix=ids)
    ar = run(autoregressive(pair.target, ids, 60, GREEDY, constraint=c)).tokens
    assert c.check(ar)[0] in ("complete", "unfinished")
    unconstrained = run(autoregressive(pair.target, ids, 60, GREEDY)).tokens
    for gamma in (1, 2, 4, 7):
        res = run(speculative(pair.target, pair.drafter, ids, 60, gamma, GREEDY, constraint=c))
        assert res.tokens == ar, (key, gamma)
    if key in ("short", "no-e"):  # these bind within 60 characters (the greedy plain text has long words, e's)
        assert unconstrained != ar


def test_sampled_constrained_output_always_satisfies_the_constraint(pair) -> None:
    ids = pair.tokenizer.encode(SHORT.prompt)
    c = constraints.regex(SHORT.source, pair.tokenizer, prefix=ids)
    ended = 0
    for seed in range(8):
        toks = run(speculative(pair.target, pair.drafter, ids, 80, 4, SamplingConfig(1.0), seed=seed,
                               constraint=c)).tokens
        state, detail = c.check(toks)
        assert state != "violated", detail
        ended += state == "complete"
    assert ended >= 4  # the full stop then the end marker usually come well within 80 characters


def test_events_record_parser_positions_mask_sizes_and_cache_lengths(pair) -> None:
    ids = pair.tokenizer.encode(SHORT.prompt)
    c = constraints.regex(SHORT.source, pair.tokenizer, prefix=ids)
    committed = len(ids)
    for e in speculative(pair.target, pair.drafter, ids, 40, 4, SamplingConfig(1.0), seed=1, constraint=c):
        assert e.parser_drafted == e.parser_before + e.k
        assert e.parser_after == e.parser_before + e.n_accepted + 1
        assert len(e.mask_sizes) == e.k + 1 and all(1 <= m <= pair.target.vocab_size for m in e.mask_sizes)
        assert e.mask_s >= 0.0
        committed += len(e.emitted)
        if pair.tokenizer.encode("\n")[0] not in e.emitted:
            assert e.kv_target == committed - 1  # the target's cache holds the committed sequence but y
            assert e.parser_after == committed - len(ids)
    plain = next(iter(speculative(pair.target, pair.drafter, ids, 4, 2, GREEDY)))
    assert plain.parser_before == -1 and plain.mask_sizes == [] and plain.kv_target >= len(ids)


# ---------------------------------------------------------------------------------- the demonstrations


def _outcome(pair, c: constraints.Constraint, ids: list[int], sampling: SamplingConfig, seed: int,
             forget: Forget) -> str:
    """'error' if the parser refused a token, else the check of the output: complete, unfinished or violated."""
    try:
        toks = run(
            speculative(pair.target, pair.drafter, ids, 80, 4, sampling, seed=seed, constraint=c, forget=forget)
        ).tokens
    except constraints.ConstraintError:
        return "error"
    return c.check(toks)[0]


def test_forgetting_the_parser_rollback_breaks(pair) -> None:
    """The rejected drafts stay in the parser: it refuses the correction, or the output leaves the language."""
    ids = pair.tokenizer.encode(SHORT.prompt)
    c = constraints.regex(SHORT.source, pair.tokenizer, prefix=ids)
    bug = Forget(parser=True)
    assert _outcome(pair, c, ids, GREEDY, 0, bug) in ("error", "violated")
    sampled = [_outcome(pair, c, ids, SamplingConfig(1.0), seed, bug) for seed in range(6)]
    assert sum(o in ("error", "violated") for o in sampled) >= 4, sampled
    fixed = [_outcome(pair, c, ids, SamplingConfig(1.0), seed, Forget()) for seed in range(6)]
    assert "error" not in fixed and "violated" not in fixed  # the same runs with the rollback are fine


def test_forgetting_the_kv_rollback_changes_the_output_and_the_cache_runs_ahead(pair) -> None:
    ids = pair.tokenizer.encode(SHORT.prompt)
    c = constraints.regex(SHORT.source, pair.tokenizer, prefix=ids)
    ar = run(autoregressive(pair.target, ids, 40, GREEDY, constraint=c)).tokens
    bad = run(speculative(pair.target, pair.drafter, ids, 40, 4, GREEDY, constraint=c, forget=Forget(kv_cache=True)))
    assert bad.tokens != ar
    last = bad.events[-1]
    assert last.kv_target > len(ids) + len(bad.tokens) - 1  # stale entries of rejected drafts are still there


# ------------------------------------------------------------------------------------------------ CLI


def test_cli_generate_with_a_regex_prints_the_check_and_bad_constraints_exit_2(capsys, tmp_path) -> None:
    from gpu_demo.__main__ import main

    rc = main(
        [
            "generate",
            "--pair",
            "builtin",
            "--device",
            "cpu",
            "--prompt",
            "It is a truth",
            "--constrain-prompt",
            "--regex",
            SHORT.source,
            "--temperature",
            "0",
            "--max-new-tokens",
            "30",
            "--plain",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0 and "-- constraint regex" in out and ": violated" not in out
    bad = tmp_path / "bad.json"
    bad.write_text('{"type": "objectx"}')
    for args, message in [
        (["--regex", "abc("], "unclosed group"),
        (["--json-schema", str(bad)], "Invalid type"),
        (["--lark", str(tmp_path / "missing.lark")], "cannot read"),
        (["--regex", "[a-z]+", "--constrain-prompt"], "already violates"),
    ]:
        assert main(["generate", "--pair", "builtin", "--device", "cpu", "--prompt", "It is", *args]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err
