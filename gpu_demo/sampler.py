"""Processed laws and the acceptance rules of speculative decoding, in torch.

``p`` is always the target's law and ``q`` the draft's, both *processed* (temperature, top-k, top-p)
and normalised in float32 over the same vocabulary; ``q`` must be the law the draft really sampled
from. One verification step serves the chain and the tree: a candidate x drawn from q is kept against the
law r still owed with probability min(1, r(x)/q(x)) (:func:`accepts`; q(x) = 0 rejects), and a rejection
leaves :func:`residual`, (r - q)+ normalised, or r itself when that is numerically empty (the one
fallback). A node's candidates are tried in turn (:func:`try_in_turn`): a chain position has one (r = p),
a tree node its children. The chain's exact rule draws the correction from the residual at the first miss
and a bonus token from p at position gamma + 1 when every draft is accepted. The greedy rule
(temperature 0) accepts a draft iff it equals the target's argmax.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from specdec_core.sampling import TOP_K_OFF, TOP_P_OFF, TOP_P_TOL

MAX_TEMPERATURE = 100.0


@dataclass(frozen=True)
class SamplingConfig:
    """How logits become a law: temperature (0 = greedy), top-k (0 = off), top-p (1 = off).

    The semantics (ties kept, the top-p tolerance, the off values) are ``specdec_core.sampling``'s.
    """

    temperature: float = 1.0
    top_k: int = TOP_K_OFF
    top_p: float = TOP_P_OFF

    @property
    def greedy(self) -> bool:
        """Temperature 0 means argmax decoding."""
        return self.temperature == 0.0

    def describe(self) -> str:
        """Short human-readable form, e.g. 'T=1, top-k 20'."""
        if self.greedy:
            return "greedy"
        parts = [f"T={self.temperature:g}"]
        if self.top_k:
            parts.append(f"top-k {self.top_k}")
        if self.top_p < TOP_P_OFF:
            parts.append(f"top-p {self.top_p:g}")
        return ", ".join(parts)


def check_sampling(cfg: SamplingConfig, vocab_size: int, name: str = "sampling") -> SamplingConfig:
    """Validate a SamplingConfig; raises ValueError naming the allowed range."""
    t = cfg.temperature
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or not 0 <= t <= MAX_TEMPERATURE:
        raise ValueError(f"{name} temperature must be in [0, {MAX_TEMPERATURE:g}] (0 = greedy); got {t!r}")
    k = cfg.top_k
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= vocab_size:
        raise ValueError(f"{name} top_k must be an integer in [0, {vocab_size}] (0 = off); got {k!r}")
    tp = cfg.top_p
    if isinstance(tp, bool) or not isinstance(tp, (int, float)) or not math.isfinite(tp) or not 0 < tp <= 1:
        raise ValueError(f"{name} top_p must be in (0, 1] (1 = off); got {tp!r}")
    return cfg


def logits_to_probs(logits: torch.Tensor, cfg: SamplingConfig) -> torch.Tensor:
    """softmax(logits / T) restricted to the top-k and then the top-p nucleus, renormalised; float32 (..., V).

    The law of ``specdec_core.sampling.sampling_distribution`` (ties kept at the k-th place and at the
    nucleus' edge, the same TOP_P_TOL). Greedy (T = 0) gives the plain softmax (T = 1) for display; the
    greedy rule uses argmax of logits.
    """
    x = logits.float()
    if cfg.greedy:
        return torch.softmax(x, dim=-1)
    if cfg.temperature != 1.0:
        x = x / cfg.temperature
    if cfg.top_k != TOP_K_OFF and cfg.top_k < x.shape[-1]:
        kth = torch.topk(x, cfg.top_k, dim=-1).values[..., -1:]  # (..., 1) the k-th largest logit
        x = x.masked_fill(x < kth, float("-inf"))  # every token tied with the k-th stays
    probs = torch.softmax(x, dim=-1)  # (..., V)
    if cfg.top_p < TOP_P_OFF:
        sorted_p = torch.sort(probs, dim=-1, descending=True).values  # (..., V)
        mass = sorted_p[..., :-1].double().cumsum(-1)  # (..., V-1) mass of the first i + 1, in float64
        n_keep = 1 + (mass < cfg.top_p - TOP_P_TOL).sum(-1, keepdim=True)  # (..., 1) in 1..V
        threshold = sorted_p.gather(-1, n_keep - 1)  # (..., 1) the crossing token's probability
        probs = probs.masked_fill(probs < threshold, 0.0)  # its ties stay too
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


def sample(probs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
    """One draw per row from probs (..., V) -> LongTensor (...): argmax_x probs(x) / E_x with E_x ~ Exp(1).

    The exponential race: P(argmax = x) = probs(x) / sum(probs), so rows need not be normalised. With
    E = -log(u) and u ~ U(0, 1) (a draw of exactly 0 is lifted to the smallest normal float), E is finite
    and positive: a zero-probability entry scores exactly 0 and cannot beat any positive entry. Five
    tensor ops and no host sync: about 10 us cheaper per draw than torch.multinomial on a CPU, which
    matters once per drafted token.
    """
    u = torch.rand(probs.shape, generator=generator, device=probs.device, dtype=torch.float32)  # (..., V)
    u.clamp_min_(torch.finfo(torch.float32).tiny)
    return (probs.float() / u.log()).argmin(-1)  # p / log(u) = -p / E: the most negative wins


def next_token(
    logits: torch.Tensor, sampling: SamplingConfig, generator: torch.Generator | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """x ~ law, where law = processed softmax (one-hot at the argmax when greedy): logits (V,) -> ((1,), (V,)).

    The returned law is the one the token was drawn from, so a greedy draft reports a one-hot q and
    the exact rule stays exact even when the target samples.
    """
    if sampling.greedy:
        x = logits.argmax(-1, keepdim=True)  # (1,)
        law = torch.zeros(logits.shape[-1], dtype=torch.float32, device=logits.device).index_fill_(0, x, 1.0)
        return x, law
    law = logits_to_probs(logits, sampling)  # (V,)
    return sample(law.view(1, -1), generator), law


@dataclass
class Verdict:
    """Outcome of verifying k drafted tokens: n_accepted in 0..k and the next token (correction or bonus)."""

    n_accepted: int
    next_token: int
    p: torch.Tensor  # (k+1, V) the target laws the rule used (the T = 1 softmax under greedy, for display)
    p_x: list[float]  # p(x_i) for each drafted token
    q_x: list[float]  # q(x_i)
    uniforms: list[float]  # u_i (empty under the greedy rule)
    accept_mask: list[bool]  # u_i < p(x_i)/q(x_i) (or x_i == argmax under greedy), for every position


def first_miss(mask: list[bool]) -> int:
    """Index of the first False in mask (len(mask) when all are True): the number of accepted drafts."""
    return next((i for i, a in enumerate(mask) if not a), len(mask))


def accepted_count(accept: torch.Tensor) -> torch.Tensor:
    """The index of the first False in accept (k,), k when all are True, as a () tensor on accept's device.

    first_miss's count without a host sync: cumprod keeps 1 until the first rejection."""
    return accept.long().cumprod(0).sum()


def accepts(r_x: torch.Tensor, q_x: torch.Tensor, u: torch.Tensor | float) -> torch.Tensor:
    """u < r(x) / q(x) without dividing, elementwise; q(x) = 0 rejects (x cannot have been drawn from q)."""
    return (u * q_x < r_x) & (q_x > 0)


def residual(r: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """(r - q)+ / ||(r - q)+||_1 over the last axis; r itself where that is empty (r == q numerically).

    The engine's one fallback: an empty residual means the rejection had probability 0, and r is the law
    still owed. No host sync.
    """
    res = (r - q).clamp_min(0.0)  # (..., V)
    mass = res.sum(-1, keepdim=True)  # (..., 1)
    return torch.where(mass > 0, res / mass.clamp_min(torch.finfo(res.dtype).tiny), r)


def try_in_turn(r: torch.Tensor, x: list[int], q: torch.Tensor, u: list[float]) -> tuple[int, torch.Tensor]:
    """Recursive rejection at one node: keep x_i w.p. min(1, r(x_i) / q_i(x_i)), else r <- residual(r, q_i).

    r: (V,) the target law at the node; x, u: the m candidates in order and one uniform each; q: (m, V) the
    laws they were drawn from. -> (index of the kept candidate, r) or (-1, the law to draw the correction from).
    """
    for i, (xi, ui) in enumerate(zip(x, u)):
        if bool(accepts(r[xi], q[i, xi], ui)):
            return i, r
        r = residual(r, q[i])
    return -1, r


def exact_rule(
    logits: torch.Tensor, q: torch.Tensor, drafted: torch.Tensor, sampling: SamplingConfig,
    generator: torch.Generator | None,
) -> Verdict:
    """Speculative sampling: accept x_i w.p. min(1, p/q) in order; on the first rejection draw from (p - q)+.

    logits: (k+1, V) target logits at the k drafted positions and the bonus position; q: (k, V) the laws the
    drafts were drawn from; drafted: (k,). p = the processed target law. A chain is a tree with one candidate
    per node, so each position is :func:`try_in_turn` with m = 1 and r = p_i: the k tests are independent and run
    at once (:func:`accepts`), and the correction is :func:`residual` (p_n, q_n). k = 0 is a plain draw from p[0].
    Everything runs on the device; the host reads the verdict and the drawn token in one transfer per round.
    """
    p = logits_to_probs(logits, sampling)  # (k+1, V)
    k = drafted.shape[0]
    idx = torch.arange(k, device=p.device)
    p_x, q_x = p[idx, drafted], q[idx, drafted]  # (k,), (k,)
    u = torch.rand(k, generator=generator, device=p.device)  # (k,)
    accept = accepts(p_x, q_x, u)  # (k,)
    n = accepted_count(accept)  # () on the device
    q_pad = torch.cat([q.to(p.dtype), p.new_zeros(1, p.shape[-1])])  # (k+1, V): row k is never a draft's law
    at_n = n.view(1)  # index_select, not p[n]: a 0-d index would be read on the host
    law = torch.where(n < k, residual(p.index_select(0, at_n)[0], q_pad.index_select(0, at_n)[0]), p[k])  # (V,)
    y = sample(law, generator)  # () on the device
    flat = torch.cat([p_x, q_x, u, accept.float(), n.float().view(1), y.float().view(1)]).tolist()  # one sync
    mask = [a > 0.5 for a in flat[3 * k : 4 * k]]
    return Verdict(int(flat[-2]), int(flat[-1]), p, flat[:k], flat[k : 2 * k], flat[2 * k : 3 * k], mask)


def greedy_rule(
    logits: torch.Tensor, q: torch.Tensor, drafted: torch.Tensor, sampling: SamplingConfig,
    generator: torch.Generator | None,
) -> Verdict:
    """Greedy verification: accept the longest prefix with x_i == argmax logits_i; next = argmax at the first miss.

    Same arguments as :func:`exact_rule` (sampling and generator are unused: nothing is random). The argmax
    is taken on the logits, as plain greedy decoding does; p (T = 1 softmax) and q are only reported.
    """
    k = drafted.shape[0]
    p = torch.softmax(logits.float(), -1)  # (k+1, V) for display
    best = logits.argmax(-1)  # (k+1,)
    idx = torch.arange(k, device=p.device)
    flat = torch.cat([best.float(), p[idx, drafted], q[idx, drafted], (best[:k] == drafted).float()]).tolist()
    best_h = flat[: k + 1]  # argmax at each of the k+1 positions
    p_h = flat[k + 1 : 2 * k + 1]  # p(x_i)
    q_h = flat[2 * k + 1 : 3 * k + 1]  # q(x_i)
    mask = [a > 0.5 for a in flat[3 * k + 1 :]]  # x_i == argmax_i
    n = first_miss(mask)
    return Verdict(n, int(best_h[n]), p, p_h, q_h, [], mask)
