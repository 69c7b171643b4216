"""A constraint's compilation under a wall-clock limit: a worker process compiles it and is killed at the deadline.

llguidance's own budgets (lexer fuel, Earley items, grammar size) bound a mask step, not the compilation: a
JSON schema with hundreds of ``patternProperties`` compiles for tens of seconds with every budget set small
(tests/test_compile_worker.py), and a long regex spends most of its time building the lexer over the token
trie. A thread cannot be
stopped, so long-lived workers (no torch) compile the grammar over the same tokenizer first
(validation, then the matcher); past ``limit_s`` a worker is killed, which stops the work, and the next request
starts a fresh one. Only a grammar that compiled in time is built again in-process, so a request costs at
most about twice the limit. The llguidance tokenizers are built here too, from a spec both sides share.

Up to POOL_SIZE workers compile at once, so one slow paste does not hold every other session's compile; a
request waits for a free worker at most QUEUE_LIMIT_S. A worker dies with the process that started it: the
kernel kills it when its parent goes (PR_SET_PDEATHSIG, set by the worker; workers are started from one thread
that lives as long as the process, since the signal follows the starting thread), and it exits by itself if
it finds it was re-parented before that was set. POSIX pipes (select); Linux for the parent-death signal.
"""

from __future__ import annotations

import ctypes
import json
import os
import queue
import selectors
import signal
import subprocess
import sys
import threading
import time

COMPILE_LIMIT_S = 1.0  # the worker's compile; the in-process build after it costs about as much again
START_LIMIT_S = 120.0  # the worker's own start (a Python importing llguidance), not counted in the limit
POOL_SIZE = 3          # compiles at once in this process (each worker holds its tokenizers, tens of MB)
QUEUE_LIMIT_S = 10.0   # the longest a request waits for a free worker
PARENT_ENV = "SPECDEC_COMPILE_PARENT"  # the starting process's pid, for the worker's re-parenting check
PR_SET_PDEATHSIG = 1
END_PIECE = b"\xff<|end|>"  # llguidance's marker byte 0xFF: a special token, never produced by text

# ------------------------------------------------------------------------------------- tokenizer specs


class _PiecesTokenizer:
    """The duck type llguidance.TokenizerWrapper reads: one byte string per token id, an end token, encode()."""

    def __init__(self, pieces: list[bytes], end_token: int, encode) -> None:
        self.tokens = pieces
        self.eos_token_id = end_token
        self.bos_token_id = None
        self.special_token_ids = [end_token]
        self._encode = encode

    def __call__(self, text: str | bytes) -> list[int]:
        return self._encode(text.decode("utf-8") if isinstance(text, bytes) else text)


def char_lltokenizer(chars: str, end_token: int):
    """An llguidance tokenizer for a character vocabulary: token i is chars[i], except end_token (the end marker)."""
    from llguidance import LLTokenizer, TokenizerWrapper

    if not 0 <= end_token < len(chars):
        raise ValueError(f"end token {end_token} is outside the vocabulary [0, {len(chars)})")
    index = {ch: i for i, ch in enumerate(chars)}
    pieces = [END_PIECE if i == end_token else ch.encode("utf-8") for i, ch in enumerate(chars)]
    return LLTokenizer(TokenizerWrapper(_PiecesTokenizer(pieces, end_token,
                                                         lambda text: [index[ch] for ch in text if ch in index])))


def lltokenizer(spec: list) -> object:
    """The llguidance tokenizer of a spec: ["bpe", tokenizer JSON, n_vocab, eos] or ["chars", chars, end_token]."""
    from llguidance import LLTokenizer

    if spec[0] == "bpe":
        return LLTokenizer(spec[1], n_vocab=int(spec[2]), eos_token=int(spec[3]))
    return char_lltokenizer(spec[1], int(spec[2]))


# ------------------------------------------------------------------------------------------ the worker


def compile_message(grammar: str, llt) -> str:
    """llguidance's complaint about grammar over llt ('' when it compiles): validation, then the matcher itself."""
    from llguidance import LLMatcher

    error = LLMatcher.validate_grammar(grammar, llt)
    if error:
        return error
    m = LLMatcher(llt, grammar, log_level=0)
    return m.get_error() if m.is_error() else ""


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent ends; exit now if the parent is already gone."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the EOF on stdin still ends the loop between compiles
        pass
    parent = os.environ.get(PARENT_ENV)
    if parent is not None and os.getppid() != int(parent):
        os._exit(0)


def serve() -> None:
    """The worker's loop: one JSON line in ({key, spec or null, grammar}), one JSON string out; ends at EOF."""
    die_with_parent()
    import llguidance  # noqa: F401  (imported before 'ready', so the start is not counted in a request's limit)

    out, tokenizers = sys.stdout.buffer, {}
    out.write(b"ready\n")
    out.flush()
    for line in sys.stdin.buffer:
        msg = json.loads(line)
        if msg["spec"] is not None:
            tokenizers[msg["key"]] = lltokenizer(msg["spec"])
        out.write(json.dumps(compile_message(msg["grammar"], tokenizers[msg["key"]])).encode() + b"\n")
        out.flush()


class CompileTimeout(Exception):
    """The compilation ran past its limit; the worker doing it was killed."""


class CompileBusy(Exception):
    """Every worker stayed busy for QUEUE_LIMIT_S; the request was not compiled."""


class _Worker:
    """One worker process (started on first use, again after a kill); one compilation at a time (its lock)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None
        self.sent: set[str] = set()  # tokenizer keys this process has built
        self.lock = threading.Lock()

    def _line(self, limit_s: float) -> bytes | None:
        """The worker's next output line, or None past limit_s (or if it died)."""
        assert self.proc is not None and self.proc.stdout is not None
        fd, buf, deadline = self.proc.stdout.fileno(), b"", time.monotonic() + limit_s
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while not buf.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    return None
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    return None
                buf += chunk
        return buf

    def _start(self) -> None:
        self.proc = _spawn()
        self.sent = set()
        if self._line(START_LIMIT_S) != b"ready\n":
            self._kill()
            raise RuntimeError("the constraint compiler's worker process did not start")

    def _kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def compile(self, grammar: str, key: str, spec: list, limit_s: float) -> str:
        """compile_message(grammar, lltokenizer(spec)) in the worker; CompileTimeout past limit_s (worker killed).
        The caller holds self.lock."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        assert self.proc is not None and self.proc.stdin is not None
        if key not in self.sent:  # the tokenizer's build (~0.5 s for a BPE) is not the grammar's compile
            self._send({"key": key, "spec": spec, "grammar": '{"grammars": [{"lark_grammar": "start: \\"a\\""}]}'})
            if self._line(START_LIMIT_S) is None:
                self._kill()
                raise RuntimeError("the constraint compiler's worker could not build the tokenizer")
            self.sent.add(key)
        self._send({"key": key, "spec": None, "grammar": grammar})
        line = self._line(limit_s)
        if line is None:
            self._kill()  # stops the compilation itself, not only the wait
            raise CompileTimeout(f"compilation ran past {limit_s:g} s")
        return str(json.loads(line))

    def _send(self, msg: dict) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            self._kill()
            raise RuntimeError("the constraint compiler's worker process died") from None


_SPAWNS: queue.Queue = queue.Queue()
_SPAWNER_LOCK = threading.Lock()
_spawner: threading.Thread | None = None


def _spawner_loop() -> None:
    """Start each requested worker from this one long-lived thread (the parent-death signal follows it)."""
    while True:
        box, done = _SPAWNS.get()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p),  # this process's gpu_demo
               PARENT_ENV: str(os.getpid())}
        try:
            box.append(subprocess.Popen([sys.executable, "-c", "from gpu_demo.compile_worker import serve; serve()"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        env=env))
        except OSError as exc:
            box.append(exc)
        done.set()


def _spawn() -> subprocess.Popen:
    """A new worker process, started by the spawner thread."""
    global _spawner
    with _SPAWNER_LOCK:
        if _spawner is None or not _spawner.is_alive():
            _spawner = threading.Thread(target=_spawner_loop, name="compile-worker-spawner", daemon=True)
            _spawner.start()
    box: list = []
    done = threading.Event()
    _SPAWNS.put((box, done))
    done.wait()
    if isinstance(box[0], OSError):
        raise RuntimeError(f"the constraint compiler's worker process could not start: {box[0]}")
    return box[0]


_POOL = [_Worker() for _ in range(POOL_SIZE)]
_FREE = threading.Semaphore(POOL_SIZE)


def worker_pids() -> list[int]:
    """The process ids of the live workers (tests, diagnostics)."""
    return [w.proc.pid for w in _POOL if w.proc is not None and w.proc.poll() is None]


def compile_bounded(grammar: str, key: str, spec: list, limit_s: float = COMPILE_LIMIT_S) -> str:
    """llguidance's complaint about grammar over the spec's tokenizer ('' if it compiles), stopped after limit_s.

    Runs on a free worker of the pool (one that has this tokenizer already, if any is free); CompileBusy when
    none frees up within QUEUE_LIMIT_S."""
    if not _FREE.acquire(timeout=QUEUE_LIMIT_S):
        raise CompileBusy(f"{POOL_SIZE} constraints are compiling on this server; try again in a moment")
    try:
        ranked = sorted(_POOL, key=lambda w: (key not in w.sent, w.proc is None))
        for worker in ranked:  # the semaphore guarantees one of them is free
            if worker.lock.acquire(blocking=False):
                try:
                    return worker.compile(grammar, key, spec, limit_s)
                finally:
                    worker.lock.release()
        raise RuntimeError("no constraint compiler worker was free")  # unreachable while the semaphore holds
    finally:
        _FREE.release()
