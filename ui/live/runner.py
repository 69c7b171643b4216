"""The live page's runs, free of Streamlit: settings, the race (speculative, then the same-length baseline),
the gamma sweep, and the records they fill.

Runs record the decoder's own events; the only clock read here is the time spent inside the generator's
``next()`` (the page's rendering between rounds is excluded). The shared pairs and their cache live in
``ui.live.pairs``; the queue and throttle in ``ui.live.queue``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field

from gpu_demo import pairs as gp
from gpu_demo.decode import RoundEvent, autoregressive, check_prompt_and_length, speculative
from gpu_demo.sampler import SamplingConfig, check_sampling
from ui.live.queue import TurnQueue, decode_threads

ASSETS_ENV = "SPECDEC_BUILTIN_ASSETS"  # optional: another directory holding the built-in pair's weights
POLL_S = 0.25
# Batch-1 decoding of these models is latency-bound: on a CPU, handing each small op to a second OpenMP
# thread costs more than it saves and makes timings erratic (the CLI and the bench default to 1 too).
CPU_DECODE_THREADS = 1


# --------------------------------------------------------------------------------------------- pairs


@dataclass
class SharedPair:
    """A pair loaded once per process (or the reason it could not be), with its device's queue."""

    name: str
    device: str
    pair: gp.Pair | None
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


# ---------------------------------------------------------------------------------------------- queue


# ---------------------------------------------------------------------------------------------- pairs


def validate(sp: SharedPair, s: Settings) -> list[int]:
    """Prompt token ids for a run; ValueError with a clear message (empty prompt, characters the tokenizer
    lacks, prompt or length past the context, sampling out of range)."""
    if not s.prompt:
        raise ValueError("The prompt is empty: type at least one character.")
    assert sp.pair is not None
    ids = sp.pair.tokenizer.encode(s.prompt)
    context = min(sp.pair.target.max_seq_len, sp.pair.drafter.max_seq_len)
    check_prompt_and_length(ids, int(s.max_new), context)
    vocab = sp.pair.target.vocab_size
    check_sampling(s.target_sampling(), vocab, "target")
    if s.draft_sampling() is not None:
        check_sampling(s.draft_sampling(), vocab, "draft")
    return ids


# ----------------------------------------------------------------------------------------------- runs


@dataclass
class RunRecord:
    """One race: the speculative events, then the autoregressive baseline's, with status and settings."""

    settings: Settings
    device_name: str
    prompt_ids: list[int]
    status: str = "running"  # running | racing | done | stopped
    events: list[RoundEvent] = field(default_factory=list)
    spec_wall: list[float] = field(default_factory=list)
    base_events: list[RoundEvent] = field(default_factory=list)
    base_wall: list[float] = field(default_factory=list)
    queue_wait_s: float = 0.0
    note: str = ""  # why a stopped run stopped
    finished: threading.Event = field(default_factory=threading.Event, repr=False, compare=False)

    def settle(self, timeout: float = 10.0) -> bool:
        """Wait for an interrupted script run to finish this record (Streamlit starts the new run at once)."""
        return self.finished.wait(timeout) if self.status in ("running", "racing") else True

    def spec_tokens(self) -> list[int]:
        """Committed speculative tokens after the prompt."""
        return [t for e in self.events for t in e.emitted]

    def base_tokens(self) -> list[int]:
        """Committed baseline tokens after the prompt."""
        return [t for e in self.base_events for t in e.emitted]


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


def spec_events(sp: SharedPair, s: Settings, ids: list[int], gamma: int | None = None) -> Iterator[RoundEvent]:
    """The engine's speculative generator for these settings."""
    assert sp.pair is not None
    return speculative(
        sp.pair.target, sp.pair.drafter, ids, int(s.max_new), gamma=int(gamma or s.gamma),
        sampling=s.target_sampling(), draft_sampling=s.draft_sampling(), seed=int(s.seed),
    )


def base_events(sp: SharedPair, s: Settings, ids: list[int], n_tokens: int) -> Iterator[RoundEvent]:
    """The engine's autoregressive generator, same target, settings and seed, n_tokens long."""
    assert sp.pair is not None
    return autoregressive(sp.pair.target, ids, int(n_tokens), sampling=s.target_sampling(), seed=int(s.seed))


def run_race(
    sp: SharedPair, rec: RunRecord, on_wait: Callable[[int], None], on_round: Callable[[RunRecord], None],
    on_base: Callable[[RunRecord], None],
) -> RunRecord:
    """Speculative run, then the same-length baseline, both while holding the model; rec fills as it goes."""
    t0 = time.perf_counter()
    try:
        with sp.queue.turn(on_wait), decode_threads(sp.device):
            rec.queue_wait_s = time.perf_counter() - t0
            for ev, wall in timed(spec_events(sp, rec.settings, rec.prompt_ids)):
                rec.events.append(ev)
                rec.spec_wall.append(wall)
                on_round(rec)
            rec.status = "racing"
            n = len(rec.spec_tokens())
            for ev, wall in timed(base_events(sp, rec.settings, rec.prompt_ids, n)):
                rec.base_events.append(ev)
                rec.base_wall.append(wall)
                on_base(rec)
            rec.status = "done"
    finally:
        if rec.status != "done":
            rec.status = "stopped"
        rec.finished.set()
    return rec


@dataclass
class SweepPoint:
    """One gamma of a sweep: its events and wall times (the baseline is shared)."""

    gamma: int
    events: list[RoundEvent]
    wall: list[float]


def run_sweep(
    sp: SharedPair, s: Settings, ids: list[int], gammas: list[int], on_wait: Callable[[int], None],
    on_progress: Callable[[float, str], None],
) -> tuple[list[SweepPoint], list[RoundEvent], list[float]]:
    """The baseline once, then one speculative run per gamma, all under one turn; progress in [0, 1]."""
    points: list[SweepPoint] = []
    with sp.queue.turn(on_wait), decode_threads(sp.device):
        on_progress(0.0, "baseline")
        pairs = list(timed(base_events(sp, s, ids, int(s.max_new))))
        b_ev, b_wall = [e for e, _ in pairs], [w for _, w in pairs]
        for i, g in enumerate(gammas):
            on_progress((i + 1) / (len(gammas) + 1), f"gamma = {g}")
            got = list(timed(spec_events(sp, s, ids, gamma=g)))
            points.append(SweepPoint(g, [e for e, _ in got], [w for _, w in got]))
        on_progress(1.0, "done")
    return points, b_ev, b_wall
