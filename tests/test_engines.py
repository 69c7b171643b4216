"""The embedded llama.cpp server, for real (no mock): counters that add up, alpha_j that reproduce E[N], greedy output
unchanged by speculation, and the outside-URL setting (off: no request leaves; on: a second server is reached)."""

from __future__ import annotations

import http.server
import socket
import threading

import pytest

from engines.client import ALLOW_ENV, Endpoint, EngineError, chat, recognise, scrape
from engines.embedded import EmbeddedServer, Mode, shared_server
from engines.workload import Workload, measured_for, run_embedded, table
from specdec_core import algebra
from specdec_core.repeats import gap_parts
from specdec_core.vllm_counts import SpecDecodeCounts

pytest.importorskip("xllamacpp")
WORKS = {"self": Workload(n_prompts=2, max_tokens=16, repeats=2),    # short: the same model drafts every round
         "ngram": Workload(n_prompts=3, max_tokens=40, repeats=2)}    # a lookup needs the reply to repeat itself


@pytest.fixture(scope="module", params=sorted(WORKS))
def result(request):
    return run_embedded(Mode(request.param, 3), WORKS[request.param])


def test_differenced_counters_add_up(result):
    """accepted <= drafted, E[N] = 1 + accepted / drafts, and the counters equal the responses' own timings."""
    c = result.pooled
    assert isinstance(c, SpecDecodeCounts) and c.num_drafts > 0
    assert c.num_accepted_tokens <= c.num_draft_tokens <= c.gamma * c.num_drafts
    assert c.mean_acceptance_length() == pytest.approx(1 + c.num_accepted_tokens / c.num_drafts)
    drafted = sum(x.draft_n for run in result.spec_runs for x in run.completions)
    accepted = sum(x.draft_accepted for run in result.spec_runs for x in run.completions)
    assert (drafted, accepted) == (c.num_draft_tokens, c.num_accepted_tokens)   # two sources, one count


def test_alpha_j_from_per_position_counters_reproduce_mean_length(result):
    c = result.pooled
    a = c.conditional_alphas()
    assert a.shape == (3,) and not any(x != x for x in a[: 1])
    filled = [0.0 if x != x else float(x) for x in a]
    assert algebra.expected_tokens_positional(filled) == pytest.approx(c.mean_acceptance_length(), abs=1e-12)


def test_greedy_output_is_the_same_with_and_without_speculation(result):
    n = result.work.n_prompts * result.work.repeats
    assert result.same_text == (n, n)
    assert f"greedy text identical on/off  {n} of {n}" in table(result)


def test_each_repeat_is_timed_and_the_gap_is_split(result):
    """Per repeat, measured / predicted = acceptance draw x per-round cost exactly (the baseline is the unit)."""
    s = result.summary
    assert s is not None and s.repeats == 2 and s.base_tokens_per_s.n == 2 and s.spec_tokens_per_s.n == 2
    for spec, base in zip(result.spec_runs, result.base_runs):
        g = gap_parts(measured_for(spec, base, result.gamma, result.c))
        assert g.base_step == pytest.approx(1.0) and g.ratio == pytest.approx(g.accept * g.spec_round)
        assert 0 < g.accept <= 1.0 + 1e-9   # tokens per pass never beat E[N]: prefill and draftless passes


# ------------------------------------------------------------------------------------------- outside URLs --
class Recorder(http.server.BaseHTTPRequestHandler):
    """Counts every request it is sent; answers /metrics with a web page (not an engine), or many bytes."""

    seen: list[str] = []
    body = b"<html>hello</html>"

    def do_GET(self):  # http.server's name
        Recorder.seen.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):  # quiet
        pass


@pytest.fixture()
def listener():
    Recorder.seen = []
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_url_setting_off_sends_nothing(listener):
    for env in ({}, {ALLOW_ENV: ""}, {ALLOW_ENV: "http://127.0.0.1:1"}):
        with pytest.raises(EngineError, match="off on this server|not on this server's allow-list"):
            Endpoint.from_url(listener + "/metrics?x=1", env=env)
    for bad in ("file:///etc/passwd", "ftp://127.0.0.1/", "http://user:pw@127.0.0.1:80/", "not a url", 3):
        with pytest.raises(EngineError, match="not an http"):
            Endpoint.from_url(bad, env={ALLOW_ENV: listener})
    assert Recorder.seen == []


def test_allowed_url_that_is_not_an_engine_is_one_message(listener):
    e = Endpoint.from_url(listener, env={ALLOW_ENV: listener})
    with pytest.raises(EngineError, match="does not look like vLLM, SGLang, llama.cpp or TensorRT-LLM"):
        recognise(e)
    assert Recorder.seen == ["/metrics"]
    Recorder.body = b"#" * 5_000_000
    try:
        with pytest.raises(EngineError, match="more than"):
            recognise(e)
    finally:
        Recorder.body = b"<html>hello</html>"


def test_refused_and_silent_servers_are_one_message():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        with pytest.raises(EngineError, match="Could not connect"):       # bound, not listening: refused
            Endpoint(f"http://127.0.0.1:{port}").request("/metrics")
        s.listen(1)
        with pytest.raises(EngineError, match="did not answer within"):   # listening, never answering
            Endpoint(f"http://127.0.0.1:{port}").request("/metrics", timeout=0.5)


def test_url_setting_on_reaches_a_second_embedded_server():
    """A second server on another loopback port, allowed by origin, is recognised, scraped and answers."""
    first = shared_server(Mode("ngram", 3))
    second = EmbeddedServer(Mode("none", 3))
    try:
        assert second.url != first.url
        e = Endpoint.from_url(second.url, env={ALLOW_ENV: f"http://example.invalid:80, {second.url}"})
        assert not e.embedded and recognise(e) == "llamacpp"
        assert scrape(e, "llamacpp", empty_ok=True).num_drafts == 0
        reply = chat(e, "How do bees make honey?", 4, 0.0, 0)
        assert reply.tokens == 4 and reply.text
        with pytest.raises(EngineError, match="not drafted anything|No llamacpp"):
            scrape(e, "llamacpp")
    finally:
        second.stop()
