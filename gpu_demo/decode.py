"""Autoregressive and speculative generation, yielding one :class:`RoundEvent` per round.

State convention (both generators): the *committed* sequence is prompt + emitted tokens. The target's
KV cache holds every committed token except the last, which is *pending* and is fed first in the next
forward. A speculative round (:func:`speculative_round`, the whole algorithm on one screen):

1. the drafter proposes k <= gamma tokens x_1..x_k with the laws q_1..q_k it sampled them from;
2. the target runs one forward over [pending, x_1..x_k] -> laws p_1..p_{k+1};
3. the exact rule (or the greedy rule at temperature 0) accepts a prefix x_1..x_n and draws the next
   token y from the residual (n < k, a *correction*) or from p_{k+1} (n = k, a *bonus*);
4. the target's cache rolls back to committed-minus-one: pending + the n accepted drafts (y is pending);
5. the drafter is told (n, y) and rolls back too; when every draft was accepted it has not yet seen x_k,
   and it feeds [x_k, y] in its next step (the catch-up);
6. the round is reported as one event (drafts, q(x), p(x), the verdict, the emitted tokens and their kinds,
   the draft and verify times), which the page and the benchmarks both consume: nothing is timed twice.

With a :class:`gpu_demo.constraints.Constraint`, the draft samples from its masked law while the parser
advances one drafted token at a time (1), each verified position's target logits are masked with the mask of
its own prefix (2), and the parser rolls back to the accepted prefix and consumes y (after 5). :class:`Forget`
switches off a rollback, as a demonstration of the bug.

Times are wall-clock intervals from :class:`gpu_demo.device.Stopwatch`, synchronised on CUDA.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field

import torch

from gpu_demo.constraints import Constraint
from gpu_demo.device import Stopwatch
from gpu_demo.drafters import Drafter, prefill_all_but_last
from gpu_demo.kinds import EMITTED_KINDS
from gpu_demo.models.base import DecoderLM
from gpu_demo.sampler import (
    SamplingConfig,
    Verdict,
    check_sampling,
    exact_rule,
    greedy_rule,
    logits_to_probs,
    next_token,
)

MAX_GAMMA = 16
KINDS = EMITTED_KINDS  # accepted, correction, bonus, target ("target": a plain autoregressive token)


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
    # constrained runs: parser position (tokens consumed) before the round, after drafting, after the rollback
    parser_before: int = -1
    parser_drafted: int = -1
    parser_after: int = -1
    mask_sizes: list[int] = field(default_factory=list)  # allowed tokens at each of the k+1 verified positions
    mask_s: float = 0.0  # time spent computing masks this round (part of draft_s and verify_s)
    kv_target: int = -1  # target KV-cache length after the round
    kv_draft: int = -1  # draft cache length after the round (-1: the drafter keeps none)

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


def check_draft_length(gamma: object) -> int:
    """The engine's draft length: an integer in [1, MAX_GAMMA] (the algebra's check_gamma allows any gamma >= 0)."""
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


def check_pair_sampling(
    target: DecoderLM, drafter: Drafter, sampling: SamplingConfig, draft_sampling: SamplingConfig | None
) -> SamplingConfig:
    """Check both sampling settings and the shared vocabulary; returns the draft's settings (greedy if the target's).

    draft_sampling None means the target's; a greedy target makes the draft greedy too (the greedy rule).
    """
    check_sampling(sampling, target.vocab_size, "target")
    dsamp = sampling if draft_sampling is None else check_sampling(draft_sampling, target.vocab_size, "draft")
    if drafter.vocab_size != target.vocab_size:
        raise ValueError(f"draft vocabulary ({drafter.vocab_size}) differs from the target's ({target.vocab_size})")
    return SamplingConfig(temperature=0.0) if sampling.greedy else dsamp


def make_generator(seed: int | None, device: torch.device) -> torch.Generator:
    """A torch.Generator on `device`, seeded (a random seed when None)."""
    gen = torch.Generator(device=device)
    if seed is None:
        gen.seed()
    else:
        gen.manual_seed(int(seed))
    return gen


# ---------------------------------------------------------------------------------------------- the round


@dataclass(frozen=True)
class Forget:
    """Demonstrations of bugs (off by default): skip the parser's rollback, or the target's KV-cache rollback."""

    parser: bool = False  # the parser keeps the rejected drafts, then is asked to take y after them
    kv_cache: bool = False  # the target's cache keeps the rejected drafts' keys and values


NO_BUGS = Forget()


@dataclass
class Round:
    """What one speculative round did: the draft, the target's laws, the verdict, and its two timings."""

    drafted: torch.Tensor  # (k,) the proposed tokens x_1..x_k
    q: torch.Tensor  # (k, V) the laws they were drawn from
    verdict: Verdict  # n accepted, the next token y, and p (k+1, V)
    draft_s: float  # drafting: the drafter's forwards and sampling
    verify_s: float  # one target forward + the rule + the target's rollback
    parser: tuple[int, int, int] = (-1, -1, -1)  # parser position before, after drafting, after the rollback
    masks: torch.Tensor | None = None  # (k+1, V) the allowed sets the laws were restricted to (constrained runs)

    @property
    def emitted(self) -> list[int]:
        """The committed tokens: x_1..x_n, then y."""
        return self.drafted[: self.verdict.n_accepted].tolist() + [self.verdict.next_token]

    @property
    def kinds(self) -> list[str]:
        """Accepted drafts, then y: a correction (a draft was rejected), a bonus (all k kept) or, at k = 0, target."""
        n, k = self.verdict.n_accepted, self.drafted.numel()
        return ["accepted"] * n + ["correction" if n < k else "bonus" if k else "target"]


def speculative_round(
    target: DecoderLM, drafter: Drafter, committed: torch.Tensor, pending: torch.Tensor, k_max: int,
    sampling: SamplingConfig, draft_sampling: SamplingConfig, generator: torch.Generator,
    constraint: Constraint | None = None, forget: Forget = NO_BUGS,
) -> Round:
    """Draft k <= k_max from q, score [pending, x_1..x_k] in one target pass, accept by the rule, roll back."""
    watch = Stopwatch(target.device)
    pos0 = constraint.position if constraint is not None else -1
    extra = {} if constraint is None else {"constraint": constraint}  # the drafter masks and advances the parser
    draft = drafter.propose(committed, k_max, draft_sampling, generator, **extra)  # 1. x_i ~ q_i
    x, q = draft.tokens.to(target.device), draft.q.to(target.device)  # (k,), (k, V)
    if x.numel() > k_max:
        raise RuntimeError(f"drafter {drafter.name!r} proposed {x.numel()} tokens; at most {k_max} were asked")
    draft_s = watch.lap()
    base = target.cache_len
    logits = target.forward(torch.cat([pending, x]).view(1, -1))[0]  # 2. (k+1, V) in one pass
    masks = None
    if constraint is not None:  # 2b. position i's law restricted to what its own prefix x_<i allows
        masks = constraint.masks(pos0)  # (k+1, V): the draft's masks, then the bonus position's
        logits = constraint.restrict(logits, masks)
    rule = greedy_rule if sampling.greedy else exact_rule
    verdict = rule(logits, q, x, sampling, generator)  # 3. keep x_1..x_n, draw y
    if not forget.kv_cache:
        target.rollback(base + 1 + verdict.n_accepted)  # 4. pending + accepted stay; y becomes pending
    verify_s = watch.lap()
    drafter.commit(verdict.n_accepted, verdict.next_token)  # 5. the drafter rolls back (or catches up)
    parser = (-1, -1, -1)
    if constraint is not None:  # 6. the parser rolls back to the accepted prefix, then takes y
        drafted_pos = constraint.position
        if not forget.parser:
            constraint.rollback(drafted_pos - pos0 - verdict.n_accepted)
        constraint.consume([verdict.next_token])
        parser = (pos0, drafted_pos, constraint.position)
    return Round(x, q, verdict, draft_s, verify_s, parser, masks)


# ------------------------------------------------------------------------------------------------- helpers


def top_n(probs: torch.Tensor, n: int) -> list[list[tuple[int, float]]]:
    """Top-n (id, prob) per row of probs (R, V); [] when n == 0 or R == 0."""
    if n <= 0 or probs.shape[0] == 0:
        return []
    vals, ids = torch.topk(probs, min(n, probs.shape[-1]), dim=-1)
    return [list(zip(i, v)) for i, v in zip(ids.tolist(), vals.tolist())]


def prefill(target: DecoderLM, drafter: Drafter | None, ids: torch.Tensor) -> tuple[torch.Tensor, float]:
    """Reset the target (and the drafter) and feed all prompt tokens but the last; returns (pending (1,), s)."""
    watch = Stopwatch(target.device)
    pending = prefill_all_but_last(target, ids)
    if drafter is not None:
        drafter.begin(ids)
    return pending, watch.lap()


def cut_at_stop(emitted: list[int], kinds: list[str], stops: set[int]) -> tuple[list[int], list[str], bool]:
    """Emitted tokens up to and including the first stop token; True when one was met."""
    for j, tok in enumerate(emitted):
        if tok in stops:
            return emitted[: j + 1], kinds[: j + 1], True
    return emitted, kinds, False


# --------------------------------------------------------------------------------------------- generators


def autoregressive(
    target: DecoderLM,
    prompt_ids: Sequence[int] | torch.Tensor,
    max_new_tokens: int,
    sampling: SamplingConfig = SamplingConfig(),
    seed: int | None = 0,
    stop_tokens: Sequence[int] = (),
    topk: int = 5,
    constraint: Constraint | None = None,
) -> Iterator[RoundEvent]:
    """Plain decoding: one target forward per token, x_t ~ p(. | x_<t) (argmax if greedy). One event per token.

    With a constraint, p is the law of the masked logits and the constraint's end token also stops.
    Arguments are validated when called (ValueError); the work runs in inference mode on each next().
    """
    check_sampling(sampling, target.vocab_size, "target")
    ids = check_prompt_and_length(prompt_ids, max_new_tokens, target.max_seq_len).to(target.device)
    stops = _stops_and_reset(stop_tokens, constraint, target.vocab_size)
    body = _autoregressive_body(target, ids, max_new_tokens, sampling, seed, stops, topk, constraint)
    return stepwise_inference(body)


def _stops_and_reset(stop_tokens: Sequence[int], constraint: Constraint | None, vocab_size: int) -> set[int]:
    """The stop set (plus the constraint's end token); resets the constraint to its prefix."""
    if constraint is None:
        return set(stop_tokens)
    if constraint.vocab_size != vocab_size:
        raise ValueError(
            f"the constraint's vocabulary ({constraint.vocab_size}) differs from the model's ({vocab_size})")
    constraint.reset()
    return set(stop_tokens) | {constraint.end_token}


def _autoregressive_body(
    target: DecoderLM, ids: torch.Tensor, max_new_tokens: int, sampling: SamplingConfig, seed: int | None,
    stops: set[int], topk: int, constraint: Constraint | None = None,
) -> Iterator[RoundEvent]:
    """The autoregressive loop (arguments already validated)."""
    gen = make_generator(seed, target.device)
    pending, prefill_s = prefill(target, None, ids)
    for r in range(max_new_tokens):
        watch = Stopwatch(target.device)
        logits = target.forward(pending.view(1, 1))[0, -1]  # (V,)
        pos0, mask_s, allowed = -1, 0.0, None
        if constraint is not None:
            pos0, mask_s, allowed = constraint.position, constraint.mask_s, constraint.mask().view(1, -1)  # (1, V)
            logits = constraint.restrict(logits, allowed[0])  # -inf outside the allowed set
        pending, p = next_token(logits, sampling, gen)  # (1,), (V,)
        y = int(pending)
        if constraint is not None:
            constraint.consume([y])
        verify_s = watch.lap()
        shown = logits_to_probs(logits, sampling) if sampling.greedy else p  # greedy: show the T = 1 softmax
        yield RoundEvent(
            round=r, drafted=[], q_x=[], p_x=[], uniforms=[], accept_mask=[], n_accepted=0,
            emitted=[y], kinds=["target"], draft_s=0.0, verify_s=verify_s,
            prefill_s=prefill_s if r == 0 else 0.0, p_top=top_n(shown.view(1, -1), topk), q_top=[],
            gamma=0, greedy=sampling.greedy, kv_target=target.cache_len,
            **(_parser_fields(constraint, (pos0, pos0, constraint.position), allowed, mask_s) if constraint else {}),
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
    constraint: Constraint | None = None,
    forget: Forget = NO_BUGS,
) -> Iterator[RoundEvent]:
    """Speculative decoding: per round, draft k <= gamma tokens, verify them in one target forward.

    With a constraint, both laws are the masked ones (see the module docstring); ``forget`` demonstrates bugs.

    With ``draft_sampling`` None the draft uses the target's settings. Different settings remain exact
    (q is the law actually sampled from: one-hot for a greedy draft) but accept less. Greedy is decided
    by the target's temperature: at 0 both use argmax and the output equals greedy decoding.
    """
    check_draft_length(gamma)
    dsamp = check_pair_sampling(target, drafter, sampling, draft_sampling)
    context = min(target.max_seq_len, drafter.max_seq_len)
    ids = check_prompt_and_length(prompt_ids, max_new_tokens, context).to(target.device)
    stops = _stops_and_reset(stop_tokens, constraint, target.vocab_size)
    return stepwise_inference(_speculative_body(
        target, drafter, ids, max_new_tokens, gamma, sampling, dsamp, seed, stops, topk, constraint, forget))


def _speculative_body(
    target: DecoderLM, drafter: Drafter, ids: torch.Tensor, max_new_tokens: int, gamma: int,
    sampling: SamplingConfig, dsamp: SamplingConfig, seed: int | None, stops: set[int], topk: int,
    constraint: Constraint | None = None, forget: Forget = NO_BUGS,
) -> Iterator[RoundEvent]:
    """The speculative loop (arguments already validated): rounds until max_new_tokens or a stop token."""
    dev = target.device
    gen = make_generator(seed, dev)
    committed = torch.empty(ids.numel() + max_new_tokens, dtype=torch.long, device=dev)  # preallocated
    committed[: ids.numel()] = ids
    n_committed, produced, r = ids.numel(), 0, 0
    pending, prefill_s = prefill(target, drafter, ids)
    while produced < max_new_tokens:
        k_max = min(gamma, max_new_tokens - produced - 1)  # never draft past the requested length
        mask_s = constraint.mask_s if constraint is not None else 0.0
        rd = speculative_round(target, drafter, committed[:n_committed], pending, k_max, sampling, dsamp, gen,
                               constraint, forget)
        verdict = rd.verdict
        emitted, kinds, stopped = cut_at_stop(rd.emitted, rd.kinds, stops)
        pending = torch.tensor([verdict.next_token], dtype=torch.long, device=dev)
        committed[n_committed : n_committed + len(emitted)] = torch.tensor(emitted, dtype=torch.long, device=dev)
        n_committed += len(emitted)
        produced += len(emitted)
        yield RoundEvent(
            round=r, drafted=rd.drafted.tolist(), q_x=verdict.q_x, p_x=verdict.p_x, uniforms=verdict.uniforms,
            accept_mask=verdict.accept_mask, n_accepted=verdict.n_accepted, emitted=emitted, kinds=kinds,
            draft_s=rd.draft_s, verify_s=rd.verify_s, prefill_s=prefill_s if r == 0 else 0.0,
            p_top=top_n(verdict.p, topk), q_top=top_n(rd.q, topk), gamma=gamma, greedy=sampling.greedy,
            kv_target=target.cache_len, kv_draft=getattr(getattr(drafter, "model", None), "cache_len", -1),
            **(_parser_fields(constraint, rd.parser, rd.masks, mask_s) if constraint else {}),
        )
        r += 1
        if stopped:
            return


def _parser_fields(
    constraint: Constraint, parser: tuple[int, int, int], masks: torch.Tensor | None, mask_s0: float
) -> dict:
    """RoundEvent fields of a constrained round: parser positions, allowed-set sizes, mask time."""
    sizes = masks.sum(-1).tolist() if masks is not None else []
    return {"parser_before": parser[0], "parser_drafted": parser[1], "parser_after": parser[2],
            "mask_sizes": sizes, "mask_s": constraint.mask_s - mask_s0}


def stepwise_inference(body: Iterator[RoundEvent]) -> Iterator[RoundEvent]:
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
