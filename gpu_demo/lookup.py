"""Prompt-lookup (n-gram) drafting: propose what followed the latest earlier match of the context's tail.

It is a deterministic draft: given the context, it proposes exactly one sequence, so its law q is
one-hot at each drafted token and the exact rule accepts x with probability min(1, p(x)/1) = p(x);
on rejection it resamples from (p - q)+ normalised, i.e. p with x removed. It costs no model call,
so c is the matching time only, and it wins when the output copies the input (quote, edit, summarise).
"""

from __future__ import annotations

import numpy as np
import torch
from numpy.lib.stride_tricks import sliding_window_view

from gpu_demo.decode import Draft, Drafter
from gpu_demo.sampler import SamplingConfig


def find_continuation(context: np.ndarray, gamma: int, max_ngram: int = 3, min_ngram: int = 1) -> np.ndarray:
    """Tokens after the most recent earlier occurrence of the longest suffix n-gram (max_ngram >= n >= min_ngram).

    Returns up to gamma tokens (int64); empty when no suffix n-gram recurs. The continuation may run
    into the suffix itself (a repeating pattern copies forward).
    """
    ctx = np.asarray(context, dtype=np.int64)
    L = ctx.shape[0]
    if gamma <= 0 or L < 2:
        return ctx[:0]
    for n in range(min(max_ngram, L - 1), min_ngram - 1, -1):
        tail = ctx[L - n :]  # (n,)
        windows = sliding_window_view(ctx[: L - 1], n)  # (L - n, n): earlier n-grams, each with a successor
        hits = np.flatnonzero((windows == tail).all(axis=1))
        if hits.size:
            start = int(hits[-1]) + n  # first token after the latest match
            return ctx[start : start + gamma]
    return ctx[:0]


def propose_ids(context: np.ndarray, gamma: int, max_ngram: int = 3, min_ngram: int = 1) -> np.ndarray:
    """Up to gamma draft tokens: the n-gram continuation, extended by looking up again from its end.

    When the continuation is shorter than gamma (the match sits near the end of the context), the
    lookup is repeated on the context extended by what was proposed so far. Returns fewer than gamma
    tokens (possibly none) when nothing more matches: the round then costs one target step.
    """
    ctx = np.asarray(context, dtype=np.int64)
    out = ctx[:0]
    while out.shape[0] < gamma:
        more = find_continuation(np.concatenate([ctx, out]), gamma - out.shape[0], max_ngram, min_ngram)
        if more.shape[0] == 0:
            break
        out = np.concatenate([out, more])
    return out[:gamma]


class LookupDrafter(Drafter):
    """Prompt-lookup draft for gpu_demo.decode: deterministic proposals, q one-hot at each drafted token."""

    def __init__(self, vocab_size: int, max_ngram: int = 3, min_ngram: int = 1, name: str = "prompt lookup") -> None:
        if not 1 <= min_ngram <= max_ngram:
            raise ValueError(f"need 1 <= min_ngram <= max_ngram; got {min_ngram}, {max_ngram}")
        self.vocab_size = vocab_size
        self.max_ngram, self.min_ngram = max_ngram, min_ngram
        self.name = name

    def begin(self, prompt: torch.Tensor) -> None:
        """Nothing to prefill: the context is searched afresh each round."""

    def propose(
        self, context: torch.Tensor, gamma: int, sampling: SamplingConfig, generator: torch.Generator | None
    ) -> Draft:
        """k <= gamma tokens continuing the latest match; q_i = one-hot(x_i), whatever the sampling settings."""
        ids = propose_ids(context.cpu().numpy(), gamma, self.max_ngram, self.min_ngram)
        tokens = torch.from_numpy(ids).to(context.device)  # (k,)
        q = one_hot_q(tokens, self.vocab_size)  # (k, V)
        return Draft(tokens, q)

    def commit(self, n_accepted: int, next_token: int) -> None:
        """Nothing to roll back: the committed context is passed to each propose."""


def one_hot_q(tokens: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """q (k, V) float32 with q_i(x_i) = 1: the law of a deterministic draft."""
    q = torch.zeros(tokens.shape[0], vocab_size, dtype=torch.float32, device=tokens.device)
    return q.scatter_(1, tokens.view(-1, 1), 1.0)
