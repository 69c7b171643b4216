"""Server side of the live page: shared models, a first-come-first-served queue per model, and the runs.

One Streamlit server serves a classroom. Each (pair, device) is loaded once per process with
``st.cache_resource`` and shared by every session; the model's KV cache is mutable state, so only one
run at a time may use it. :class:`TurnQueue` is a FIFO line: the head holds the model, the others see
their position. A run that is interrupted (Stop, a changed setting, a closed tab) leaves the line in a
``finally`` and closes its generator, so the model is free again at once. Runs record the decoder's
own events; the only clock read here is the time spent inside the generator's ``next()`` (the page's
rendering between rounds is excluded).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import streamlit as st
import torch

from gpu_demo import pairs as gp
from gpu_demo.decode import RoundEvent, autoregressive, check_prompt_and_length, speculative
from gpu_demo.sampler import SamplingConfig, check_sampling

ASSETS_ENV = "SPECDEC_BUILTIN_ASSETS"  # optional: another directory holding the built-in pair's weights
POLL_S = 0.25
# Batch-1 decoding of these models is latency-bound: on a CPU, handing each small op to a second OpenMP
# thread costs more than it saves and makes timings erratic (the CLI and the bench default to 1 too).
CPU_DECODE_THREADS = 1


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


class TurnQueue:
    """FIFO line for one shared model: position 0 holds it; everyone else waits their turn."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._line: list[int] = []
        self._next_ticket = 0

    def join(self) -> int:
        """Take a ticket at the back of the line."""
        with self._cond:
            ticket = self._next_ticket
            self._next_ticket += 1
            self._line.append(ticket)
            return ticket

    def position(self, ticket: int) -> int:
        """0 = this ticket holds the model; k = k runs ahead of it."""
        with self._cond:
            return self._line.index(ticket)

    def leave(self, ticket: int) -> None:
        """Leave the line (done, stopped or interrupted) and wake the others."""
        with self._cond:
            if ticket in self._line:
                self._line.remove(ticket)
            self._cond.notify_all()

    def length(self) -> int:
        """Runs in the line, the running one included."""
        with self._cond:
            return len(self._line)

    def wait_turn(self, ticket: int, on_wait: Callable[[int], None]) -> None:
        """Block until the ticket is at the head; call on_wait(position) while waiting (it may raise)."""
        while True:
            with self._cond:
                if self._line.index(ticket) == 0:
                    return
                self._cond.wait(timeout=POLL_S)
                pos = self._line.index(ticket)
            if pos == 0:
                return
            on_wait(pos)

    @contextmanager
    def turn(self, on_wait: Callable[[int], None]) -> Iterator[None]:
        """Hold the model for the body; always leave the line, even when the script is interrupted."""
        ticket = self.join()
        try:
            self.wait_turn(ticket, on_wait)
            yield
        finally:
            self.leave(ticket)


# ---------------------------------------------------------------------------------------------- pairs


@dataclass
class SharedPair:
    """A pair loaded once per process (or the reason it could not be), with its queue."""

    name: str
    device: str
    pair: gp.Pair | None
    error: str | None
    load_s: float
    queue: TurnQueue = field(default_factory=TurnQueue)


def device_choices() -> tuple[list[str], str]:
    """Devices offered ("auto" first) and a sentence saying what auto picks and why."""
    if torch.cuda.is_available():
        name = torch.cuda.get_device_name(0)
        return ["auto", "cuda", "cpu"], f"auto picks CUDA: PyTorch sees the GPU **{name}**."
    return ["auto", "cpu", "cuda"], (
        "auto picks the CPU: PyTorch sees no CUDA GPU here (`torch.cuda.is_available()` is False), so both "
        "models run on the CPU in float32."
    )


def resolve(device: str) -> tuple[str, str | None]:
    """('cpu'|'cuda', None) or ('cpu', why the asked device cannot be used)."""
    try:
        return gp.resolve_device(device).type, None
    except ValueError as exc:
        return "cpu", str(exc)


@st.cache_data(ttl=600, show_spinner=False)
def pair_status(device: str) -> dict[str, tuple[bool, str]]:
    """For every registered pair: (can load here, reason if not)."""
    return {name: gp.availability(name, device) for name in gp.PAIRS}


def pair_description(name: str) -> str:
    """The registry's one-line description, license and load cost."""
    spec = gp.PAIRS[name]
    return f"{spec.description} License: {spec.license}. Load: {spec.load_cost}."


@st.cache_resource(max_entries=3, show_spinner="Loading the model pair (once per server, shared by all sessions)...")
def shared_pair(name: str, device: str, assets: str | None) -> SharedPair:
    """Load pair `name` on `device` once per process and warm it up; a failure is kept as a message, never raised."""
    t0 = time.perf_counter()
    options = {"assets": Path(assets)} if (assets and name == "builtin") else {}
    try:
        pair = gp.load_pair(name, device, **options)
        load_s = time.perf_counter() - t0
        gp.warm_up(pair)  # so the first run's c and v are not inflated by cold-start costs
        return SharedPair(name, device, pair, None, load_s)
    except Exception as exc:  # noqa: BLE001 - any loader failure becomes a message on the page
        return SharedPair(name, device, None, f"{type(exc).__name__}: {exc}", time.perf_counter() - t0)


def get_pair(name: str, device: str) -> SharedPair:
    """The shared pair for (name, device), honouring the SPECDEC_BUILTIN_ASSETS override."""
    return shared_pair(name, device, os.environ.get(ASSETS_ENV) or None)


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


def device_name(sp: SharedPair) -> str:
    """Human name of the device the pair sits on."""
    if sp.device == "cuda":
        return f"cuda ({torch.cuda.get_device_name(0)})"
    return f"cpu ({CPU_DECODE_THREADS} thread{'s' if CPU_DECODE_THREADS > 1 else ''})"


_threads_lock = threading.Lock()
_threads_users = 0
_threads_saved = 0


@contextmanager
def decode_threads(device: str) -> Iterator[None]:
    """On CPU, torch uses CPU_DECODE_THREADS intra-op threads for the body; the old count comes back after.

    The setting is process-wide, so overlapping runs (two pairs at once) share one count: the first
    to start saves the old value and the last to finish restores it.
    """
    global _threads_users, _threads_saved
    if device != "cpu":
        yield
        return
    with _threads_lock:
        if _threads_users == 0:
            _threads_saved = torch.get_num_threads()
            torch.set_num_threads(CPU_DECODE_THREADS)
        _threads_users += 1
    try:
        yield
    finally:
        with _threads_lock:
            _threads_users -= 1
            if _threads_users == 0:
                torch.set_num_threads(_threads_saved)


class Throttle:
    """Calling it answers True at most once per ``interval_s`` of wall time, counted from its creation."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._last = time.perf_counter()

    def __call__(self) -> bool:
        """True (and restart the clock) when interval_s has passed since the last True or the creation."""
        now = time.perf_counter()
        if now - self._last < self.interval_s:
            return False
        self._last = now
        return True


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
