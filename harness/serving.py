"""A real `streamlit run` on a free loopback port, the headless Chromium flags, and how a page tells that a run
ended: for the browser tests and bench/.

One home (tests/conftest.py, tests/browser_helpers.py, tests/test_live_concurrency.py, bench/ui_latency.py and
bench/classroom_load.py use it). watch_runs hears of a run's end where Playwright's client does; STEP_PROBE_JS
times it inside the page, on the page's clock, without the DevTools relay between them. Streamlit is imported
only to decode its messages, inside watch_runs.
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


# a context's init script (before the app loads), for timing a step on the page's own clock. It records, in
# performance.now() ms: each keydown; each run's end, when the page's websocket delivers its script_finished
# message (before the app's own handler sees it); and the first idle moment after a frame drawn once that
# message was handled. script_finished is ForwardMsg field 6, a varint; a scan of the top-level fields finds it
# without decoding the rest (probe.finished, tested against Streamlit's own decoding in the browser tests).
STEP_PROBE_JS = """(() => {
  const probe = window.__stepProbe = {key: [], fin: [], drawn: []};
  document.addEventListener('keydown', () => probe.key.push(performance.now()), true);
  // the status of a script_finished ForwardMsg, else null: its top level is at most a hash (field 1) and the
  // metadata (field 2), both length-delimited, then field 6 as a varint, ending exactly at the buffer's end
  function finished(buf) {
    const b = new Uint8Array(buf); let i = 0;
    const varint = () => { let x = 0, s = 0;
      for (;;) { if (i >= b.length || s > 49) return -1; const c = b[i++]; x += (c & 0x7f) * 2 ** s; s += 7;
                 if (!(c & 0x80)) return x; } };
    let status = null;
    while (i < b.length) {
      const tag = varint(); if (tag < 0) return null;
      const field = Math.floor(tag / 8), wire = tag % 8;
      if ((field === 1 || field === 2) && wire === 2) { const n = varint(); if (n < 0) return null; i += n; }
      else if (field === 6 && wire === 0) { status = varint(); if (status < 0) return null; }
      else return null;
    }
    return i === b.length ? status : null;
  }
  probe.finished = finished;
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', e => {
        if (!(e.data instanceof ArrayBuffer)) return;
        const status = finished(e.data);
        if (status === null || status === 2) return;      // not a run's end, or FINISHED_EARLY_FOR_RERUN
        const t = performance.now();
        probe.fin.push(t);
        const i = probe.drawn.push(null) - 1;
        requestAnimationFrame(() => requestIdleCallback(() => { probe.drawn[i] = performance.now(); },
                                                        {timeout: 30000}));
      });
    }
  };
})()"""


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
