"""Bounded HTTP to an inference server: the outside-URL allow-list, engine recognition, completions, counter scrapes.

A classroom server must not fetch what students type. A typed URL is used only when its origin (scheme://host:port)
is on the allow-list in the server's environment, ``SPECDEC_ENGINE_URLS`` (comma-separated origins; unset: none);
never from a query string. The app's own embedded servers are reached through ``Endpoint.embedded``, which no
typed text can produce. Every request has one overall deadline (a watchdog closes the socket when it passes, so a
server that dribbles bytes cannot hold a caller past it) and a response-size cap; every reply is checked (counts are
whole, finite, bounded numbers); every failure is one EngineError line.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass

from specdec_core import vllm_metrics
from specdec_core.vllm_counts import SpecDecodeCounts, VllmRates

ALLOW_ENV = "SPECDEC_ENGINE_URLS"
ENGINES = ("vllm", "llamacpp", "sglang", "trtllm")
ENGINE_NAMES = {"vllm": "vLLM", "llamacpp": "llama.cpp", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
METRICS_CAP = 4_000_000     # bytes read from /metrics
COMPLETION_CAP = 1_000_000  # bytes read from a completion
PROBE_TIMEOUT_S = 2.0
COMPLETION_TIMEOUT_S = 120.0
MAX_COUNT = 10**9           # a token count or counter above this is not what an engine reports


class EngineError(RuntimeError):
    """One line for the user: what failed, and what to do."""


def allowed_origins(env: dict[str, str] | None = None) -> set[str]:
    """The origins in SPECDEC_ENGINE_URLS (normalised scheme://host:port, lower case); empty when unset."""
    raw = (os.environ if env is None else env).get(ALLOW_ENV, "")
    return {o for o in (_origin(u) for u in raw.split(",") if u.strip()) if o}


def _origin(url: str) -> str | None:
    """scheme://host:port of an http(s) URL (default ports filled in), None when it is not one."""
    try:
        u = urllib.parse.urlsplit(url.strip())
        port = u.port or {"http": 80, "https": 443}.get(u.scheme)
    except ValueError:
        return None
    if u.scheme not in ("http", "https") or not u.hostname or u.username or u.password:
        return None
    return f"{u.scheme}://{u.hostname.lower()}:{port}"


@dataclass(frozen=True)
class Endpoint:
    """A base URL that may be requested: from the allow-list (``from_url``) or one of the app's own servers."""

    base: str
    embedded: bool = False

    @classmethod
    def from_url(cls, url: str, env: dict[str, str] | None = None) -> Endpoint:
        """A typed URL, if the server's allow-list names its origin; EngineError otherwise (nothing is requested)."""
        origin = _origin(url) if isinstance(url, str) and len(url) < 2000 else None
        if origin is None:
            raise EngineError("That is not an http(s) URL of a server, such as http://host:8000.")
        allowed = allowed_origins(env)
        if not allowed:
            raise EngineError(f"Connecting to your own server is off on this server: its operator can allow origins "
                              f"in the {ALLOW_ENV} environment variable.")
        if origin not in allowed:
            raise EngineError(f"{origin} is not on this server's allow-list ({ALLOW_ENV}); ask its operator.")
        return cls(origin)

    def request(self, path: str, body: dict | None = None, timeout: float = PROBE_TIMEOUT_S,
                cap: int = METRICS_CAP, deadline: float | None = None) -> tuple[str, str]:
        """GET (or POST JSON) base + path -> (content type, text), at most cap bytes, all within timeout seconds
        (and before deadline, a time.monotonic() value, when given). No proxies, no redirects."""
        limit = timeout if deadline is None else min(timeout, deadline - time.monotonic())
        if limit <= 0:
            raise EngineError(f"{self.base}{path} was not asked: the run's time limit has passed.")
        u = urllib.parse.urlsplit(self.base)
        kind = http.client.HTTPSConnection if u.scheme == "https" else http.client.HTTPConnection
        conn = kind(u.hostname, u.port, timeout=limit)
        cut = threading.Event()
        held: list[socket.socket] = []  # the socket, kept: http.client drops conn.sock once a reply will close
        watchdog = threading.Timer(limit, _cut, (held, cut))
        watchdog.daemon = True
        watchdog.start()
        try:
            conn.connect()
            held.append(conn.sock)
            conn.request("GET" if body is None else "POST", path,
                         body=None if body is None else json.dumps(body).encode(),
                         headers={"Content-Type": "application/json", "Accept": "*/*"})
            resp = conn.getresponse()
            if not 200 <= resp.status < 300:
                raise EngineError(f"{self.base}{path} answered HTTP {resp.status}.")
            raw = bytearray()
            while len(raw) <= cap and (block := resp.read1(min(1 << 16, cap + 1 - len(raw)))):
                raw += block
            content_type = resp.getheader("Content-Type", "") or ""
        except (OSError, http.client.HTTPException) as exc:
            if cut.is_set() or isinstance(exc, TimeoutError) or "timed out" in str(exc):
                raise EngineError(f"{self.base}{path} did not answer within {limit:g} s.") from None
            raise EngineError(f"Could not connect to {self.base}: {exc}.") from None
        finally:
            watchdog.cancel()
            conn.close()
        if cut.is_set():
            raise EngineError(f"{self.base}{path} did not answer within {limit:g} s.")
        if len(raw) > cap:
            raise EngineError(f"{self.base}{path} sent more than {cap:,} bytes: not what an engine sends.")
        return content_type, raw.decode("utf-8", errors="replace")


def _cut(held: list[socket.socket], cut: threading.Event) -> None:
    """The deadline passed: shut the socket so that a blocked read returns at once."""
    cut.set()
    for sock in held:
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def whole(x: object, name: str, cap: int = MAX_COUNT) -> int:
    """A count from an engine's reply: an integer (or integral float) n with 0 <= n <= cap, else EngineError."""
    ok = isinstance(x, int) and not isinstance(x, bool) and 0 <= x <= cap
    if isinstance(x, float) and math.isfinite(x) and 0 <= x <= cap and x == int(x):
        ok, x = True, int(x)
    if not ok:
        shown = repr(x) if len(repr(x)) <= 40 else repr(x)[:37] + "..."
        raise EngineError(f"The engine's {name} is {shown}: not a count of tokens (a whole number 0 to {cap:,}).")
    return int(x)


def _json(text: str) -> object:
    """json.loads that refuses NaN/Infinity and nesting too deep to be a reply (ValueError)."""
    def constant(name: str) -> float:
        raise ValueError(f"{name} is not a number a server reports")
    try:
        return json.loads(text, parse_constant=constant)
    except RecursionError:
        raise ValueError("the reply is nested too deeply to be JSON an engine sends") from None


def recognise(endpoint: Endpoint, deadline: float | None = None) -> str:
    """The engine behind endpoint, from what its /metrics returns: a Prometheus text with vllm:, llamacpp: or sglang:
    names, or TensorRT-LLM's JSON list of iteration stats. Anything else: EngineError."""
    kind, text = endpoint.request("/metrics", deadline=deadline)
    head = text.lstrip()[:1]
    if head == "[":
        try:
            vllm_metrics.parse_trtllm(text)
            return "trtllm"
        except (ValueError, ArithmeticError, RecursionError):
            pass
    for engine, mark in (("vllm", "vllm:"), ("llamacpp", "llamacpp:"), ("sglang", "sglang:")):
        if f"\n{mark}" in "\n" + text or f"# TYPE {mark}" in text:
            return engine
    raise EngineError(f"{endpoint.base} does not look like vLLM, SGLang, llama.cpp or TensorRT-LLM: its /metrics "
                      "has none of their metrics.")


def scrape(endpoint: Endpoint, engine: str, empty_ok: bool = False,
           deadline: float | None = None) -> SpecDecodeCounts | VllmRates:
    """The engine's speculative counters now (SGLang: its interval-average gauges); EngineError when unreadable."""
    _, text = endpoint.request("/metrics", deadline=deadline)
    try:
        if engine in ("vllm", "llamacpp"):
            return vllm_metrics.parse_prometheus(text, engine=engine, empty_ok=empty_ok)
        if engine == "sglang":
            return vllm_metrics.parse_sglang(text)
        if engine == "trtllm":
            return vllm_metrics.parse_trtllm(text)
    except (ValueError, ArithmeticError) as exc:
        raise EngineError(f"{ENGINE_NAMES[engine]} at {endpoint.base}: {exc}") from None
    except RecursionError:
        raise EngineError(f"{ENGINE_NAMES[engine]} at {endpoint.base}: its metrics are nested too deeply.") from None
    raise EngineError(f"Unknown engine {engine!r}.")


def counter(endpoint: Endpoint, name: str, deadline: float | None = None) -> int | None:
    """One unlabelled Prometheus counter (e.g. llamacpp:n_decode_total) as a whole count, None when absent;
    EngineError when it is not a count (negative, fractional, infinite, huge)."""
    from prometheus_client.parser import text_string_to_metric_families

    _, text = endpoint.request("/metrics", deadline=deadline)
    value = None
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if s.name == name and not s.labels:
                    value = s.value
    except Exception:  # the parser raises several types on malformed text
        return None
    return None if value is None else whole(value, name, cap=10**15)


@dataclass(frozen=True)
class Completion:
    """One chat completion: text, completion tokens, wall seconds and (llama.cpp only) the request's drafts."""

    text: str
    tokens: int
    wall_s: float
    draft_n: int | None = None
    draft_accepted: int | None = None


def chat(endpoint: Endpoint, prompt: str, max_tokens: int, temperature: float, seed: int,
         timeout: float = COMPLETION_TIMEOUT_S, deadline: float | None = None) -> Completion:
    """POST /v1/chat/completions with one user message; the reply's text and token count (EngineError otherwise).

    The count must be a whole number in [0, max(max_tokens, 1) * 4] (a server may count an end token or two; it
    cannot produce orders of magnitude more than asked); the text must be a string."""
    body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": int(max_tokens),
            "temperature": float(temperature), "seed": int(seed), "ignore_eos": True, "stream": False}
    t0 = time.perf_counter()
    _, text = endpoint.request("/v1/chat/completions", body, timeout=timeout, cap=COMPLETION_CAP, deadline=deadline)
    wall = time.perf_counter() - t0
    try:
        reply = _json(text)
        content = reply["choices"][0]["message"]["content"]
        raw_tokens = reply["usage"]["completion_tokens"]
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        why = f" ({exc})" if isinstance(exc, ValueError) else ""
        raise EngineError(f"{endpoint.base} did not answer with an OpenAI chat completion{why}.") from None
    if not isinstance(content, str):
        raise EngineError(f"{endpoint.base}: the reply's message content is not text.")
    tokens = whole(raw_tokens, "completion_tokens", cap=max(int(max_tokens), 1) * 4)
    drafted = accepted = None
    if isinstance(reply.get("timings"), dict):
        try:
            drafted, accepted = vllm_metrics.parse_llamacpp_timings(reply)
        except OverflowError:
            raise EngineError(f"{endpoint.base}: its timings hold a number too large to be a count.") from None
        except ValueError as exc:
            raise EngineError(f"{endpoint.base}: {str(exc)[:200]}") from None
        if drafted > MAX_COUNT:
            raise EngineError(f"{endpoint.base}: timings.draft_n is {drafted:.3g}: not a count of draft tokens.")
    return Completion(content, tokens, wall, drafted, accepted)
