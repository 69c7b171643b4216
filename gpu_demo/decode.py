"""Autoregressive and speculative generation, yielding one :class:`RoundEvent` per round.

State convention (both generators): the *committed* sequence is prompt + emitted tokens. The target's
KV cache holds every committed token except the last, which is *pending* and is fed first in the next
forward. A speculative round:

1. the drafter proposes k <= gamma tokens x_1..x_k with the laws q_1..q_k it sampled them from;
2. the target runs one forward over [pending, x_1..x_k] -> laws p_1..p_{k+1};
3. the exact rule (or the greedy rule at temperature 0) accepts a prefix x_1..x_n and draws the next
   token y from the residual (n < k, a *correction*) or from p_{k+1} (n = k, a *bonus*);
4. the target's cache rolls back to committed-minus-one (the pending token is y), the drafter is told
   (n, y) and rolls back too; when every draft was accepted the drafter has not yet seen x_k, and it
   feeds [x_k, y] in its next step (the catch-up).

The page and the benchmarks consume the same events, so nothing is timed twice. Times are wall-clock
``perf_counter`` intervals, synchronised on CUDA before each reading.
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field

import torch

from gpu_demo.models import DecoderLM
from gpu_demo.sampler import SamplingConfig, Verdict, check_sampling, exact_rule, greedy_rule, logits_to_probs, sample

MAX_GAMMA = 16
KINDS = ("accepted", "correction", "bonus", "target")  # "target": a plain autoregressive token


# ----------------------------------------------------------------------------------------------- drafters


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
        """Up to gamma tokens continuing ``context`` (all committed ids, (n,)); greedy sampling -> argmax."""

    @abstractmethod
    def commit(self, n_accepted: int, next_token: int) -> None:
        """The target kept the first n_accepted proposed tokens and then emitted next_token."""


class ModelDrafter(Drafter):
    """Draft with a small DecoderLM: draw gamma tokens autoregressively from its processed law q."""

    def __init__(self, model: DecoderLM, name: str = "model draft") -> None:
        self.model = model
        self.name = name
        self.vocab_size = model.vocab_size
        self.max_seq_len = model.max_seq_len
        self._pending = torch.empty(0, dtype=torch.long)  # tokens committed but not yet fed (1 or 2)
        self._base = 0  # cache length before the last proposal's first forward
        self._proposed: torch.Tensor = torch.empty(0, dtype=torch.long)

    def begin(self, prompt: torch.Tensor) -> None:
        """Prefill the draft's cache with all prompt tokens but the last (which stays pending)."""
        self.model.reset(1)
        prompt = prompt.to(self.model.device)
        if prompt.numel() > 1:
            self.model.forward(prompt[:-1].view(1, -1))
        self._pending = prompt[-1:]

    def propose(
        self, context: torch.Tensor, gamma: int, sampling: SamplingConfig, generator: torch.Generator | None
    ) -> Draft:
        """gamma draws x_i ~ q_i = processed draft law given the committed context and x_<i (argmax if greedy)."""
        self._base = self.model.cache_len
        feed = self._pending.view(1, -1)  # (1, 1) or (1, 2) after a full acceptance
        toks, qs = [], []
        for _ in range(gamma):
            logits = self.model.forward(feed)[0, -1]  # (V,)
            q = logits_to_probs(logits, sampling)  # (V,)
            x = logits.argmax(-1, keepdim=True) if sampling.greedy else sample(q.view(1, -1), generator)  # (1,)
            toks.append(x)
            qs.append(q)
            feed = x.view(1, 1)
        tokens = torch.cat(toks) if toks else torch.empty(0, dtype=torch.long, device=self.model.device)
        q_all = torch.stack(qs) if qs else torch.empty(0, self.vocab_size, device=self.model.device)
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


# ------------------------------------------------------------------------------------------------- events


@dataclass
class RoundEvent:
    """One decoding round (one target forward). Lists are plain Python values, ready for JSON.

    For a speculative round, ``drafted`` has k <= gamma tokens and ``q_x``, ``p_x``, ``uniforms``,
    ``accept_mask`` one entry each (the mask is u_i < p(x_i)/q(x_i) evaluated at every position; only
    the first ``n_accepted`` count, the token at index n_accepted (if any) is the rejected one and the
    rest were never reached). ``emitted`` are the committed tokens, with ``kinds`` in KINDS.
    ``p_top`` has k+1 entries (drafted positions, then the correction/bonus position) and ``q_top`` k:
    each a list of (token id, probability) for the top entries of the processed law (softmax at T=1
    under greedy). Autoregressive rounds have no draft, one emitted token of kind "target".
    """

    round: int
    drafted: list[int]
    q_x: list[float]
    p_x: list[float]
    uniforms: list[float]
    accept_mask: list[bool]
    n_accepted: int
    emitted: list[int]
    kinds: list[str]
    draft_s: float  # time in the drafter (its forwards and sampling), synchronised
    verify_s: float  # target forward + acceptance rule (+ cache rollback), synchronised
    prefill_s: float = 0.0  # prompt prefill time (first round only)
    p_top: list[list[tuple[int, float]]] = field(default_factory=list)
    q_top: list[list[tuple[int, float]]] = field(default_factory=list)
    gamma: int = 0
    greedy: bool = False

    @property
    def k(self) -> int:
        """Number of drafted tokens this round."""
        return len(self.drafted)

    def verdicts(self) -> list[str]:
        """Per drafted position: 'accepted', 'rejected' (the first miss) or 'unreached'."""
        n = self.n_accepted
        return ["accepted" if i < n else "rejected" if i == n else "unreached" for i in range(self.k)]

    def to_dict(self) -> dict:
        """JSON-ready dict (tuples become lists)."""
        return asdict(self)


@dataclass
class DecodeResult:
    """A whole run: the committed ids after the prompt, the events, and the total wall time."""

    tokens: list[int]
    events: list[RoundEvent]
    wall_s: float


# ---------------------------------------------------------------------------------------------- validation


def check_gamma(gamma: object) -> int:
    """gamma an integer in [1, MAX_GAMMA]."""
    if isinstance(gamma, bool) or not isinstance(gamma, int) or not 1 <= gamma <= MAX_GAMMA:
        raise ValueError(f"gamma must be an integer in [1, {MAX_GAMMA}]; got {gamma!r}")
    return gamma


def check_prompt_and_length(
    prompt_ids: Sequence[int] | torch.Tensor, max_new_tokens: object, context: int
) -> torch.Tensor:
    """Non-empty prompt shorter than the context; max_new_tokens an integer in [1, context - len(prompt)]."""
    ids = torch.as_tensor(prompt_ids, dtype=torch.long).view(-1)
    n = ids.numel()
    if n == 0:
        raise ValueError("the prompt is empty; give at least one token (character)")
    if n >= context:
        raise ValueError(f"the prompt has {n} tokens; this model's context allows at most {context - 1}")
    room = context - n
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or not 1 <= max_new_tokens <= room:
        raise ValueError(
            f"max_new_tokens must be an integer in [1, {room}] (context {context} minus the prompt's {n} tokens); "
            f"got {max_new_tokens!r}"
        )
    return ids


def make_generator(seed: int | None, device: torch.device) -> torch.Generator:
    """A torch.Generator on `device`, seeded (a random seed when None)."""
    gen = torch.Generator(device=device)
    if seed is None:
        gen.seed()
    else:
        gen.manual_seed(int(seed))
    return gen


# ------------------------------------------------------------------------------------------------- helpers


def _sync(device: torch.device) -> None:
    """Wait for queued CUDA work so that a wall-clock reading is honest."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _top(probs: torch.Tensor, n: int) -> list[list[tuple[int, float]]]:
    """Top-n (id, prob) per row of probs (R, V); [] when n == 0 or R == 0."""
    if n <= 0 or probs.shape[0] == 0:
        return []
    vals, ids = torch.topk(probs, min(n, probs.shape[-1]), dim=-1)
    return [list(zip(i, v)) for i, v in zip(ids.tolist(), vals.tolist())]


def _prefill(target: DecoderLM, ids: torch.Tensor) -> tuple[torch.Tensor, float]:
    """Reset the target and feed all prompt tokens but the last; returns (pending (1,), seconds)."""
    dev = target.device
    t0 = time.perf_counter()
    target.reset(1)
    if ids.numel() > 1:
        target.forward(ids[:-1].view(1, -1))
    _sync(dev)
    return ids[-1:], time.perf_counter() - t0


# --------------------------------------------------------------------------------------------- generators


def autoregressive(
    target: DecoderLM,
    prompt_ids: Sequence[int] | torch.Tensor,
    max_new_tokens: int,
    sampling: SamplingConfig = SamplingConfig(),
    seed: int | None = 0,
    stop_tokens: Sequence[int] = (),
    topk: int = 5,
) -> Iterator[RoundEvent]:
    """Plain decoding: one target forward per token, x_t ~ p(. | x_<t) (argmax if greedy). One event per token.

    Arguments are validated when called (ValueError); the work runs in inference mode on each next().
    """
    check_sampling(sampling, target.vocab_size, "target")
    dev = target.device
    ids = check_prompt_and_length(prompt_ids, max_new_tokens, target.max_seq_len).to(dev)
    return _stepwise_inference(
        _autoregressive_body(target, ids, max_new_tokens, sampling, seed, set(stop_tokens), topk)
    )


def _autoregressive_body(
    target: DecoderLM,
    ids: torch.Tensor,
    max_new_tokens: int,
    sampling: SamplingConfig,
    seed: int | None,
    stops: set[int],
    topk: int,
) -> Iterator[RoundEvent]:
    """The autoregressive loop (arguments already validated)."""
    dev = target.device
    gen = make_generator(seed, dev)
    pending, prefill_s = _prefill(target, ids)
    for r in range(max_new_tokens):
        t0 = time.perf_counter()
        logits = target.forward(pending.view(1, 1))[0, -1]  # (V,)
        p = logits_to_probs(logits, sampling)  # (V,)
        x = logits.argmax(-1, keepdim=True) if sampling.greedy else sample(p.view(1, -1), gen)  # (1,)
        y = int(x)
        _sync(dev)
        verify_s = time.perf_counter() - t0
        pending = x
        yield RoundEvent(
            round=r,
            drafted=[],
            q_x=[],
            p_x=[],
            uniforms=[],
            accept_mask=[],
            n_accepted=0,
            emitted=[y],
            kinds=["target"],
            draft_s=0.0,
            verify_s=verify_s,
            prefill_s=prefill_s if r == 0 else 0.0,
            p_top=_top(p.view(1, -1), topk),
            q_top=[],
            gamma=0,
            greedy=sampling.greedy,
        )
        if y in stops:
            return


def speculative(
    target: DecoderLM,
    drafter: Drafter,
    prompt_ids: Sequence[int] | torch.Tensor,
    max_new_tokens: int,
    gamma: int = 4,
    sampling: SamplingConfig = SamplingConfig(),
    draft_sampling: SamplingConfig | None = None,
    seed: int | None = 0,
    stop_tokens: Sequence[int] = (),
    topk: int = 5,
) -> Iterator[RoundEvent]:
    """Speculative decoding: per round, draft k <= gamma tokens, verify them in one target forward.

    With ``draft_sampling`` None the draft uses the target's settings. Different settings remain exact
    (q is the law actually sampled from) but accept less. Greedy is decided by the target's
    temperature: at 0 both draft and target use argmax and the output equals greedy decoding.
    """
    check_gamma(gamma)
    check_sampling(sampling, target.vocab_size, "target")
    dsamp = sampling if draft_sampling is None else check_sampling(draft_sampling, target.vocab_size, "draft")
    if sampling.greedy:
        dsamp = SamplingConfig(temperature=0.0)
    if drafter.vocab_size != target.vocab_size:
        raise ValueError(f"draft vocabulary ({drafter.vocab_size}) differs from the target's ({target.vocab_size})")
    dev = target.device
    context = min(target.max_seq_len, drafter.max_seq_len)
    ids = check_prompt_and_length(prompt_ids, max_new_tokens, context).to(dev)
    return _stepwise_inference(
        _speculative_body(target, drafter, ids, max_new_tokens, gamma, sampling, dsamp, seed, set(stop_tokens), topk)
    )


def _speculative_body(
    target: DecoderLM,
    drafter: Drafter,
    ids: torch.Tensor,
    max_new_tokens: int,
    gamma: int,
    sampling: SamplingConfig,
    dsamp: SamplingConfig,
    seed: int | None,
    stops: set[int],
    topk: int,
) -> Iterator[RoundEvent]:
    """The speculative loop (arguments already validated)."""
    dev = target.device
    gen = make_generator(seed, dev)
    committed = torch.empty(ids.numel() + max_new_tokens, dtype=torch.long, device=dev)  # preallocated
    committed[: ids.numel()] = ids
    n_committed, produced, r = ids.numel(), 0, 0
    pending, prefill_s = _prefill(target, ids)
    t0 = time.perf_counter()
    drafter.begin(ids)
    _sync(dev)
    prefill_s += time.perf_counter() - t0
    while produced < max_new_tokens:
        k_max = min(gamma, max_new_tokens - produced - 1)  # never draft past the requested length
        t0 = time.perf_counter()
        draft = drafter.propose(committed[:n_committed], k_max, dsamp, gen)
        _sync(dev)
        t1 = time.perf_counter()
        drafted, q = draft.tokens.to(dev), draft.q.to(dev)
        k = drafted.numel()
        if k > k_max:
            raise RuntimeError(f"drafter {drafter.name!r} proposed {k} tokens; at most {k_max} were asked")
        base = target.cache_len
        logits = target.forward(torch.cat([pending, drafted]).view(1, -1))[0]  # (k+1, V)
        if sampling.greedy:
            p = torch.softmax(logits.float(), -1)  # (k+1, V) for display
            verdict: Verdict = greedy_rule(logits, drafted, p, q)
        else:
            p = logits_to_probs(logits, sampling)  # (k+1, V)
            verdict = exact_rule(p, q, drafted, gen)
        n = verdict.n_accepted
        target.rollback(base + 1 + n)  # keep pending + accepted drafts; y becomes pending
        _sync(dev)
        t2 = time.perf_counter()
        y = verdict.next_token
        emitted = drafted[:n].tolist() + [y]
        kinds = ["accepted"] * n + ["correction" if n < k else "bonus" if k else "target"]  # k = 0: a plain step
        for j, tok in enumerate(emitted):  # stop tokens end the run after they are emitted
            if tok in stops:
                emitted, kinds = emitted[: j + 1], kinds[: j + 1]
                break
        pending = torch.tensor([y], dtype=torch.long, device=dev)
        committed[n_committed : n_committed + len(emitted)] = torch.tensor(emitted, dtype=torch.long, device=dev)
        n_committed += len(emitted)
        produced += len(emitted)
        drafter.commit(n, y)
        yield RoundEvent(
            round=r,
            drafted=drafted.tolist(),
            q_x=verdict.q_x,
            p_x=verdict.p_x,
            uniforms=verdict.uniforms,
            accept_mask=verdict.accept_mask,
            n_accepted=n,
            emitted=emitted,
            kinds=kinds,
            draft_s=t1 - t0,
            verify_s=t2 - t1,
            prefill_s=prefill_s if r == 0 else 0.0,
            p_top=_top(p, topk),
            q_top=_top(q, topk),
            gamma=gamma,
            greedy=sampling.greedy,
        )
        r += 1
        if any(t in stops for t in emitted):
            return


def _stepwise_inference(body: Iterator[RoundEvent]) -> Iterator[RoundEvent]:
    """Run each step of `body` under torch.inference_mode, but yield outside it (the caller's mode is untouched)."""
    while True:
        with torch.inference_mode():
            try:
                event = next(body)
            except StopIteration:
                return
        yield event


def run(events: Iterator[RoundEvent]) -> DecodeResult:
    """Drain a generator: all emitted ids, the events and the wall time from first to last event."""
    t0 = time.perf_counter()
    evs = list(events)
    wall = time.perf_counter() - t0
    return DecodeResult([t for e in evs for t in e.emitted], evs, wall)


# ------------------------------------------------------------------------------------------- event summaries


def alpha_per_position(events: Sequence[RoundEvent], gamma: int) -> list[float]:
    """alpha_j = P(draft j accepted | drafts 1..j-1 accepted), j = 1..gamma; NaN where never reached."""
    reached = [0] * gamma
    accepted = [0] * gamma
    for e in events:
        for j in range(min(e.k, e.n_accepted + 1, gamma)):
            reached[j] += 1
            accepted[j] += j < e.n_accepted
    return [a / m if m else math.nan for a, m in zip(accepted, reached)]


def mean_accepted_length(events: Sequence[RoundEvent]) -> float:
    """Mean tokens emitted per target forward (accepted drafts + the correction or bonus)."""
    return sum(len(e.emitted) for e in events) / max(1, len(events))


def overall_alpha(events: Sequence[RoundEvent]) -> float:
    """Pooled acceptance: accepted drafts / drafted positions reached (NaN if none)."""
    reached = sum(min(e.k, e.n_accepted + 1) for e in events)
    acc = sum(e.n_accepted for e in events)
    return acc / reached if reached else math.nan
