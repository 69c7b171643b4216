"""The live page's runner without Streamlit: the interleaved order a race and a sweep really run in, and a Stop
(any exception raised from a per-round callback, as Streamlit's stop and rerun exceptions are) landing between
two rounds, releasing the model at once, and keeping what finished.

A tiny untrained pair keeps these fast; greedy output must still equal plain greedy decoding after a stop,
which shows the interrupted run left the shared model usable.
"""

from __future__ import annotations

import pytest
import torch

from gpu_demo.decode import autoregressive
from gpu_demo.drafters import ModelDrafter
from gpu_demo.live import runner
from gpu_demo.live.queue import TurnQueue
from gpu_demo.models.char import CharConfig, CharTokenizer, CharTransformer, WindowConfig, WindowMLP
from gpu_demo.pairs import Pair
from gpu_demo.sampler import SamplingConfig

pytestmark = pytest.mark.usefixtures("one_torch_thread")
VOCAB = "abcdefghijklmnop"


class Stop(Exception):
    """Stand-in for Streamlit's StopException / RerunException raised inside a callback."""


@pytest.fixture(scope="module")
def sp() -> runner.SharedPair:
    torch.manual_seed(0)
    target = CharTransformer(CharConfig(vocab_size=16, n_layer=1, n_head=2, d_model=32, max_seq_len=256)).eval()
    draft = WindowMLP(WindowConfig(vocab_size=16, window=4, d_emb=4, d_hidden=16, max_seq_len=256)).eval()
    pair = Pair("tiny", target, ModelDrafter(draft), CharTokenizer(VOCAB), torch.device("cpu"))
    return runner.SharedPair("tiny", "cpu", pair, None, 0.0, TurnQueue())


def settings(**kw) -> runner.Settings:
    base = dict(pair="tiny", device="cpu", prompt="abcabc", gamma=3, greedy=False, temperature=1.0, top_k=0,
                top_p=1.0, draft_apart=False, d_temperature=1.0, d_top_k=0, d_top_p=1.0, max_new=30, seed=5,
                repeats=3)
    return runner.Settings(**{**base, **kw})


def test_race_runs_its_repeats_in_abba_order_with_seed_plus_r(sp):
    s = settings()
    rec = runner.RunRecord(s, "cpu", runner.validate(sp, s))
    sides: list[tuple[int, str]] = []

    def note(side: str) -> None:
        if not sides or sides[-1] != (len(rec.repeats), side):
            sides.append((len(rec.repeats), side))

    runner.run_race(sp, rec, lambda _: None, lambda _: note("S"), lambda _: note("B"))
    assert rec.status == "done" and [side for _, side in sides] == ["S", "B", "B", "S", "S", "B"]
    assert [r.seed for r in rec.repeats] == [5, 6, 7] and [r.base_first for r in rec.repeats] == [False, True, False]
    assert all(len(r.spec_tokens()) == len(r.base_tokens()) == 30 for r in rec.repeats)
    assert rec.spec_tokens() == rec.repeats[0].spec_tokens()  # the page shows repeat 1 (the settings' seed)
    assert rec.repeats[0].spec_tokens() != rec.repeats[1].spec_tokens()  # another seed, another sample


def test_validate_refuses_repeats_out_of_range(sp):
    with pytest.raises(ValueError, match=r"repeats must be an integer in \[1, 9\]"):
        runner.validate(sp, settings(repeats=0))


def test_stopped_race_keeps_its_finished_repeats(sp):
    s = settings()
    rec = runner.RunRecord(s, "cpu", runner.validate(sp, s))

    def on_round(r: runner.RunRecord) -> None:
        if len(r.repeats) == 2 and r.repeats[1].events:  # repeat 2: its baseline done, one speculative round in
            raise Stop

    with pytest.raises(Stop):
        runner.run_race(sp, rec, lambda _: None, on_round, lambda _: None)
    assert rec.status == "stopped" and rec.finished.is_set() and sp.queue.length() == 0
    assert [r.done for r in rec.repeats] == [True, False] and len(rec.repeats[1].events) == 1
    assert rec.finished_repeats() == rec.repeats[:1]


def test_sweep_stops_between_rounds_frees_the_model_and_keeps_partial_results(sp):
    s = settings(repeats=2, max_new=40)
    srec = runner.SweepRecord(s, [1, 2, 3])
    calls = []

    def on_round(r: runner.SweepRecord) -> None:
        calls.append(r.rounds())
        if len(r.runs) == 2 and len(r.runs[1].base_events) == 3:  # second pair: baseline first, 3 tokens in
            raise Stop

    with pytest.raises(Stop):
        runner.run_sweep(sp, srec, runner.validate(sp, s), lambda _: None, lambda f, w: None, on_round)
    # The stop landed in the callback after the third baseline round: nothing was decoded after it.
    assert srec.rounds() == calls[-1] and len(srec.runs[1].base_events) == 3 and len(srec.runs) == 2
    assert srec.status == "stopped" and srec.finished.is_set()
    assert sp.queue.length() == 0  # the model's turn was released as the exception left the run
    # The finished pair (gamma 1) is kept with both its sides; the interrupted one is not counted.
    assert list(srec.by_gamma()) == [1] and srec.by_gamma()[1] == srec.runs[:1] and srec.planned == 6
    # The shared model is usable at once, and exact: greedy speculative equals plain greedy decoding.
    g = settings(greedy=True, repeats=1)
    again = runner.RunRecord(g, "cpu", runner.validate(sp, g))
    runner.run_race(sp, again, lambda _: None, lambda _: None, lambda _: None)
    plain = [t for e in autoregressive(sp.pair.target, again.prompt_ids, 30, SamplingConfig(temperature=0.0))
             for t in e.emitted]
    assert again.spec_tokens() == plain == again.base_tokens()


def test_full_sweep_interleaves_every_gamma_with_its_own_baseline(sp):
    s = settings(repeats=2, max_new=20)
    srec = runner.run_sweep(
        sp, runner.SweepRecord(s, [1, 2]), runner.validate(sp, s), lambda _: None, lambda f, w: None
    )
    assert srec.status == "done" and [(r.gamma, r.base_first, r.seed) for r in srec.runs] == [
        (1, False, 5),
        (2, True, 5),
        (2, False, 6),
        (1, True, 6),
    ]
    assert all(r.done and len(r.base_tokens()) == len(r.spec_tokens()) == 20 for r in srec.runs)
    assert {g: len(v) for g, v in srec.by_gamma().items()} == {1: 2, 2: 2}


def test_a_chat_pair_gets_the_prompt_as_one_user_turn_and_a_plain_pair_gets_it_raw(sp):
    class ChatTok(CharTokenizer):
        def user_turn(self, text: str) -> str:  # the SmolTokenizer method the runner calls
            return text if text.startswith("[") else f"[{text}]"

    tok = ChatTok("[]" + VOCAB)
    chat = runner.SharedPair(
        "chat",
        "cpu",
        Pair("chat", sp.pair.target, sp.pair.drafter, tok, torch.device("cpu"), info={"chat": True}),
        None,
        0.0,
        TurnQueue(),
    )
    assert runner.prompt_ids(chat, "abc") == tok.encode("[abc]") == runner.prompt_ids(chat, "[abc]")
    assert runner.prompt_ids(sp, "abc") == sp.pair.tokenizer.encode("abc")
    assert (
        runner.shown_prompt(chat, "abc") == "abc\n" and runner.shown_prompt(sp, "abc") == "abc"
    )  # the reply's own line
