"""The live page's queue and throttle carry no Streamlit and are tested here on their own."""

from __future__ import annotations

import threading
import time

import pytest

from ui.live.queue import Throttle, TurnQueue


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
    first_holding = threading.Event()

    def second() -> None:
        first_holding.wait(5)
        with q.turn(lambda pos: order.append(f"wait {pos}")):
            order.append("second runs")

    t = threading.Thread(target=second)
    t.start()
    with pytest.raises(RuntimeError):
        with q.turn(lambda pos: None):
            first_holding.set()
            time.sleep(0.4)  # the second thread is now waiting in line
            order.append("first runs")
            raise RuntimeError("interrupted")
    t.join(5)
    assert order[-1] == "second runs" and order.index("first runs") < order.index("second runs")
    assert "wait 1" in order[: order.index("second runs")]  # it waited at position 1 while the first held it
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


def test_throttle_answers_once_per_interval() -> None:
    th = Throttle(0.2)
    assert th() is False  # counted from creation
    time.sleep(0.25)
    assert th() is True and th() is False
    time.sleep(0.25)
    assert th() is True
