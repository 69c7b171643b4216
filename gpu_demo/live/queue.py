"""The live session's shared-resource plumbing, free of Streamlit (unit-tested on its own).

One Streamlit server serves a classroom, and a model's KV cache is mutable state, so only one run at a
time may use a device. :class:`TurnQueue` is a FIFO line: the head holds the device, the others see their
position; a run that is interrupted leaves the line in a ``finally``; :func:`device_queue` is the one line per
device (the live page's pairs and the roofline page's probe). :class:`Throttle` limits mid-run
redraws; :func:`decode_threads` pins CPU decoding to one intra-op thread for the duration of a run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import torch

POLL_S = 0.25
# Batch-1 decoding of these models is latency-bound: on a CPU, handing each small op to a second OpenMP
# thread costs more than it saves and makes timings erratic (the CLI and the bench default to 1 too).
CPU_DECODE_THREADS = 1


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


_threads_lock = threading.Lock()
_threads_users = 0
_threads_saved = 0


_DEVICE_QUEUES: dict[str, TurnQueue] = {}
_DEVICE_QUEUES_LOCK = threading.Lock()


def device_queue(device: str) -> TurnQueue:
    """The one FIFO line for a device ('cpu' or 'cuda') in this process, shared by every pair and by the probe."""
    with _DEVICE_QUEUES_LOCK:
        return _DEVICE_QUEUES.setdefault(device, TurnQueue())


@contextmanager
def decode_threads(device: str) -> Iterator[None]:
    """On CPU, torch uses CPU_DECODE_THREADS intra-op threads for the body; the old count comes back after.

    The setting is process-wide, so overlapping runs (two pairs at once) share one count: the first
    to start saves the value it found and the last to finish restores it.
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
    """Calling it answers True at most once per ``interval_s`` of ``clock`` time (wall time by default), counted
    from its creation."""

    def __init__(self, interval_s: float, clock: Callable[[], float] = time.perf_counter) -> None:
        self.interval_s, self._clock = interval_s, clock
        self._last = clock()

    def __call__(self) -> bool:
        """True (and restart the clock) when interval_s has passed since the last True or the creation."""
        now = self._clock()
        if now - self._last < self.interval_s:
            return False
        self._last = now
        return True
