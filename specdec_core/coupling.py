"""The best any verification of k i.i.d. drafts can accept: the subset bound of Hu et al. (ICLR 2025) beside
recursive rejection (SpecInfer; specdec_core.multidraft).

A verifier that keeps one of the drafts X_1..X_k ~ q (i.i.d.) or else resamples, and emits exactly p, is a coupling
of the draft set S = {X_1..X_k} with Y ~ p; it accepts when Y is in S. The best coupling is a maximum flow from the
sets to the tokens, and by max-flow / min-cut (Hall's theorem for measures)

    alpha*_k = max over couplings of P(Y in S) = min over token sets B of [ p(not B) + P(S meets B) ]
             = min_B [ 2 - p(B) - (1 - q(B))^k ]

since S misses B exactly when every draft does. k = 1 gives 1 - TV(p, q), the single-draft rule, which is optimal;
for k >= 2 recursive rejection accepts less than alpha*_k in general: exact is not the same as optimal.

The minimum is reached on a prefix of the tokens sorted by p/q, largest first: with h(s) = (1 - s)^k convex, a set
that no single token's addition or removal improves holds every token with p/q above -h'(q(B)) and none below it
(a tie group enters whole or not at all, as the objective is convex in its mass). So V + 1 prefixes are searched,
O(V log V), which is fast for a real vocabulary (SmolLM2's 49,152 tokens).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from specdec_core.multidraft import check_k
from specdec_core.rejection import check_pair


def ratio_order(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Token indices by p/q, largest first (q = 0 with p > 0 first of all; p = q = 0 last)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(q > 0, p / np.where(q > 0, q, 1.0), np.where(p > 0, np.inf, -np.inf))
    return np.argsort(-ratio, kind="stable")


def optimal_acceptance(p: ArrayLike, q: ArrayLike, k: int) -> float:
    """alpha*_k = min_B [2 - p(B) - (1 - q(B))^k] over prefixes B of tokens sorted by p/q: the most any exact
    verifier of k i.i.d. drafts from q accepts."""
    pp, qq = check_pair(p, q)
    kk = check_k(k)
    order = ratio_order(pp, qq)
    pb = np.concatenate([[0.0], np.cumsum(pp[order])])
    qb = np.clip(np.concatenate([[0.0], np.cumsum(qq[order])]), 0.0, 1.0)
    return float(np.clip(np.min(2.0 - pb - (1.0 - qb) ** kk), 0.0, 1.0))
