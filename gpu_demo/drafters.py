"""Drafters propose the tokens that the target verifies: the Drafter interface, a model draft, prompt lookup.

A drafter reports, with each proposed token, the law q it was really drawn from: the processed softmax
for a sampling model draft, one-hot for a greedy or deterministic draft. That is what keeps the exact
rule exact whatever the draft's settings.

Prompt lookup (n-gram) drafting proposes what followed the latest earlier match of the context's tail.
Its q is one-hot, so the exact rule accepts x with probability min(1, p(x)/1) = p(x) and on rejection
resamples from (p - q)+ normalised, i.e. p with x removed. It costs no model call, so c is the matching
time only, and it wins when the output copies the input (quote, edit, summarise).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
import torch
from numpy.lib.stride_tricks import sliding_window_view

from gpu_demo.constraints import Constraint
from gpu_demo.models.base import DecoderLM
from gpu_demo.sampler import SamplingConfig, next_token


@dataclass
class Draft:
    """k proposed tokens and the (processed) laws they were drawn from; k may be 0."""

    tokens: torch.Tensor  # (k,) long, on the target's device
    q: torch.Tensor  # (k, V) float32: q_i is the law x_i was sampled from (one-hot for a deterministic draft)


class Drafter(ABC):
    """Proposes draft tokens. Model drafts sample from q; deterministic drafts (n-gram lookup) have q one-hot.

    Life cycle per sequence: ``begin(prompt)``; then per round ``propose(...)`` -> verification ->
    ``commit(n_accepted, next_token)``. ``vocab_size`` must equal the target's.
    """

    name: str = "drafter"
    vocab_size: int
    max_seq_len: int = 1 << 30  # longest committed sequence the drafter can follow

    @abstractmethod
    def begin(self, prompt: torch.Tensor) -> None:
        """Start a new sequence from the prompt's token ids (n,) (n >= 1)."""

    @abstractmethod
    def propose(
        self, context: torch.Tensor, gamma: int, sampling: SamplingConfig, generator: torch.Generator | None
    ) -> Draft:
        """Up to gamma tokens continuing ``context`` (all committed ids, (n,)); greedy sampling -> argmax.

        Drafters that support constrained decoding take a keyword ``constraint`` (a Constraint at the
        committed position): each drafted token is allowed by the mask of its prefix, q is the masked law,
        and the constraint is left advanced past the k drafted tokens. The engine passes it only when set.
        """

    @abstractmethod
    def commit(self, n_accepted: int, next_token: int) -> None:
        """The target kept the first n_accepted proposed tokens and then emitted next_token."""


def prefill_all_but_last(model: DecoderLM, prompt: torch.Tensor) -> torch.Tensor:
    """Reset model and feed prompt[:-1] (n,) into its cache; returns the pending last id (1,) on its device."""
    model.reset(1)
    prompt = prompt.to(model.device)
    if prompt.numel() > 1:
        model.forward(prompt[:-1].view(1, -1))
    return prompt[-1:]


class ModelDrafter(Drafter):
    """Draft with a small DecoderLM: draw gamma tokens autoregressively from its processed law q."""

    def __init__(self, model: DecoderLM, name: str = "model draft") -> None:
        self.model = model
        self.name = name
        self.vocab_size = model.vocab_size
        self.max_seq_len = model.max_seq_len
        self._pending = torch.empty(0, dtype=torch.long)  # tokens committed but not yet fed (1 or 2)
        self._base = 0  # cache length before the last proposal's first forward
        self._n_fed_pending = 0
        self._proposed: torch.Tensor = torch.empty(0, dtype=torch.long)

    def begin(self, prompt: torch.Tensor) -> None:
        """Prefill the draft's cache with all prompt tokens but the last (which stays pending)."""
        self._pending = prefill_all_but_last(self.model, prompt)

    def propose(
        self, context: torch.Tensor, gamma: int, sampling: SamplingConfig, generator: torch.Generator | None,
        constraint: Constraint | None = None,
    ) -> Draft:
        """gamma draws x_i ~ q_i = the draft's law given the committed context and x_<i (one-hot if greedy).

        With a constraint, q_i is the law of the masked logits; drafting stops early once the text is finished
        or when the draft gives no allowed token any probability (the target then supplies the token).
        """
        self._base = self.model.cache_len
        feed = self._pending.view(1, -1)  # (1, 1) or (1, 2) after a full acceptance (the catch-up)
        toks, qs = [], []
        for _ in range(gamma):
            if constraint is not None and constraint.finished:
                break  # only the end token can follow: the target's bonus position supplies it
            logits = self.model.forward(feed)[0, -1]  # (V,)
            if constraint is not None:
                logits = constraint.restrict(logits)  # the mask of the prefix committed + x_<i
                if not bool(logits.isfinite().any()):  # no allowed token in the draft's support (a shortlist head)
                    self.model.rollback(self.model.cache_len - feed.shape[1])  # as if this step never ran
                    break
            x, q = next_token(logits, sampling, generator)  # (1,), (V,)
            if constraint is not None:
                constraint.consume(x)
            toks.append(x)
            qs.append(q)
            feed = x.view(1, 1)
        dev = self.model.device
        tokens = torch.cat(toks) if toks else torch.empty(0, dtype=torch.long, device=dev)  # (k,)
        q_all = torch.stack(qs) if qs else torch.empty(0, self.vocab_size, device=dev)  # (k, V)
        self._proposed = tokens
        self._n_fed_pending = self._pending.numel()
        return Draft(tokens, q_all)

    def commit(self, n_accepted: int, next_token: int) -> None:
        """Roll back to pending + accepted drafts; on a full acceptance keep x_k pending (the catch-up)."""
        k = self._proposed.numel()
        nxt = torch.tensor([next_token], dtype=torch.long, device=self.model.device)
        if k == 0:  # nothing was fed: the old pending tokens are still unseen
            self._pending = torch.cat([self._pending, nxt])
        elif n_accepted < k:
            self.model.rollback(self._base + self._n_fed_pending + n_accepted)
            self._pending = nxt
        else:  # fed pending + x_1..x_{k-1}; x_k was never fed
            self._pending = torch.cat([self._proposed[-1:], nxt])


# ------------------------------------------------------------------------------------------ prompt lookup


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
        self, context: torch.Tensor, gamma: int, sampling: SamplingConfig, generator: torch.Generator | None,
        constraint: Constraint | None = None,
    ) -> Draft:
        """k <= gamma tokens continuing the latest match; q_i = one-hot(x_i), whatever the sampling settings.

        With a constraint, the proposal stops before its first token that the constraint does not allow.
        """
        ids = propose_ids(context.cpu().numpy(), gamma, self.max_ngram, self.min_ngram)
        if constraint is not None:
            ids = ids[: constraint.consume_allowed(ids.tolist())]
        tokens = torch.from_numpy(ids).to(context.device)  # (k,)
        q = one_hot_q(tokens, self.vocab_size)  # (k, V)
        return Draft(tokens, q)

    def commit(self, n_accepted: int, next_token: int) -> None:
        """Nothing to roll back: the committed context is passed to each propose."""


def one_hot_q(tokens: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """q (k, V) float32 with q_i(x_i) = 1: the law of a deterministic draft."""
    q = torch.zeros(tokens.shape[0], vocab_size, dtype=torch.float32, device=tokens.device)
    return q.scatter_(1, tokens.view(-1, 1), 1.0)
