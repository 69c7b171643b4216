"""The best any verification of k i.i.d. drafts can accept: the optimal-transport bound (SpecTr) beside recursive
rejection (SpecInfer; specdec_core.multidraft).

A verifier that keeps one of the drafts X_1..X_k ~ q (i.i.d.) or else resamples, and emits exactly p, is a coupling
of the draft set S = {X_1..X_k} with Y ~ p; it accepts when Y is in S. The best coupling is a maximum flow from the
sets to the tokens, and by max-flow / min-cut (Hall's theorem for measures)

    alpha*_k = max over couplings of P(Y in S) = min over token sets B of [ p(not B) + P(S meets B) ]
             = min_B [ 2 - p(B) - (1 - q(B))^k ]

since S misses B exactly when every draft does. k = 1 gives 1 - TV(p, q), the single-draft rule, which is optimal;
for k >= 2 recursive rejection accepts less than alpha*_k in general: exact is not the same as optimal. The minimum
is found over all 2^V token sets, so V is capped (MAX_VOCAB).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from specdec_core.multidraft import check_k
from specdec_core.rejection import check_pair

MAX_VOCAB = 16  # 2^16 token sets: about 10 ms


def subset_masses(x: np.ndarray) -> np.ndarray:
    """(2^V,) masses x(B) of every token set B, B's bits indexing tokens (bit i set: token i in B)."""
    masses = np.zeros(1)
    for xi in x:                                   # doubling: sets without token i, then with it
        masses = np.concatenate([masses, masses + xi])
    return masses


def optimal_acceptance(p: ArrayLike, q: ArrayLike, k: int) -> float:
    """alpha*_k = min_B [2 - p(B) - (1 - q(B))^k]: the most any exact verifier of k i.i.d. drafts from q accepts."""
    pp, qq = check_pair(p, q)
    kk = check_k(k)
    if pp.size > MAX_VOCAB:
        raise ValueError(f"the optimal-transport bound searches every token set: vocabulary at most {MAX_VOCAB}; "
                         f"got {pp.size}")
    pb, qb = subset_masses(pp), np.clip(subset_masses(qq), 0.0, 1.0)
    return float(np.clip(np.min(2.0 - pb - (1.0 - qb) ** kk), 0.0, 1.0))
