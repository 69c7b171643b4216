"""Shared test doubles: a Markov "language model" implementing DecoderLM, and a `streamlit run` server.

Its logits at a position depend only on that position's token (logits = table[x_t]), so the law of a
few decoded tokens is enumerable in closed form, while the real decoder, drafters and rules run on it.
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

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]


class MarkovLM:
    """DecoderLM whose logits at a position depend only on that position's token: table[token]."""

    def __init__(self, table: np.ndarray | torch.Tensor, max_seq_len: int = 64) -> None:
        self.table = torch.as_tensor(table, dtype=torch.float32)  # (V, V)
        self.vocab_size = int(self.table.shape[0])
        self.max_seq_len = max_seq_len
        self._len = 0

    @property
    def device(self) -> torch.device:
        return torch.device("cpu")

    @property
    def cache_len(self) -> int:
        return self._len

    def reset(self, batch_size: int = 1) -> None:
        self._len = 0

    def rollback(self, n: int) -> None:
        if not 0 <= n <= self._len:
            raise ValueError(f"rollback length must be in [0, {self._len}]; got {n}")
        self._len = n

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        if self._len + idx.shape[1] > self.max_seq_len:
            raise ValueError("past the context")
        self._len += idx.shape[1]
        return self.table[idx]  # (B, T, V)


@contextmanager
def streamlit_server(log_name: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """`streamlit run app.py` on a free loopback port, logging to artifacts/<log_name>; yields (url, process)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (ROOT / "artifacts").mkdir(exist_ok=True)
    with open(ROOT / "artifacts" / log_name, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", str(ROOT / "app.py"),
             "--server.port", str(port), "--server.address", "127.0.0.1", "--server.headless", "true"],
            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_healthy(url, proc, log_name)
            yield url, proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()


def _wait_healthy(url: str, proc: subprocess.Popen, log_name: str, timeout_s: float = 90.0) -> None:
    """Poll /_stcore/health until it answers 'ok'; RuntimeError if the server exits or never answers."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited early with code {proc.returncode}; see artifacts/{log_name}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.read().decode().strip() == "ok":
                    return
        except OSError:
            time.sleep(0.3)
    raise RuntimeError(f"streamlit did not answer /_stcore/health within {timeout_s:.0f} s")
