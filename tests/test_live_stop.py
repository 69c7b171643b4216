"""The real SmolLM2 pairs stop at the chat template's end of turn, on the live page's race (speculative run and
baseline alike) and in the CLI, and no output shows template markup as reply text.

Greedy speculative output still equals plain greedy output token for token: both stop at the same token.
"""

from __future__ import annotations

import pytest
import torch

from gpu_demo.live import runner
from gpu_demo.live.queue import TurnQueue
from gpu_demo.models.smollm2 import MARKUP_NAMES
from gpu_demo.pairs import load_pair

pytestmark = pytest.mark.usefixtures("one_torch_thread")
MAX_NEW = 48
PROMPT = "Say just the word: yes"          # greedy SmolLM2 answers in a few tokens, then ends its turn


@pytest.fixture(scope="module")
def sp() -> runner.SharedPair:
    pair = load_pair("smollm2-lookup", torch.device("cpu"), max_len=256)
    return runner.SharedPair("smollm2-lookup", "cpu", pair, None, 0.0, TurnQueue())


def _settings(**kw) -> runner.Settings:
    base = dict(pair="smollm2-lookup", device="cpu", prompt=PROMPT, gamma=3, greedy=True, temperature=1.0,
                top_k=0, top_p=1.0, draft_apart=False, d_temperature=1.0, d_top_k=0, d_top_p=1.0,
                max_new=MAX_NEW, seed=1, repeats=1)
    return runner.Settings(**{**base, **kw})


def _race(sp: runner.SharedPair, s: runner.Settings) -> runner.RunRecord:
    rec = runner.RunRecord(s, "cpu", runner.validate(sp, s))
    runner.run_race(sp, rec, lambda _: None, lambda _: None, lambda _: None)
    assert rec.status == "done"
    return rec


def _shown(sp: runner.SharedPair, tokens: list[int]) -> str:
    """What the page shows for these tokens: each token's piece, as views/live.py renders them."""
    return "".join(sp.pair.tokenizer.piece(t) for t in tokens)


def _assert_no_markup(text: str) -> None:
    assert not any(m in text for m in MARKUP_NAMES) and "<|" not in text, text


def test_stop_set_is_the_templates_end_of_turn(sp):
    tok = sp.pair.tokenizer
    assert tok.stop_tokens[0] == tok.tk.token_to_id("<|im_end|>") == sp.pair.info["stop_tokens"][0]
    assert set(runner.stop_tokens(sp)) == {tok.tk.token_to_id(m) for m in MARKUP_NAMES}
    assert tok.piece(tok.stop_tokens[0]) == "[end of turn]"


def test_greedy_race_stops_at_end_of_turn_and_speculative_equals_plain(sp):
    rec = _race(sp, _settings())
    spec, base = rec.spec_tokens(), rec.base_tokens()
    assert spec == base                                   # both stop at the same token
    assert len(spec) < MAX_NEW and spec[-1] in runner.stop_tokens(sp)   # ended by the turn, not the length limit
    assert not set(spec[:-1]) & set(runner.stop_tokens(sp))
    _assert_no_markup(_shown(sp, spec))
    assert "yes" in sp.pair.tokenizer.reply(spec).lower()


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sampled_race_never_shows_markup(sp, seed):
    """At temperature 1 a reply may run to the limit or end early; either way no markup is reply text, and each
    side stops at its first markup token (a baseline that ran past it would print '<|im_start|>system')."""
    rec = _race(sp, _settings(greedy=False, seed=seed, max_new=32))
    stops = set(runner.stop_tokens(sp))
    for tokens in (rec.spec_tokens(), rec.base_tokens()):
        assert not set(tokens[:-1]) & stops
        _assert_no_markup(_shown(sp, tokens))
        _assert_no_markup(sp.pair.tokenizer.reply(tokens))


def test_cli_generate_prints_no_markup(capsys):
    from gpu_demo.__main__ import main

    rc = main(["generate", "--pair", "smollm2-lookup", "--device", "cpu", "--prompt", PROMPT, "--temperature", "0",
               "--gamma", "3", "--max-new-tokens", "40", "--plain", "--pair-option", "max_len=256"])
    out = capsys.readouterr().out
    assert rc == 0
    _assert_no_markup(out.partition("\n-- markers")[0])
