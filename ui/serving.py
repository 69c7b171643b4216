"""A real `streamlit run` on a free loopback port, the headless Chromium flags, and how a page tells that a run
ended: for the browser tests and bench/.

One home (tests/conftest.py, tests/browser_helpers.py, tests/test_live_concurrency.py, bench/ui_latency.py and
bench/classroom_load.py use it). Streamlit is imported only to decode its messages, inside watch_runs.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# headless Debian Chromium, loopback only: no GPU, no background traffic, /tmp instead of a small /dev/shm
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]

# the app is settled: the script state is notRunning, nothing is stale, and the main area has content
SETTLED_JS = """() => {
  const a = document.querySelector('[data-testid="stApp"]');
  if (!a || a.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (document.querySelector('[data-stale="true"]')) return false;
  return document.querySelector('[data-testid="stMain"] [data-testid="stElementContainer"]') !== null;
}"""


def free_port() -> int:
    """An unused loopback port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def streamlit_server(script: Path, log: Path, timeout_s: float = 90.0) -> Iterator[tuple[str, subprocess.Popen]]:
    """`streamlit run script` (from its folder) on loopback, logging to `log`; yields (url, process) once
    /_stcore/health answers "ok", and stops the process afterwards."""
    log.parent.mkdir(parents=True, exist_ok=True)
    port = free_port()
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(script), "--server.port", str(port),
             "--server.address", "127.0.0.1", "--server.headless", "true", "--browser.gatherUsageStats", "false"],
            cwd=script.parent, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        url = f"http://127.0.0.1:{port}"
        try:
            wait_healthy(url, proc, log, timeout_s)
            yield url, proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def wait_healthy(url: str, proc: subprocess.Popen, log: Path, timeout_s: float = 90.0) -> None:
    """Poll /_stcore/health until it answers 'ok'; RuntimeError if the server exits or never answers."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited early with code {proc.returncode}; see {log}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().decode().strip() == "ok":
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"streamlit did not answer /_stcore/health within {timeout_s:.0f} s; see {log}")


def watch_runs(pg) -> list[tuple[float, str]]:
    """(perf_counter time, status) of each script_finished message that reaches this Playwright page (sync or
    async API; a list that grows). Call it before the page opens the app: it sees websockets opened after it.

    script_finished (a ForwardMsg over the app's websocket) is what turns the script state back to notRunning;
    reading it off the wire catches a run that starts and ends within one browser frame, which the DOM may not.
    Streamlit's AppSession sends it at the end of every run with a status: FINISHED_SUCCESSFULLY (a full run),
    FINISHED_FRAGMENT_RUN_SUCCESSFULLY (an st.fragment rerun, which also starts with new_session and turns the
    state to running), FINISHED_EARLY_FOR_RERUN (a run cut short by a newer one: not an end) or
    FINISHED_WITH_COMPILE_ERROR.
    """
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    finished: list[tuple[float, str]] = []

    def frame(payload) -> None:
        if isinstance(payload, (bytes, bytearray)):
            try:
                msg = ForwardMsg.FromString(bytes(payload))
            except Exception:  # not a ForwardMsg: not a run's end
                return
            if msg.WhichOneof("type") == "script_finished":
                status = ForwardMsg.ScriptFinishedStatus.Name(msg.script_finished)
                if status != "FINISHED_EARLY_FOR_RERUN":
                    finished.append((time.perf_counter(), status))

    pg.on("websocket", lambda ws: ws.on("framereceived", frame))
    return finished
