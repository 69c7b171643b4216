"""Shared test doubles: a Markov "language model" implementing DecoderLM, and the app's `streamlit run` server
(harness.serving's, on app.py, logging under artifacts/).

Its logits at a position depend only on that position's token (logits = table[x_t]), so the law of a
few decoded tokens is enumerable in closed form, while the real decoder, drafters and rules run on it.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch

from harness.serving import streamlit_server as _serve

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
    with _serve(ROOT / "app.py", ROOT / "artifacts" / log_name) as running:
        yield running


def markov_tables(v: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """A target table of logits and a draft table near it (seeded), for first-order Markov pairs."""
    rng = np.random.default_rng(7)
    target = rng.normal(0.0, 1.3, size=(v, v))
    return target, target + rng.normal(0.0, 1.1, size=(v, v))


class TreeMarkovLM(MarkovLM):
    """A first-order Markov LM (logits = table[token]) that takes the tree arguments and keeps paths."""

    def forward(self, idx, positions=None, tree_mask=None):
        return super().forward(idx)

    def keep(self, start: int, slots: list[int]) -> None:
        if not 0 <= start <= self._len:
            raise ValueError("keep needs a start inside the cache")
        self._len = start + len(slots)
