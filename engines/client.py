"""Bounded HTTP to an inference server: the outside-URL allow-list, engine recognition, completions, counter scrapes.

A classroom server must not fetch what students type. A typed URL is used only when its origin (scheme://host:port)
is on the allow-list in the server's environment, ``SPECDEC_ENGINE_URLS`` (comma-separated origins; unset: none);
never from a query string. The app's own embedded servers are reached through ``Endpoint.embedded``, which no
typed text can produce. Every request has a timeout and a response-size cap; every failure is one EngineError line.
"""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass

from specdec_core import vllm_metrics as vm
from specdec_core.vllm_counts import SpecDecodeCounts, VllmRates

ALLOW_ENV = "SPECDEC_ENGINE_URLS"
ENGINES = ("vllm", "llamacpp", "sglang", "trtllm")
ENGINE_NAMES = {"vllm": "vLLM", "llamacpp": "llama.cpp", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
METRICS_CAP = 4_000_000     # bytes read from /metrics
COMPLETION_CAP = 1_000_000  # bytes read from a completion
PROBE_TIMEOUT_S = 2.0
COMPLETION_TIMEOUT_S = 120.0


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
                cap: int = METRICS_CAP) -> tuple[str, str]:
        """GET (or POST JSON) base + path -> (content type, text), at most cap bytes, within timeout seconds."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method="GET" if body is None else "POST",
                                     headers={"Content-Type": "application/json", "Accept": "*/*"})
        try:
            with _opener().open(req, timeout=timeout) as resp:
                raw = resp.read(cap + 1)
                kind = resp.headers.get("Content-Type", "")
        except urllib.error.HTTPError as exc:
            raise EngineError(f"{self.base}{path} answered HTTP {exc.code}.") from None
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, TimeoutError) or "timed out" in str(reason):
                raise EngineError(f"{self.base}{path} did not answer within {timeout:g} s.") from None
            raise EngineError(f"Could not connect to {self.base}: {reason}.") from None
        if len(raw) > cap:
            raise EngineError(f"{self.base}{path} sent more than {cap:,} bytes: not what an engine sends.")
        return kind, raw.decode("utf-8", errors="replace")


def _opener() -> urllib.request.OpenerDirector:
    """No proxies and no redirects: the request goes to the allowed origin and nowhere else."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    return urllib.request.build_opener(urllib.request.ProxyHandler({}), NoRedirect())


def recognise(endpoint: Endpoint) -> str:
    """The engine behind endpoint, from what its /metrics returns: a Prometheus text with vllm:, llamacpp: or sglang:
    names, or TensorRT-LLM's JSON list of iteration stats. Anything else: EngineError."""
    kind, text = endpoint.request("/metrics")
    head = text.lstrip()[:1]
    if head == "[":
        try:
            vm.parse_trtllm(text)
            return "trtllm"
        except ValueError:
            pass
    for engine, mark in (("vllm", "vllm:"), ("llamacpp", "llamacpp:"), ("sglang", "sglang:")):
        if f"\n{mark}" in "\n" + text or f"# TYPE {mark}" in text:
            return engine
    raise EngineError(f"{endpoint.base} does not look like vLLM, SGLang, llama.cpp or TensorRT-LLM: its /metrics "
                      "has none of their metrics.")


def scrape(endpoint: Endpoint, engine: str, empty_ok: bool = False) -> SpecDecodeCounts | VllmRates:
    """The engine's speculative counters now (SGLang: its interval-average gauges); EngineError when unreadable."""
    _, text = endpoint.request("/metrics")
    try:
        if engine in ("vllm", "llamacpp"):
            return vm.parse_prometheus(text, engine=engine, empty_ok=empty_ok)
        if engine == "sglang":
            return vm.parse_sglang(text)
        if engine == "trtllm":
            return vm.parse_trtllm(text)
    except ValueError as exc:
        raise EngineError(f"{ENGINE_NAMES[engine]} at {endpoint.base}: {exc}") from None
    raise EngineError(f"Unknown engine {engine!r}.")


def counter(endpoint: Endpoint, name: str) -> float | None:
    """One unlabelled Prometheus sample (e.g. llamacpp:n_decode_total) or None when absent."""
    from prometheus_client.parser import text_string_to_metric_families

    _, text = endpoint.request("/metrics")
    try:
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if s.name == name and not s.labels:
                    return float(s.value)
    except Exception:  # the parser raises several types on malformed text
        return None
    return None


@dataclass(frozen=True)
class Completion:
    """One chat completion: text, completion tokens, wall seconds and (llama.cpp only) the request's drafts."""

    text: str
    tokens: int
    wall_s: float
    draft_n: int | None = None
    draft_accepted: int | None = None


def chat(endpoint: Endpoint, prompt: str, max_tokens: int, temperature: float, seed: int,
         timeout: float = COMPLETION_TIMEOUT_S) -> Completion:
    """POST /v1/chat/completions with one user message; the reply's text and token count (EngineError otherwise)."""
    body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": int(max_tokens),
            "temperature": float(temperature), "seed": int(seed), "ignore_eos": True, "stream": False}
    t0 = time.perf_counter()
    _, text = endpoint.request("/v1/chat/completions", body, timeout=timeout, cap=COMPLETION_CAP)
    wall = time.perf_counter() - t0
    try:
        reply = json.loads(text)
        content = reply["choices"][0]["message"]["content"]
        tokens = int(reply["usage"]["completion_tokens"])
    except (ValueError, KeyError, IndexError, TypeError):
        raise EngineError(f"{endpoint.base} did not answer with an OpenAI chat completion.") from None
    drafted = accepted = None
    if isinstance(reply.get("timings"), dict):
        try:
            drafted, accepted = vm.parse_llamacpp_timings(reply)
        except ValueError as exc:
            raise EngineError(f"{endpoint.base}: {exc}") from None
    return Completion(str(content), tokens, wall, drafted, accepted)
