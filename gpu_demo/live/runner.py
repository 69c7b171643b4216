"""The live page's runs, free of Streamlit: settings, the race and the gamma sweep, and the records they fill.

A race is R repeats of (speculative run, same-length autoregressive baseline), interleaved A B B A
(``specdec_core.repeats.race_order``) so that drift in a shared machine's speed hits both sides; repeat r
samples with seed + r. A sweep runs one such pair per gamma and repeat (``sweep_order``). Records fill round
by round and are kept by the page before the run starts, so a stopped run keeps what it measured.

Runs record the decoder's own events; the only clock read here is the time spent inside the generator's
``next()`` (the page's rendering between rounds is excluded). A callback runs after every round: the page's
callbacks touch Streamlit there, which is where a Stop (or a rerun) lands, so a run stops between two
rounds and the generator and the model's turn are released at once. The shared pairs and their cache live
in ``ui.live.pairs`` (st.cache_resource); the queue, throttle and device line in ``gpu_demo.live.queue``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field

from gpu_demo import pairs
from gpu_demo.decode import RoundEvent, autoregressive, check_prompt_and_length, speculative
from gpu_demo.live.queue import TurnQueue, decode_threads
from gpu_demo.sampler import SamplingConfig, check_sampling
from specdec_core.repeats import check_repeats, race_order, sweep_order

# --------------------------------------------------------------------------------------------- pairs


@dataclass
class SharedPair:
    """A pair loaded once per process (or the reason it could not be), with its device's queue."""

    name: str
    device: str
    pair: pairs.Pair | None
    error: str | None
    load_s: float
    queue: TurnQueue = field(default_factory=TurnQueue)


# ------------------------------------------------------------------------------------------ settings


@dataclass(frozen=True)
class Settings:
    """Everything that defines a run; equal settings and seed give the same tokens."""

    pair: str
    device: str
    prompt: str
    gamma: int
    greedy: bool
    temperature: float
    top_k: int
    top_p: float
    draft_apart: bool
    d_temperature: float
    d_top_k: int
    d_top_p: float
    max_new: int
    seed: int
    repeats: int = 3  # interleaved (speculative, baseline) pairs per race, and per gamma in a sweep

    def target_sampling(self) -> SamplingConfig:
        """The target's processed law p (temperature 0 under greedy)."""
        if self.greedy:
            return SamplingConfig(temperature=0.0)
        return SamplingConfig(float(self.temperature), int(self.top_k), float(self.top_p))

    def draft_sampling(self) -> SamplingConfig | None:
        """The draft's law q when set apart, else None (same as the target's)."""
        if self.greedy or not self.draft_apart:
            return None
        return SamplingConfig(float(self.d_temperature), int(self.d_top_k), float(self.d_top_p))

    def to_dict(self) -> dict:
        """Plain dict for JSON export."""
        return asdict(self)


def prompt_ids(sp: SharedPair, user_prompt: str) -> list[int]:
    """The prompt's ids: a chat model gets it as one user turn (so it answers; a prompt already written in its
    template is kept as typed), a plain model gets it raw."""
    tok = sp.pair.tokenizer
    return tok.encode(tok.user_turn(user_prompt) if sp.pair.info.get("chat") else user_prompt)


def shown_prompt(sp: SharedPair, user_prompt: str) -> str:
    """The prompt as the token box shows it: a chat model's reply is a new turn, so it starts on its own line."""
    return user_prompt + "\n" if sp.pair is not None and sp.pair.info.get("chat") else user_prompt


def validate(sp: SharedPair, s: Settings) -> list[int]:
    """Prompt token ids for a run; ValueError with a clear message (empty prompt, characters the tokenizer
    lacks, prompt or length past the context, sampling out of range)."""
    if not s.prompt:
        raise ValueError("The prompt is empty: type at least one character.")
    assert sp.pair is not None
    ids = prompt_ids(sp, s.prompt)
    context = min(sp.pair.target.max_seq_len, sp.pair.drafter.max_seq_len)
    check_prompt_and_length(ids, int(s.max_new), context)
    check_repeats(s.repeats)
    vocab = sp.pair.target.vocab_size
    check_sampling(s.target_sampling(), vocab, "target")
    if s.draft_sampling() is not None:
        check_sampling(s.draft_sampling(), vocab, "draft")
    return ids


# ----------------------------------------------------------------------------------------------- runs


@dataclass
class Repeat:
    """One speculative run and its baseline, run in the order the interleaving gave (base_first or not)."""

    seed: int
    base_first: bool
    gamma: int = 0
    events: list[RoundEvent] = field(default_factory=list)
    spec_wall: list[float] = field(default_factory=list)
    base_events: list[RoundEvent] = field(default_factory=list)
    base_wall: list[float] = field(default_factory=list)
    spec_done: bool = False
    base_done: bool = False

    @property
    def done(self) -> bool:
        """Both sides ran to the end."""
        return self.spec_done and self.base_done

    def spec_tokens(self) -> list[int]:
        """Committed speculative tokens after the prompt."""
        return [t for e in self.events for t in e.emitted]

    def base_tokens(self) -> list[int]:
        """Committed baseline tokens after the prompt."""
        return [t for e in self.base_events for t in e.emitted]


@dataclass
class RunRecord:
    """One race: its repeats (repeat 0 uses the settings' seed and is the one shown), with status and settings."""

    settings: Settings
    device_name: str
    prompt_ids: list[int]
    status: str = "running"  # running | racing | done | stopped
    repeats: list[Repeat] = field(default_factory=list)
    queue_wait_s: float = 0.0
    note: str = ""  # why a stopped run stopped
    finished: threading.Event = field(default_factory=threading.Event, repr=False, compare=False)

    def settle(self, timeout: float = 10.0) -> bool:
        """Wait for an interrupted script run to finish this record (Streamlit starts the new run at once)."""
        return self.finished.wait(timeout) if self.status in ("running", "racing") else True

    @property
    def first(self) -> Repeat:
        """Repeat 0 (an empty one before the run starts)."""
        return self.repeats[0] if self.repeats else Repeat(int(self.settings.seed), False, int(self.settings.gamma))

    @property
    def events(self) -> list[RoundEvent]:
        """Repeat 0's speculative events (the run the tokens and step mode show)."""
        return self.first.events

    @property
    def spec_wall(self) -> list[float]:
        """Repeat 0's per-round decoder seconds."""
        return self.first.spec_wall

    @property
    def base_events(self) -> list[RoundEvent]:
        """Repeat 0's baseline events."""
        return self.first.base_events

    @property
    def base_wall(self) -> list[float]:
        """Repeat 0's baseline per-token decoder seconds."""
        return self.first.base_wall

    def spec_tokens(self) -> list[int]:
        """Repeat 0's committed speculative tokens."""
        return self.first.spec_tokens()

    def base_tokens(self) -> list[int]:
        """Repeat 0's committed baseline tokens."""
        return self.first.base_tokens()

    def finished_repeats(self) -> list[Repeat]:
        """Repeats whose both sides ran to the end."""
        return [r for r in self.repeats if r.done]


def timed(gen: Iterator[RoundEvent]) -> Iterator[tuple[RoundEvent, float]]:
    """(event, seconds spent inside the generator for it): the consumer's time is not counted."""
    try:
        while True:
            t0 = time.perf_counter()
            try:
                ev = next(gen)
            except StopIteration:
                return
            yield ev, time.perf_counter() - t0
    finally:
        gen.close()  # an interrupted run releases the generator (and the model) at once


def stop_tokens(sp: SharedPair) -> tuple[int, ...]:
    """The pair's stop set (an instruct model's end of turn): speculative run and baseline stop at the same token."""
    assert sp.pair is not None
    return tuple(sp.pair.info.get("stop_tokens", ()))


def spec_events(sp: SharedPair, s: Settings, ids: list[int], gamma: int | None = None,
                seed: int | None = None) -> Iterator[RoundEvent]:
    """The engine's speculative generator for these settings (gamma and seed may be overridden)."""
    assert sp.pair is not None
    return speculative(
        sp.pair.target, sp.pair.drafter, ids, int(s.max_new), gamma=int(gamma or s.gamma),
        sampling=s.target_sampling(), draft_sampling=s.draft_sampling(),
        seed=int(s.seed if seed is None else seed), stop_tokens=stop_tokens(sp),
    )


def base_events(sp: SharedPair, s: Settings, ids: list[int], n_tokens: int,
                seed: int | None = None) -> Iterator[RoundEvent]:
    """The engine's autoregressive generator, same target, settings and seed, n_tokens long."""
    assert sp.pair is not None
    return autoregressive(sp.pair.target, ids, int(n_tokens), sampling=s.target_sampling(),
                          seed=int(s.seed if seed is None else seed), stop_tokens=stop_tokens(sp))


def run_pair(sp: SharedPair, s: Settings, ids: list[int], rep: Repeat, n_base: int,
             on_spec: Callable[[], None], on_base: Callable[[], None]) -> None:
    """Fill rep: its speculative run and its baseline in rep's order; a callback after every round.

    The baseline is as long as the speculative run when that ran first, else n_base tokens.
    """
    def spec() -> None:
        for ev, wall in timed(spec_events(sp, s, ids, rep.gamma, rep.seed)):
            rep.events.append(ev)
            rep.spec_wall.append(wall)
            on_spec()
        rep.spec_done = True

    def base() -> None:
        n = len(rep.spec_tokens()) if rep.spec_done else n_base
        for ev, wall in timed(base_events(sp, s, ids, n, rep.seed)):
            rep.base_events.append(ev)
            rep.base_wall.append(wall)
            on_base()
        rep.base_done = True

    for side in ((base, spec) if rep.base_first else (spec, base)):
        side()


def run_race(
    sp: SharedPair, rec: RunRecord, on_wait: Callable[[int], None], on_round: Callable[[RunRecord], None],
    on_base: Callable[[RunRecord], None],
) -> RunRecord:
    """R interleaved repeats of (speculative run, same-length baseline), all while holding the model.

    rec fills as it goes; on_round / on_base run after every speculative / baseline round.
    """
    s = rec.settings

    def spec_round() -> None:
        rec.status = "running"
        on_round(rec)

    def racing() -> None:
        rec.status = "racing"
        on_base(rec)

    t0 = time.perf_counter()
    try:
        with sp.queue.turn(on_wait), decode_threads(sp.device):
            rec.queue_wait_s = time.perf_counter() - t0
            for r, base_first in enumerate(race_order(s.repeats)):
                rep = Repeat(int(s.seed) + r, base_first, int(s.gamma))
                rec.repeats.append(rep)
                n_base = len(rec.repeats[0].spec_tokens()) if r else int(s.max_new)
                run_pair(sp, s, rec.prompt_ids, rep, n_base, spec_round, racing)
            rec.status = "done"
    finally:
        if rec.status != "done":
            rec.status = "stopped"
        rec.finished.set()
    return rec


@dataclass
class SweepRecord:
    """A gamma sweep: one Repeat per (repeat, gamma) in the interleaved order, filled as it runs."""

    settings: Settings
    gammas: list[int]
    status: str = "running"  # running | done | stopped
    runs: list[Repeat] = field(default_factory=list)
    planned: int = 0
    note: str = ""
    finished: threading.Event = field(default_factory=threading.Event, repr=False, compare=False)

    def settle(self, timeout: float = 10.0) -> bool:
        """Wait for an interrupted script run to finish this record."""
        return self.finished.wait(timeout) if self.status == "running" else True

    def by_gamma(self) -> dict[int, list[Repeat]]:
        """The finished pairs of each gamma that has at least one (partial sweeps keep what ran)."""
        out: dict[int, list[Repeat]] = {}
        for g in self.gammas:
            done = [r for r in self.runs if r.gamma == g and r.done]
            if done:
                out[g] = done
        return out

    def rounds(self) -> int:
        """Rounds decoded so far, both sides of every pair."""
        return sum(len(r.events) + len(r.base_events) for r in self.runs)


def run_sweep(
    sp: SharedPair, srec: SweepRecord, ids: list[int], on_wait: Callable[[int], None],
    on_progress: Callable[[float, str], None], on_round: Callable[[SweepRecord], None] = lambda _: None,
) -> SweepRecord:
    """Per gamma and repeat, a speculative run beside its own baseline (sweep_order), all under one turn.

    on_round runs after every round of either side (where a Stop lands), on_progress before every run with
    the fraction done in [0, 1]; srec keeps the finished pairs whatever happens.
    """
    s = srec.settings
    order = sweep_order(srec.gammas, s.repeats)
    srec.planned = len(order)
    try:
        with sp.queue.turn(on_wait), decode_threads(sp.device):
            for i, (r, g, base_first) in enumerate(order):
                on_progress(i / len(order), f"gamma = {g}, repeat {r + 1} of {s.repeats}")
                rep = Repeat(int(s.seed) + r, base_first, g)
                srec.runs.append(rep)
                run_pair(sp, s, ids, rep, int(s.max_new), lambda: on_round(srec), lambda: on_round(srec))
            on_progress(1.0, "done")
            srec.status = "done"
    finally:
        if srec.status != "done":
            srec.status = "stopped"
        srec.finished.set()
    return srec
