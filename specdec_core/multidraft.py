"""Multi-draft verification at one position: k candidates tried in turn by recursive rejection sampling.

SpecInfer (Miao et al. 2024): candidate i is kept with probability min(1, r(x_i) / q_i(x_i)), where r is
the target law left after the earlier rejections (r = p at first; each rejection replaces r by (r - q_i)+
normalised) and q_i is the law candidate i was drawn from: q itself when the k candidates are i.i.d.,
q with the earlier candidates removed and renormalised when they are drawn without replacement. If all k
are rejected the token is drawn from the last r. Each step is the single-draft rule with target r and
proposal q_i, so it emits r exactly; by induction the emitted law is p, for either way of drawing.

Two tempting variants are kept here as negative controls, each with the law it really produces:
``no_update`` tests every candidate against p itself, and ``wor_ratio_q`` draws without replacement but
divides by (and subtracts) the original q.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specdec_core.mistakes import RuleCheck
from specdec_core.rejection import _accept, _residual, _rng, check_draws, check_pair
from specdec_core.stats import chi_square_gof

IID = "iid"
WOR = "wor"
NO_UPDATE = "no_update"
WOR_RATIO_Q = "wor_ratio_q"
RULES = {
    IID: "k i.i.d. candidates, recursive rejection (exact)",
    WOR: "k candidates without replacement, recursive rejection (exact)",
    NO_UPDATE: "Mistake: test every candidate against p, no residual update",
    WOR_RATIO_Q: "Mistake: draw without replacement, divide by the original q",
}
EXACT_RULES = (IID, WOR)
K_MAX = 8
MAX_BRANCH_CELLS = 20_000_000     # batch x V^k cells the without-replacement enumeration may hold


def check_k(k: int) -> int:
    """k, the number of candidates at one position: an integer in [1, K_MAX]."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= K_MAX:
        raise ValueError(f"k (candidates per position) must be an integer in [1, {K_MAX}]; got {k!r}")
    return int(k)


def check_rule(rule: str) -> str:
    """rule one of RULES."""
    if rule not in RULES:
        raise ValueError(f"rule must be one of {', '.join(RULES)}; got {rule!r}")
    return rule


def _normalised(q_left: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """(q_left / its mass, rows with no mass left); an empty row stays 0 (no candidate can be drawn)."""
    mass = q_left.sum(axis=-1, keepdims=True)            # (..., 1)
    empty = mass <= 0.0
    return np.divide(q_left, mass, out=np.zeros_like(q_left), where=~empty), empty


def _law_iid(p: NDArray, q: NDArray, k: int, update: bool) -> tuple[NDArray, NDArray]:
    """Sum over steps i of P(reach i) min(r_i, q) + P(all rejected) r_k; r is held at p when not update."""
    law = np.zeros_like(p)                               # (..., V)
    ranks = np.zeros(p.shape[:-1] + (k,))                # (..., k) P(candidate i is the one kept)
    reach = np.ones(p.shape[:-1] + (1,))                 # (..., 1) P(first i - 1 all rejected)
    r = p
    for i in range(k):
        kept = q * _accept(r, q)                         # (..., V) = min(r, q)
        law += reach * kept
        ranks[..., i] = reach[..., 0] * kept.sum(axis=-1)
        reach = reach * np.clip(1.0 - kept.sum(axis=-1, keepdims=True), 0.0, 1.0)
        r = _residual(r, q) if update else r
    final = r if update else _residual(p, q)
    return law + reach * final, ranks


def _law_wor(r: NDArray, q_left: NDArray, q: NDArray, k: int, renormalise: bool) -> tuple[NDArray, NDArray]:
    """Enumerate the rejected candidate at each step: min(r, q_i) + sum_x P(x drawn, rejected) law(rest | x).

    Rows are (B, V). Only branches with P(x drawn, rejected) > 0 are followed: a token the pool no longer holds,
    or one the rule always keeps (q_i(x) <= r(x)), adds exactly 0 below it, so its subtree is skipped. The law is
    the same sum without its zero terms; the work falls from B V^k to the rejection paths that can happen."""
    q_i, empty = _normalised(q_left)                     # (B, V) law of this candidate
    q_ratio = q_i if renormalise else q                  # the law the verifier divides by
    acc = _accept(r, q_ratio)                            # (B, V)
    kept = q_i * acc                                     # (B, V)
    reject_x = q_i * (1.0 - acc)                         # (B, V) candidate is x and rejected
    r_next = _residual(r, q_ratio)                       # (B, V) the same whichever x was rejected
    law = kept + empty * r                               # no candidate left: emit r itself
    alpha = kept.sum(axis=-1, keepdims=True)             # (B, 1)
    if k == 1:
        return law + reject_x.sum(axis=-1, keepdims=True) * r_next, alpha
    row, x = np.nonzero(reject_x > 0.0)                  # (M,), (M,) the branches that can be reached
    q_rest = q_left[row].copy()                          # (M, V) x removed from the pool
    q_rest[np.arange(row.size), x] = 0.0
    sub_law, sub_ranks = _law_wor(r_next[row], q_rest, q[row], k - 1, renormalise)    # (M, V), (M, k-1)
    w = reject_x[row, x][:, None]                        # (M, 1)
    rest_law = np.zeros_like(r)                          # (B, V)
    rest_ranks = np.zeros((r.shape[0], k - 1))           # (B, k-1)
    np.add.at(rest_law, row, w * sub_law)
    np.add.at(rest_ranks, row, w * sub_ranks)
    return law + rest_law, np.concatenate([alpha, rest_ranks], axis=-1)


def multidraft_distribution(p: ArrayLike, q: ArrayLike, k: int, rule: str = IID) -> tuple[NDArray, NDArray]:
    """(emitted law, P(candidate i is the one kept) for i = 1..k); exact, batched over leading axes.
    The exact rules give law == p; sum of the second is the acceptance 1 - P(all k rejected)."""
    pa, qa = check_pair(p, q)
    k, rule = check_k(k), check_rule(rule)
    if rule in (IID, NO_UPDATE):
        return _law_iid(pa, qa, k, update=rule == IID)
    cells = pa[..., 0].size * pa.shape[-1] ** k
    if cells > MAX_BRANCH_CELLS:
        raise ValueError(f"without replacement the exact law enumerates V^(k-1) rejection paths: batch x V^k must "
                         f"be at most {MAX_BRANCH_CELLS:,}; got {cells:,} (use a smaller V or k, or chunk the batch)")
    v = pa.shape[-1]
    p2, q2 = pa.reshape(-1, v), np.broadcast_to(qa, pa.shape).reshape(-1, v)      # (B, V)
    law, ranks = _law_wor(p2, q2, q2, k, renormalise=rule == WOR)
    return law.reshape(pa.shape), ranks.reshape(pa.shape[:-1] + (k,))


def acceptance_by_k(p: ArrayLike, q: ArrayLike, k_max: int, rule: str = IID) -> NDArray[np.float64]:
    """P(some candidate kept) with k = 1..k_max candidates: the running sum of the per-rank probabilities."""
    return np.cumsum(multidraft_distribution(p, q, k_max, rule)[1], axis=-1)


def _candidates(q: NDArray, k: int, n: int, replace: bool, rng: np.random.Generator) -> NDArray[np.int64]:
    """(n, k) candidates from q: i.i.d., or without replacement by the Gumbel top-k trick (successive
    sampling); a slot past the support of q is -1 (no candidate)."""
    if replace:
        cdf = np.cumsum(q) / q.sum()
        return np.searchsorted(cdf, rng.random((n, k)), side="right").astype(np.int64)
    with np.errstate(divide="ignore"):
        keys = np.log(q)[None, :] + rng.gumbel(size=(n, q.size))       # (n, V)
    order = np.argsort(-keys, axis=1, kind="stable")[:, :k]            # (n, k)
    return np.where(q[order] > 0, order, -1)


def _draw_rows(laws: NDArray, u: NDArray) -> NDArray[np.int64]:
    """One inverse-CDF draw per row of laws (rows sum to 1 up to rounding); never a zero-mass token."""
    cdf = np.cumsum(laws, axis=1)
    return (cdf <= u[:, None] * cdf[:, -1:]).sum(axis=1).astype(np.int64)


def sample_multidraft(p: ArrayLike, q: ArrayLike, k: int, n: int, rule: str = IID,
                      seed: int | np.random.Generator | None = 0) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """n independent positions through the rule -> (tokens, rank of the kept candidate, 0 if all rejected)."""
    pa, qa = check_pair(p, q)
    k, rule, n = check_k(k), check_rule(rule), check_draws(n)
    if pa.ndim != 1:
        raise ValueError("the sampler draws for one (p, q) pair: pass 1-D laws")
    rng = _rng(seed)
    replace = rule in (IID, NO_UPDATE)
    cands = _candidates(qa, k, n, replace, rng)                        # (n, k)
    rows = np.arange(n)
    r = np.tile(pa, (n, 1))                                            # (n, V) target law left
    q_left = np.tile(qa, (n, 1))                                       # (n, V) pool not yet drawn
    tokens = np.full(n, -1, dtype=np.int64)
    rank = np.zeros(n, dtype=np.int64)
    for i in range(k):
        x = cands[:, i]
        live = (rank == 0) & (x >= 0)
        q_i = _normalised(q_left)[0] if rule == WOR else np.broadcast_to(qa, q_left.shape)
        x_safe = np.maximum(x, 0)
        a = _accept(r[rows, x_safe], q_i[rows, x_safe])                # (n,)
        keep = live & (rng.random(n) < a)
        tokens[keep], rank[keep] = x[keep], i + 1
        rej = live & ~keep
        if rule != NO_UPDATE:
            r[rej] = _residual(r[rej], q_i[rej])
        if not replace:
            q_left[rows[live], x[live]] = 0.0
    rest = rank == 0
    final = _residual(r[rest], np.broadcast_to(qa, r[rest].shape)) if rule == NO_UPDATE else r[rest]
    tokens[rest] = _draw_rows(final, rng.random(int(rest.sum())))
    return tokens, rank


def exhaustive_multidraft_check(p: NDArray, q: NDArray, k: int, rule: str, chunk: int = 1000) -> dict[str, float]:
    """max |emitted - p| and the mean acceptance with k candidates over a batch of pairs, computed in chunks
    (the without-replacement enumeration holds batch x V^k cells)."""
    worst, accept = 0.0, []
    for s in range(0, p.shape[0], chunk):
        law, ranks = multidraft_distribution(p[s:s + chunk], q[s:s + chunk], k, rule)
        worst = max(worst, float(np.abs(law - p[s:s + chunk]).max()))
        accept.append(ranks.sum(axis=-1))
    return {"pairs": float(p.shape[0]), "max_law_error": worst, "mean_acceptance": float(np.concatenate(accept).mean())}


def check_multidraft(p: ArrayLike, q: ArrayLike, k: int, rule: str, n: int, seed: int = 0) -> RuleCheck:
    """The rule's exact law against p, and n sampled positions tested against p by chi-square."""
    pa, qa = check_pair(p, q)
    law, ranks = multidraft_distribution(pa, qa, k, rule)
    tokens, rank = sample_multidraft(pa, qa, k, n, rule, seed)
    counts = np.bincount(tokens, minlength=pa.size)
    stat, dof, p_value = chi_square_gof(counts, pa)
    return RuleCheck(name=rule, label=RULES[rule], defined=True, law=law, max_error=float(np.abs(law - pa).max()),
                     tv_to_p=float(0.5 * np.abs(law - pa).sum()), empirical=counts / counts.sum(),
                     kept=float((rank > 0).mean()), kept_exact=float(ranks.sum()), stat=stat, dof=dof,
                     p_value=p_value)
