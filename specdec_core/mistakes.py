"""The correct accept/resample rule and the tempting wrong ones, each with the law it really produces.

Every rule is the same machine: propose x ~ q_propose (the law the draft really sampled from), keep x
with probability accept(x), otherwise draw from residual. The mistakes differ only in which laws are
plugged in, so one exact formula (``rejection.rule_law``) and one sampler (``rejection.sample_rule``)
serve them all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specdec_core.rejection import _accept, _residual, check_pair, rule_law, sample_rule
from specdec_core.stats import chi_square_gof

CORRECT = "correct"
RESAMPLE_FROM_P = "resample_p"
RAW_LOGITS = "raw_logits"
WRONG_Q = "wrong_q"
NAIVE_NORMALISATION = "naive_norm"

# When each rule's law is p after all (tests/test_mistakes.py checks every clause against rule_law).
HARMLESS_WHEN = {
    CORRECT: "always: it is the exact rule.",
    RESAMPLE_FROM_P: "only when (p - q)+ = (1 - alpha) p: p == q (nothing is rejected), or disjoint supports "
                     "(nothing is accepted, and the residual is p itself).",
    RAW_LOGITS: "only when the request is temperature 1 with no top-k or top-p: the raw law is then p.",
    WRONG_Q: "only when the draft samples with the target's own settings (the recomputed q is then q), or when "
             "no draft is ever kept.",
    NAIVE_NORMALISATION: "whenever p != q; it breaks only when the residual is empty.",
}


@dataclass(frozen=True)
class Rule:
    """One accept/resample rule: propose from q_propose, keep w.p. accept, else draw from residual."""

    name: str
    label: str
    q_propose: NDArray[np.float64]   # (V,) law the draft really sampled from
    accept: NDArray[np.float64]      # (V,) keep probability per proposed token
    residual: NDArray[np.float64]    # (V,) law drawn on rejection; NaN if the rule divides 0 by 0

    def law(self) -> NDArray[np.float64]:
        """The exact law of the emitted token under this rule."""
        return rule_law(self.q_propose, self.accept, self.residual)

    def kept_rate(self) -> float:
        """The exact share of proposals kept, sum_x q_propose(x) accept(x) (alpha for the correct rule)."""
        return float(np.sum(self.q_propose * self.accept))

    def is_defined(self) -> bool:
        """False when the rule's residual is NaN (0/0), so its law is undefined."""
        return bool(np.all(np.isfinite(self.residual)))

    def sample(self, n: int, seed: int | np.random.Generator | None = 0):
        """n draws through this rule -> (tokens, kept)."""
        return sample_rule(self.q_propose, self.accept, self.residual, n, seed)


def correct_rule(p: ArrayLike, q: ArrayLike) -> Rule:
    """keep w.p. min(1, p/q), resample from (p - q)+ normalised: emits exactly p."""
    pa, qa = check_pair(p, q)
    return Rule(CORRECT, "Correct: min(1, p/q), resample from (p-q)+", qa, _accept(pa, qa), _residual(pa, qa))


def resample_from_p_rule(p: ArrayLike, q: ArrayLike) -> Rule:
    """Mistake: resample from p, not (p - q)+. Law min(p, q) + (1 - alpha) p: too much mass where q > p."""
    pa, qa = check_pair(p, q)
    return Rule(RESAMPLE_FROM_P, "Mistake: resample from p", qa, _accept(pa, qa), pa)


def raw_logits_rule(p_raw: ArrayLike, q: ArrayLike) -> Rule:
    """Mistake: verify against the raw target logits' softmax p_raw, not the requested law. Emits p_raw;
    keeps sum min(p_raw, q), which can exceed alpha (a wrong verifier can keep more drafts)."""
    pr, qa = check_pair(p_raw, q)
    return Rule(RAW_LOGITS, "Mistake: verify against raw target logits", qa, _accept(pr, qa), _residual(pr, qa))


def wrong_q_rule(p: ArrayLike, q_true: ArrayLike, q_claimed: ArrayLike) -> Rule:
    """Mistake: the draft samples from q_true (its own settings) but the verifier uses q_claimed (typically the
    draft logits under the target's settings) in the ratio and the residual.
    Law q_true min(1, p/q_claimed) + (1 - kept mass) (p - q_claimed)+ / ||.||; exact when q_claimed = q_true."""
    pa, qt = check_pair(p, q_true)
    _, qc = check_pair(p, q_claimed)
    # where q_claimed = 0 but the token was proposed, p/0 = inf keeps it (if p > 0)
    accept = np.where(qc > 0, _accept(pa, qc), (pa > 0).astype(np.float64))
    return Rule(WRONG_Q, "Mistake: q recomputed with the target's settings", qt, accept, _residual(pa, qc))


def naive_normalisation_rule(p: ArrayLike, q: ArrayLike) -> Rule:
    """Mistake: r = (p - q)+ / sum (p - q)+ with no guard: 0/0 = NaN when p == q (empty residual)."""
    pa, qa = check_pair(p, q)
    resid = np.maximum(pa - qa, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        naive = resid / resid.sum(axis=-1, keepdims=True)
    return Rule(NAIVE_NORMALISATION, "Mistake: naive normalisation of an empty residual", qa, _accept(pa, qa), naive)


def all_rules(p: ArrayLike, q: ArrayLike, p_raw: ArrayLike, q_claimed: ArrayLike) -> list[Rule]:
    """The correct rule and the four mistakes for one case: p requested, q sampled, p_raw the raw-logit
    target law, q_claimed the draft logits under the target's sampling settings (the wrong q)."""
    return [
        correct_rule(p, q),
        resample_from_p_rule(p, q),
        raw_logits_rule(p_raw, q),
        wrong_q_rule(p, q, q_claimed),
        naive_normalisation_rule(p, q),
    ]


@dataclass(frozen=True)
class RuleCheck:
    """A rule's exact law and a sampled chi-square test of its draws against the target law p."""

    name: str
    label: str
    defined: bool                    # False: the rule divides 0 by 0 and its law is undefined
    law: NDArray[np.float64]         # (V,) exact law of the emitted token (NaN if undefined)
    max_error: float                 # max_x |law(x) - p(x)| (NaN if undefined)
    tv_to_p: float                   # TV(law, p) (NaN if undefined)
    empirical: NDArray[np.float64]   # (V,) frequencies of the n draws
    kept: float                      # fraction of the n proposals kept (sampled)
    kept_exact: float                # sum_x q_propose(x) accept(x): the exact share kept
    stat: float                      # chi-square statistic of the draws against p
    dof: int
    p_value: float


def check_rule(rule: Rule, p: ArrayLike, n: int, seed: int = 0) -> RuleCheck:
    """Exact distance of the rule's law from p, and n sampled draws tested against p by chi-square."""
    pa = check_pair(p, rule.q_propose)[0]
    law = rule.law()
    with np.errstate(invalid="ignore"):
        max_error = float(np.abs(law - pa).max())
        tv = float(0.5 * np.abs(law - pa).sum())
    tokens, kept = rule.sample(n, seed)
    counts = np.bincount(tokens, minlength=pa.size)
    stat, dof, p_value = chi_square_gof(counts, pa)
    return RuleCheck(rule.name, rule.label, rule.is_defined(), law, max_error, tv,
                     counts / counts.sum(), float(kept.mean()), rule.kept_rate(), stat, dof, p_value)
