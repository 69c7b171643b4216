"""The constraint compiler's workers: compiles run side by side (a slow paste does not hold a trivial regex), and
a worker dies with the process that started it, even in the middle of a long compile."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from test_constraints_limits import SLOW_SCHEMA

from gpu_demo import compile_worker, constraints
from gpu_demo.pairs import load_pair

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def pair():
    return load_pair("builtin", "cpu")


def _alive(pid: int) -> bool:
    """Whether pid is a running process (a zombie awaiting its reaper counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_trivial_regex_does_not_wait_behind_a_slow_schema(pair) -> None:
    constraints.build("regex", "[a-z]+", pair.tokenizer, pair.target.vocab_size)  # a worker is up
    finished: list[str] = []

    def slow() -> None:
        with pytest.raises(constraints.ConstraintError, match="took longer than"):
            constraints.build("json", SLOW_SCHEMA, pair.tokenizer, pair.target.vocab_size, compile_limit_s=20.0)
        finished.append("slow")

    t = threading.Thread(target=slow)
    t.start()
    time.sleep(0.5)  # the slow compile holds its worker
    constraints.build("regex", "[0-9]+", pair.tokenizer, pair.target.vocab_size)
    finished.append("trivial")
    assert finished == ["trivial"]  # done while the slow one still compiles
    for w in compile_worker._POOL:  # end the slow compile now rather than at its 20 s limit
        if w.lock.locked() and w.proc is not None:
            w.proc.kill()
    t.join(60)
    assert finished == ["trivial", "slow"]


def test_all_workers_busy_is_one_constraint_error(pair, monkeypatch) -> None:
    monkeypatch.setattr(compile_worker, "QUEUE_LIMIT_S", 0.2)
    taken = [compile_worker._FREE.acquire() for _ in range(compile_worker.POOL_SIZE)]
    try:
        with pytest.raises(constraints.ConstraintError, match="constraints are compiling on this server"):
            constraints.build("regex", "[a-z]+", pair.tokenizer, pair.target.vocab_size)
    finally:
        for _ in taken:
            compile_worker._FREE.release()


CHILD = """
import sys, threading, time
from gpu_demo import compile_worker
from gpu_demo import constraints
from gpu_demo.pairs import load_pair
from test_constraints_limits import SLOW_SCHEMA
pair = load_pair("builtin", "cpu")
t = threading.Thread(target=constraints.build, args=("regex", "[a-z]+", pair.tokenizer, pair.target.vocab_size))
t.start(); t.join()  # the worker was started from a thread that has ended: it must live on
print(compile_worker.worker_pids()[0], flush=True)
def slow():
    try:
        constraints.build("json", SLOW_SCHEMA, pair.tokenizer, pair.target.vocab_size, compile_limit_s=60.0)
    except Exception:
        pass
threading.Thread(target=slow, daemon=True).start()
time.sleep(1.0)
print("compiling", flush=True)
time.sleep(120)
"""


def test_a_killed_server_takes_its_compile_worker_with_it() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    proc = subprocess.Popen([sys.executable, "-c", CHILD], cwd=ROOT, stdout=subprocess.PIPE, text=True, env=env)
    try:
        pid = int(proc.stdout.readline())
        assert proc.stdout.readline().strip() == "compiling" and _alive(pid)  # it outlived the starting thread
        proc.kill()
        proc.wait()
        deadline = time.monotonic() + 5
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid), "the compile worker outlived its killed parent"
    finally:
        proc.kill()
