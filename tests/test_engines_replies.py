"""Hostile engine replies, from a real loopback server: each is one EngineError line, within its deadline.

The fake engine answers /metrics with llama.cpp's counters and /v1/chat/completions with whatever a test sets;
``dribble`` sends the body a byte at a time, slowly (a per-read timeout never fires on it, only a deadline does).
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from engines.client import ALLOW_ENV, Endpoint, EngineError, chat, counter, scrape
from engines.workload import MAX_RUNS, Workload, run_side, run_slot, run_workload

ROOT = Path(__file__).resolve().parent.parent

METRICS = """# TYPE llamacpp:spec_decode_num_drafts counter
llamacpp:spec_decode_num_drafts_total 4
# TYPE llamacpp:spec_decode_num_draft_tokens counter
llamacpp:spec_decode_num_draft_tokens_total 8
# TYPE llamacpp:spec_decode_num_accepted_tokens counter
llamacpp:spec_decode_num_accepted_tokens_total 5
# TYPE llamacpp:spec_decode_num_accepted_tokens_per_pos counter
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 3
llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 2
# TYPE llamacpp:n_decode counter
llamacpp:n_decode_total 10
"""


def completion(content: object = "hello", tokens: object = 8) -> bytes:
    return json.dumps({"choices": [{"message": {"content": content}}],
                       "usage": {"completion_tokens": tokens}}).encode()


class FakeEngine(http.server.BaseHTTPRequestHandler):
    metrics = METRICS.encode()
    reply = completion()
    dribble_s = 0.0  # seconds between bytes of the body; 0 sends it at once

    def _send(self, body: bytes, kind: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not self.dribble_s:
            self.wfile.write(body)
            return
        try:
            for i in range(len(body)):
                self.wfile.write(body[i:i + 1])
                self.wfile.flush()
                time.sleep(self.dribble_s)
        except OSError:  # the client gave up
            pass

    def do_GET(self):  # http.server's name
        self._send(self.metrics, "text/plain")

    def do_POST(self):  # http.server's name
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._send(self.reply, "application/json")

    def log_message(self, *args):  # quiet
        pass


@pytest.fixture()
def engine():
    FakeEngine.metrics, FakeEngine.reply, FakeEngine.dribble_s = METRICS.encode(), completion(), 0.0
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeEngine)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield Endpoint(f"http://127.0.0.1:{srv.server_address[1]}")
    srv.shutdown()
    srv.server_close()


def test_the_fake_engine_is_read(engine):
    assert chat(engine, "hi", 8, 0.0, 0).tokens == 8
    assert scrape(engine, "llamacpp").num_drafts == 4 and counter(engine, "llamacpp:n_decode_total") == 10


# ------------------------------------------------------------------------------------------- deadlines --
def test_a_dribbling_server_is_cut_at_the_request_deadline(engine):
    FakeEngine.reply, FakeEngine.dribble_s = completion("x" * 200), 0.05  # ~12 s for the whole body
    t0 = time.monotonic()
    with pytest.raises(EngineError, match="did not answer within 1 s") as exc:
        chat(engine, "hi", 8, 0.0, 0, timeout=1.0)
    assert time.monotonic() - t0 < 2.0 and "\n" not in str(exc.value)


def test_a_dribbling_server_is_cut_at_the_workload_deadline(engine):
    FakeEngine.dribble_s = 0.02  # each reply ~1.5 s: the workload's 1.5 s is gone within its first requests
    t0 = time.monotonic()
    with pytest.raises(EngineError, match="did not answer within|time limit has passed"):
        run_workload(engine, "llamacpp", Workload(4, 8, 0.0, 1), 2, 0.0, deadline_s=1.5)
    assert time.monotonic() - t0 < 2.5


def test_at_most_max_runs_workloads_at_once(engine):
    with run_slot(), run_slot():
        assert MAX_RUNS == 2
        with pytest.raises(EngineError, match="already running"):
            run_workload(engine, "llamacpp", Workload(1, 8, 0.0, 1), 2, 0.0)
    run_side(engine, "llamacpp", Workload(1, 8, 0.0, 1), speculative=True)  # slots released


# ----------------------------------------------------------------------------------------- bad replies --
@pytest.mark.parametrize("tokens", [float("inf"), 10**400, -5, 2.5, "8", True, 10**6])
def test_a_token_count_that_is_not_a_count_is_one_line(engine, tokens):
    body = completion(tokens=0).replace(b'"completion_tokens": 0', b'"completion_tokens": '
                                        + (b"Infinity" if tokens == float("inf") else json.dumps(tokens).encode()))
    FakeEngine.reply = body
    with pytest.raises(EngineError, match="completion_tokens|OpenAI chat completion") as exc:
        chat(engine, "hi", 8, 0.0, 0)
    assert "\n" not in str(exc.value) and len(str(exc.value)) < 300


def test_content_nested_100000_deep_is_one_line(engine):
    FakeEngine.reply = b'{"choices": [{"message": {"content": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}]}"
    with pytest.raises(EngineError, match="nested too deeply|not text"):
        chat(engine, "hi", 8, 0.0, 0)


def test_huge_llamacpp_timings_are_one_line(engine):
    reply = json.loads(completion())
    reply["timings"] = {"draft_n": 10**400, "draft_n_accepted": 1}
    FakeEngine.reply = json.dumps(reply).encode()
    with pytest.raises(EngineError, match="too large to be a count"):
        chat(engine, "hi", 8, 0.0, 0)


@pytest.mark.parametrize("value", ["+Inf", "-3", "1e400", "2.5"])
def test_a_counter_that_is_not_a_count_is_one_line(engine, value):
    FakeEngine.metrics = METRICS.replace("llamacpp:n_decode_total 10", f"llamacpp:n_decode_total {value}").encode()
    with pytest.raises(EngineError, match="n_decode_total"):
        counter(engine, "llamacpp:n_decode_total")


def test_an_infinite_spec_counter_is_one_line(engine):
    FakeEngine.metrics = METRICS.replace("num_drafts_total 4", "num_drafts_total +Inf").encode()
    with pytest.raises(EngineError, match="llama.cpp at"):
        scrape(engine, "llamacpp")


@pytest.mark.parametrize("gamma", [0, 10**9, 2.5, True])
def test_gamma_on_the_url_path_is_checked_before_anything_is_sized(engine, gamma):
    with pytest.raises(ValueError, match="gamma must be an integer"):
        run_workload(engine, "llamacpp", Workload(1, 8, 0.0, 1), gamma, 0.0)


@pytest.mark.parametrize("flag", [["--gamma", "1000000000"], ["--gamma", "0"], ["--threads", "100000"],
                                  ["--temperature", "nan"], ["--temperature", "-1"], ["--c", "inf"],
                                  ["--tokens", "10000000"], ["--prompts", "0"]])
def test_the_engines_cli_refuses_bad_flags_in_one_line(flag):
    proc = subprocess.run([sys.executable, "-m", "engines", "--url", "http://127.0.0.1:9", *flag], cwd=ROOT,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT), ALLOW_ENV: ""})
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and flag[0] in lines[0], proc.stderr
