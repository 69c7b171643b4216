"""The live page's queue and throttle carry no Streamlit and are tested here on their own."""

from __future__ import annotations

import threading
import time

import pytest

from gpu_demo.live.queue import Throttle, TurnQueue


def test_queue_is_first_come_first_served() -> None:
    q = TurnQueue()
    a, b, c = q.join(), q.join(), q.join()
    assert [q.position(t) for t in (a, b, c)] == [0, 1, 2] and q.length() == 3
    q.leave(a)
    assert q.position(b) == 0 and q.position(c) == 1
    q.leave(c)  # leaving from the middle of the line keeps the order of the rest
    assert q.length() == 1 and q.position(b) == 0


def test_turn_releases_on_error_and_wakes_the_next() -> None:
    q = TurnQueue()
    order: list[str] = []
    first_holding, second_waiting = threading.Event(), threading.Event()

    def on_wait(pos: int) -> None:
        order.append(f"wait {pos}")
        second_waiting.set()

    def second() -> None:
        first_holding.wait(5)
        with q.turn(on_wait):
            order.append("second runs")

    t = threading.Thread(target=second)
    t.start()
    with pytest.raises(RuntimeError):
        with q.turn(lambda pos: None):
            first_holding.set()
            assert second_waiting.wait(5)  # the second thread is in line behind us, not merely started
            order.append("first runs")
            raise RuntimeError("interrupted")
    t.join(5)
    assert order[-1] == "second runs" and order.index("first runs") < order.index("second runs")
    assert order[0] == "wait 1"  # it waited at position 1 while the first held it
    assert q.length() == 0


def test_a_waiter_that_raises_leaves_the_line() -> None:
    q = TurnQueue()
    head = q.join()

    def give_up(pos: int) -> None:
        raise TimeoutError(f"gave up at {pos}")

    with pytest.raises(TimeoutError):
        with q.turn(give_up):
            pass
    assert q.length() == 1 and q.position(head) == 0


class FakeClock:
    """A clock the test moves by hand: no sleeps, no margins."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_throttle_answers_once_per_interval() -> None:
    clock = FakeClock()
    th = Throttle(0.2, clock)
    assert th() is False  # counted from creation: a run shorter than the interval never redraws mid-run
    clock.now += 0.1999
    assert th() is False
    clock.now += 0.0001
    assert th() is True and th() is False  # the interval restarts at each True
    clock.now += 0.3
    assert th() is True
    assert Throttle(0.0, clock)() is True  # interval 0: every call


def test_throttle_counts_wall_time_by_default() -> None:
    th = Throttle(0.0)
    assert th() is True and th._clock is time.perf_counter
