"""Constrained speculative decoding keeps the constrained target law, checked by chi-square on a Markov pair.

The pair is test_gpu_exactness's MarkovLM (logits = table[previous token]) over V = 6 symbols, a..e plus the
end token (the newline of a CharTokenizer "abcde\\n"). The constraint is the regex ``(a|b[ce]|c[a-d]d|d[be]|e)+``:
groups of one to three letters, so the allowed set at every position depends on the drafted prefix (where
the current group started and with which letter), and the end token is allowed after a whole group.

The requested law is P(x_1..x_3) = prod_i softmax(table[x_{i-1}] restricted to A(x_<i)); after the end token
the text is over (the cell pads with it). The reference builds A(x_<i) with Python's ``re`` alone
(viability by brute-force completion), independently of llguidance. N = 2000 seeded runs per setting; the
negative controls (forgetting the parser rollback; masking only the draft) are rejected at p < 1e-3 with
the same N, so the test has the power to see departures of that size.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest
from test_gpu_exactness import MarkovLM

from gpu_demo import constraints
from gpu_demo.decode import Forget, speculative
from gpu_demo.drafters import ModelDrafter
from gpu_demo.models.char import CharTokenizer
from gpu_demo.sampler import SamplingConfig
from specdec_core.stats import chi_square_gof

pytestmark = pytest.mark.usefixtures("one_torch_thread")

CHARS = "abcde\n"
V = len(CHARS)
END = CHARS.index("\n")
PATTERN = r"(a|b[ce]|c[a-d]d|d[be]|e)+"
PROMPT = [2]
N_RUNS = 2000
P_REJECT = 1e-3
N_TOK = 3
ERROR_CELL = V**N_TOK  # runs the parser stopped with an error: probability 0 under the law


def viable(text: str) -> bool:
    """Some completion of text is in the language (groups have <= 3 letters: completions of <= 3 suffice)."""
    return any(re.fullmatch(PATTERN, text + "".join(t)) for n in range(4) for t in itertools.product("abcde", repeat=n))


def allowed_reference(prefix: str) -> np.ndarray:
    """A(prefix) from Python's re: the letters c with prefix + c viable, and the end token iff prefix matches."""
    out = np.array([viable(prefix + ch) for ch in CHARS[:END]] + [False])
    out[END] = re.fullmatch(PATTERN, prefix) is not None
    return out


def _tables() -> tuple[np.ndarray, np.ndarray]:
    """Target and draft logit tables (the draft clearly different: acceptance well inside (0, 1))."""
    rng = np.random.default_rng(11)
    target = rng.normal(0.0, 1.3, size=(V, V))
    draft = target + rng.normal(0.0, 1.2, size=(V, V))
    return target, draft


def constrained_joint(table: np.ndarray, temperature: float = 1.0) -> np.ndarray:
    """Exact P over V^3 cells (+ the error cell, 0) of the first three tokens; the end token pads the cell."""
    joint = np.zeros(V**N_TOK + 1)
    for cell in itertools.product(range(V), repeat=N_TOK):
        prob, prev, text = 1.0, PROMPT[0], ""
        for j, x in enumerate(cell):
            if prob == 0.0:  # an earlier token was not allowed
                break
            if j and cell[j - 1] == END:  # the text is over: the cell pads with the end token
                prob *= float(x == END)
                continue
            logits = np.where(allowed_reference(text), table[prev] / temperature, -np.inf)
            law = np.exp(logits - logits.max())
            prob *= law[x] / law.sum()
            prev, text = x, text + CHARS[x]
        joint[cell[0] * V * V + cell[1] * V + cell[2]] += prob
    return joint


def _constraint() -> constraints.Constraint:
    return constraints.regex(PATTERN, CharTokenizer(CHARS))


def sample_constrained(
    drafter_table: np.ndarray, target_table: np.ndarray, gamma: int, cfg: SamplingConfig,
    forget: Forget = Forget(), runs: int = N_RUNS,
) -> np.ndarray:
    """Counts over the cells of the first three emitted tokens of `runs` seeded constrained speculative runs."""
    target, drafter = MarkovLM(target_table), ModelDrafter(MarkovLM(drafter_table))
    constraint = _constraint()
    counts = np.zeros(V**N_TOK + 1, dtype=np.int64)
    for seed in range(runs):
        try:
            events = speculative(target, drafter, PROMPT, N_TOK, gamma=gamma, sampling=cfg, seed=seed, topk=0,
                                 constraint=constraint, forget=forget)
            toks = [t for e in events for t in e.emitted]
        except constraints.ConstraintError:
            counts[ERROR_CELL] += 1
            continue
        toks = (toks + [END] * N_TOK)[:N_TOK]
        counts[toks[0] * V * V + toks[1] * V + toks[2]] += 1
    return counts


# ------------------------------------------------------------------------------------ the reference


def test_reference_masks_agree_with_llguidance_on_every_prefix() -> None:
    """The constraint's masks equal the re-based reference on all 156 prefixes of length <= 3 (then the law
    below is not llguidance checked against itself)."""
    c = _constraint()
    for n in range(N_TOK + 1):
        for prefix in itertools.product(range(END), repeat=n):
            text = "".join(CHARS[i] for i in prefix)
            if not viable(text):
                continue
            c.reset()
            c.consume(list(prefix))
            np.testing.assert_array_equal(c.mask().numpy(), allowed_reference(text), err_msg=repr(text))


def test_the_constraint_really_binds() -> None:
    """The constrained law differs from the plain target law (TV > 0.2): agreement below is not vacuous."""
    t_table, _ = _tables()
    plain = np.zeros(V**N_TOK + 1)
    law = np.exp(t_table - t_table.max(-1, keepdims=True))
    law /= law.sum(-1, keepdims=True)
    for a, b, c in itertools.product(range(V), repeat=3):
        plain[a * V * V + b * V + c] = law[PROMPT[0], a] * law[a, b] * law[b, c]
    assert 0.5 * np.abs(constrained_joint(t_table) - plain).sum() > 0.2
    assert abs(constrained_joint(t_table).sum() - 1.0) < 1e-12


# -------------------------------------------------------------------------------- the exactness test


@pytest.mark.parametrize("gamma", [1, 2])  # three tokens: the first round drafts at most 2 (gamma > 2 is gamma 2)
def test_constrained_speculative_law_is_the_constrained_target_law(gamma: int) -> None:
    t_table, d_table = _tables()
    cfg = SamplingConfig(temperature=1.0)
    counts = sample_constrained(d_table, t_table, gamma, cfg)
    stat, dof, pval = chi_square_gof(counts, constrained_joint(t_table))
    assert counts[ERROR_CELL] == 0
    assert dof > 20
    assert pval > P_REJECT, f"gamma={gamma}: chi2={stat:.1f} dof={dof} p={pval:.2e}"


def test_constrained_law_at_temperature_0_7() -> None:
    t_table, d_table = _tables()
    counts = sample_constrained(d_table, t_table, 3, SamplingConfig(temperature=0.7))
    stat, dof, pval = chi_square_gof(counts, constrained_joint(t_table, 0.7))
    assert dof > 15 and pval > P_REJECT, f"chi2={stat:.1f} dof={dof} p={pval:.2e}"


# ------------------------------------------------------------------------------- negative controls


def test_negative_control_forgetting_the_parser_rollback_fails() -> None:
    """Same test, parser not rolled back: rejected drafts stay in the parser state. Rejected on the law of
    the runs that finished (not merely because some runs stopped with a parser error)."""
    t_table, d_table = _tables()
    counts = sample_constrained(d_table, t_table, 2, SamplingConfig(temperature=1.0), forget=Forget(parser=True))
    want = constrained_joint(t_table)
    stat, dof, pval = chi_square_gof(counts, want)
    assert pval < P_REJECT, f"the forgotten rollback passed: chi2={stat:.1f} dof={dof} p={pval:.2e}"
    finished = counts[:ERROR_CELL]
    stat, dof, pval = chi_square_gof(finished, want[:ERROR_CELL] / want[:ERROR_CELL].sum())
    assert finished.sum() > N_RUNS // 2 and pval < P_REJECT, f"finished runs: chi2={stat:.1f} p={pval:.2e}"


class UnmaskedDraft(ModelDrafter):
    """Mistake: the draft samples from its unconstrained law (and advances the parser only while it can)."""

    def propose(self, context, gamma, sampling, generator, constraint=None):
        d = super().propose(context, gamma, sampling, generator)  # no mask: q is the plain law
        n = constraint.consume_allowed(d.tokens.tolist()) if constraint is not None else d.tokens.numel()
        if n < d.tokens.numel():  # keep the allowed prefix (the model's cache is rolled back by commit)
            self._proposed = d.tokens[:n]
        return type(d)(d.tokens[:n], d.q[:n])


def test_negative_control_draft_sampling_outside_the_mask_fails() -> None:
    """A draft that ignores the mask and keeps the allowed prefix of its proposal reports the wrong q."""
    t_table, d_table = _tables()
    counts = sample_constrained(d_table, t_table, 2, SamplingConfig(temperature=1.0))
    assert chi_square_gof(counts, constrained_joint(t_table))[2] > P_REJECT  # the correct engine passes here
    target, drafter = MarkovLM(t_table), UnmaskedDraft(MarkovLM(d_table))
    constraint = _constraint()
    bad = np.zeros(V**N_TOK + 1, dtype=np.int64)
    for seed in range(N_RUNS):
        events = speculative(target, drafter, PROMPT, N_TOK, gamma=2, seed=seed, topk=0, constraint=constraint)
        toks = ([t for e in events for t in e.emitted] + [END] * N_TOK)[:N_TOK]
        bad[toks[0] * V * V + toks[1] * V + toks[2]] += 1
    stat, dof, pval = chi_square_gof(bad, constrained_joint(t_table))
    assert pval < P_REJECT, f"the unmasked draft passed: chi2={stat:.1f} dof={dof} p={pval:.2e}"


def test_greedy_constrained_speculative_equals_greedy_constrained_autoregressive_on_the_markov_pair() -> None:
    from gpu_demo.decode import autoregressive, run

    t_table, d_table = _tables()
    greedy = SamplingConfig(temperature=0.0)
    c = _constraint()
    ar = run(autoregressive(MarkovLM(t_table), PROMPT, 30, greedy, constraint=c)).tokens
    assert c.check(ar)[0] in ("complete", "unfinished")
    for gamma in (1, 2, 3, 5):
        sp = run(speculative(MarkovLM(t_table), ModelDrafter(MarkovLM(d_table)), PROMPT, 30, gamma, greedy,
                             constraint=c)).tokens
        assert sp == ar, gamma
