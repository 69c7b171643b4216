"""EAGLE-2's dynamic tree (specdec_core.dynamic_tree, gpu_demo.tree_draft.grow_dynamic): the selection by hand, the
size chosen from v(T), greedy output equal to greedy decoding (a model draft and an EAGLE-style head), and the
target's law under sampling, with a negative control that must fail at the same sample size."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch
from doubles import TreeMarkovLM, markov_tables
from eagle_support import tiny_head, tiny_target

from gpu_demo.decode import autoregressive, run
from gpu_demo.models.eagle import EagleDrafter
from gpu_demo.models.llama import LlamaConfig, init_random
from gpu_demo.sampler import SamplingConfig
from gpu_demo.tree_decode import tree_speculative
from gpu_demo.tree_draft import TreeDraft, TreeDrafter, grow_dynamic
from specdec_core.dynamic_tree import DynamicTree, best_count, rerank, tree_of, worth_growing
from specdec_core.stats import chi_square_gof

GREEDY = SamplingConfig(0.0)
P_REJECT = 1e-3


# ------------------------------------------------------------------------------------------ by hand
def test_best_count_weighs_the_scores_against_this_devices_v() -> None:
    scores = [0.8, 0.6, 0.3, 0.1]
    flat = DynamicTree(budget=4, depth=2, c=0.05, v=(1.0, 1.0, 1.0, 1.0, 1.0))  # a GPU at batch 1: v flat
    steep = DynamicTree(budget=4, depth=2, c=0.05, v=(1.0, 1.2, 1.45, 1.7, 1.95))  # a CPU: each token costs
    # flat: (1 + 1.8) / 1.1 = 2.545 at N = 3 beats (1 + 1.9) / 1.1 = 2.636? no: N = 4 gives 2.9 / 1.1, the most
    assert best_count(scores, flat) == 4
    # steep: N = 1 gives 1.8 / 1.3 = 1.385, N = 2 gives 2.4 / 1.55 = 1.548, N = 3 gives 2.7 / 1.8 = 1.5
    assert best_count(scores, steep) == 2
    assert best_count(scores, DynamicTree(budget=3)) == 3  # no v: the budget
    # 1 / (0.5 + 1) = 0.667 against 1.01 / (0.5 + 2) = 0.404: a node not worth its verify slot is dropped
    assert best_count([0.01], DynamicTree(budget=1, depth=1, c=0.5, v=(1.0, 2.0))) == 0


def test_best_count_counts_the_drafting_already_paid_for_every_size() -> None:
    """A grown tree's drafting is paid whether or not a node is verified, so N = 0 carries it too."""
    cpu = DynamicTree(budget=1, depth=3, c=0.08, v=(1.0, 1.2))  # CPU-like costs: a cheap draft, v(2) 1.2
    # N = 0: 1 / (0.24 + 1) = 0.806; N = 1: 1.3 / (0.24 + 1.2) = 0.903. Leaving the 0.24 out of N = 0's cost
    # would give 1 / 1 = 1 there and drop a node accepted 30 % of the time, after paying to draft it.
    assert best_count([0.3], cpu) == 1
    # the node is dropped only where its verify slot costs more than it brings: 1.1 / 1.44 < 1 / 1.24
    assert best_count([0.1], cpu) == 0


def test_growth_stops_where_no_deeper_tree_repays_its_passes() -> None:
    cpu = DynamicTree(budget=4, depth=3, c=0.08, v=(1.0, 1.2, 1.4, 1.6, 1.8))
    # after one pass, a node of 0.1: the best cut is N = 0 at 1 / 1.08 = 0.926. Even a child as sure as its
    # parent gives at most 1.2 / (0.16 + 1.4) = 0.769 at two passes: stop
    assert not worth_growing([0.1], [0.1], cpu, 1)
    # a node of 0.6: now 1.6 / 1.28 = 1.25; a child of up to 0.6 could give 2.2 / 1.56 = 1.41: grow
    assert worth_growing([0.6], [0.6], cpu, 1)
    # where verifying is flat (a GPU), even a node of 0.1 is worth a cheap pass: 1.2 / 1.04 > 1.1 / 1.02
    assert worth_growing([0.1], [0.1], DynamicTree(budget=4, depth=3, c=0.02, v=(1.0,) * 5), 1)
    assert not worth_growing([0.9], [0.9], cpu, 3)  # the depth is spent
    assert worth_growing([0.0], [0.0], DynamicTree(depth=3), 1)  # no v: grow to the depth asked


def _grown_by_depth(rng: np.random.Generator, spec: DynamicTree) -> list[tuple[np.ndarray, np.ndarray]]:
    """The beam rule on a random draft (a node's children: the top_k of a random peaked law), grown to spec.depth:
    per depth d, (scores of every node of depth <= d, scores of the beam expanded next)."""
    scores: list[float] = []
    beam, out = [1.0], []
    for _ in range(spec.depth):
        new = []
        for s in beam:
            law = rng.dirichlet(np.full(12, 0.3))  # (12,) a draft's law, often peaked
            new += [s * x for x in spec.edge(np.sort(law)[::-1][: spec.top_k])]  # a path: the product of a+(q)
        scores += new
        beam = sorted(new, reverse=True)[: spec.top_k]
        out.append((np.array(scores), np.array(beam)))
    return out


def _best_ratio(scores: np.ndarray, spec: DynamicTree, drafted: int) -> float:
    n = best_count(scores, spec, drafted)
    return (1.0 + np.sort(scores)[::-1][:n].sum()) / (drafted * spec.c + spec.v[n])


OVERCONFIDENT = ((0.0, 0.5, 1.0), (0.0, 0.36, 0.93))  # a draft more sure than the target: a+(q) < q
UNDERCONFIDENT = ((0.0, 0.15, 0.45, 1.0), (0.0, 0.2, 0.55, 0.95))  # a draft less sure than the target: R = 1.33
STEEP = ((0.0, 0.1, 1.0), (0.0, 0.35, 1.0))  # R = 3.5: children may score more than their parent in sum


def _violations(spec: DynamicTree, rule: DynamicTree, draws: int = 300) -> tuple[int, int]:
    """(stops, stops where a deeper tree had a better best cut) of worth_growing under `rule` on random drafts
    grown and scored by `spec`."""
    rng = np.random.default_rng(0)
    stops = bad = 0
    for _ in range(draws):
        grown = _grown_by_depth(rng, spec)
        ratios = [_best_ratio(sc, spec, d + 1) for d, (sc, _) in enumerate(grown)]
        for d, (sc, beam) in enumerate(grown[:-1]):
            if not worth_growing(sc, beam, rule, d + 1):
                stops += 1
                bad += max(ratios[d + 1:]) > ratios[d] + 1e-12
    return stops, bad


@pytest.mark.parametrize("accept", [(), OVERCONFIDENT, UNDERCONFIDENT, STEEP])
@pytest.mark.parametrize("c, slope", [(0.08, 0.2), (0.07, 0.08), (0.02, 0.0), (0.2, 0.05)])
def test_stopping_early_never_gives_up_a_better_deeper_tree(c: float, slope: float, accept: tuple) -> None:
    """Where worth_growing says stop at depth d, no deeper tree of the same draft has a better best cut, with or
    without an acceptance map."""
    spec = DynamicTree(top_k=3, depth=5, budget=12, c=c, v=tuple(1.0 + slope * t for t in range(13)), accept=accept)
    stops, bad = _violations(spec, spec)
    assert stops > 0 and bad == 0  # the rule was exercised, and never wrongly


def test_the_bound_needs_the_maps_growth_factor() -> None:
    """Negative control: under a map whose children can outscore their parent (R = 3.5), three children of 1/3 each
    score 0.52 and their nine children 0.27 each; growing pays, which the bound with R sees and one with R = 1
    (children never outscore their parent) does not."""
    spec = DynamicTree(top_k=3, depth=2, budget=12, c=2.0, v=(1.0,) * 13, accept=STEEP)
    assert spec.growth() == pytest.approx(3.5)
    third = float(spec.edge(1 / 3))
    now, deeper = np.full(3, third), np.full(12, third) * np.r_[np.ones(3), np.full(9, third)]
    assert _best_ratio(deeper, spec, 2) > _best_ratio(now, spec, 1)
    assert worth_growing(now, now, spec, 1)
    assert not worth_growing(now, now, replace(spec, accept=()), 1)


def test_growth_by_expectation_follows_how_sure_a_child_is() -> None:
    """With `expect`, growth looks ahead on the expected tree: a weak draft (T = 1 on SmolLM2: the top child is kept
    a third of the time) stops where the safe bound would grow; a sure one grows; and stopping ends the passes."""
    cpu = DynamicTree(top_k=2, depth=4, budget=6, c=0.07, v=(1.0, 1.05, 1.23, 1.24, 1.4, 1.41, 1.45))
    weak, sure = replace(cpu, expect=(0.33, 0.1)), replace(cpu, expect=(0.85, 0.05))
    scores, beam = [0.33, 0.1], [0.33, 0.1]
    assert worth_growing(scores, beam, cpu, 1)  # the bound: a child as sure as its parent could repay a pass
    assert not worth_growing(scores, beam, weak, 1)
    assert worth_growing([0.85, 0.05], [0.85, 0.05], sure, 1)
    calls: list[int] = []

    def expand(tokens: torch.Tensor, rows: list[int], mask: torch.Tensor, d: int) -> torch.Tensor:
        calls.append(d)
        return torch.zeros(tokens.numel(), 9)  # (w, V)

    root = torch.log(torch.tensor([[0.34, 0.1] + [0.08] * 7]))  # (1, 9): a top child of 0.34
    grown = grow_dynamic(root, weak, expand, 9)
    assert calls == [] and grown.draft.tree.n_nodes >= 1
    for bad in [(1.2,), (0.6, 0.6), (-0.1,), (float("nan"),), (0.1,) * 9]:
        with pytest.raises(ValueError):
            DynamicTree(expect=bad)


def test_the_acceptance_map_is_checked_and_read() -> None:
    spec = DynamicTree(accept=OVERCONFIDENT)
    assert spec.edge([0.0, 0.25, 0.5, 1.0]) == pytest.approx([0.0, 0.18, 0.36, 0.93])
    assert spec.log_edge(np.log([0.5])) == pytest.approx(np.log([0.36]))
    assert spec.growth() == 1.0 and DynamicTree().growth() == 1.0 and DynamicTree().edge([0.3]) == [0.3]
    assert DynamicTree(accept=UNDERCONFIDENT).growth() == pytest.approx(0.2 / 0.15)
    for bad in [((0.0, 1.0),), ((0.1, 1.0), (0.0, 0.5)), ((0.0, 0.5, 0.4, 1.0), (0.0, 0.1, 0.2, 0.3)),
                ((0.0, 1.0), (0.0, 1.2)), ((0.0, 0.5, 1.0), (0.0, 0.6, 0.5)), ((0.0, 1.0), (0.1, 0.5)),
                ((0.0, float("nan"), 1.0), (0.0, 0.5, 0.9))]:
        with pytest.raises(ValueError):
            DynamicTree(accept=bad)


def test_grow_dynamic_skips_the_passes_that_cannot_pay() -> None:
    """An unsure draft on steep verify costs drafts the root only; a sure one on flat costs grows to the depth."""
    calls: list[int] = []
    peak = torch.zeros(9)
    peak[4] = 5.0  # a sure draft: 0.95 on token 4

    def expand_with(law: torch.Tensor):
        def expand(tokens: torch.Tensor, rows: list[int], mask: torch.Tensor, d: int) -> torch.Tensor:
            calls.append(d)
            return law.expand(tokens.numel(), 9)  # (w, V)
        return expand

    steep = DynamicTree(top_k=2, depth=4, budget=6, c=0.08, v=tuple(1.0 + 0.1 * t for t in range(7)))
    grown = grow_dynamic(torch.zeros(1, 9), steep, expand_with(torch.zeros(9)), 9)
    # the root's two children at 1/9 each: 1.22 / 1.28 = 0.955 beats 1 / 1.08; grandchildren could add at most
    # two more of 1/9 for a pass and two slots: 1.44 / 1.56 = 0.923
    assert calls == [] and grown.draft.tree.n_nodes == 2
    flat = DynamicTree(top_k=2, depth=4, budget=8, c=0.01, v=(1.0,) * 9)
    grown = grow_dynamic(peak[None], flat, expand_with(peak), 9)
    assert calls == [1, 2, 3] and max(grown.draft.tree.depth) == 4
    calls.clear()
    grow_dynamic(torch.zeros(1, 9), flat, expand_with(torch.zeros(9)), 9)  # unsure on flat costs: stops sooner
    assert 0 < len(calls) < 3


def test_rerank_keeps_parents_and_orders_by_depth() -> None:
    #            0     1     2    3    4     5
    parent = [-1, -1, 0, 0, 1, 2]
    log_score = np.log([0.5, 0.3, 0.4, 0.05, 0.2, 0.35])
    depth = [1, 1, 2, 2, 2, 3]
    assert rerank(parent, log_score, depth, 4) == [0, 1, 2, 5]  # 0.5, 0.4, 0.35 (its parent 2 is in), 0.3
    tree, idx = tree_of(parent, [0, 1, 2, 5])
    assert tree.parent == (-1, -1, 0, 2) and tree.rank == (1, 2, 1, 1) and idx.tolist() == [0, 1, 2, 5]


def test_the_spec_is_checked() -> None:
    for bad in ({"top_k": 0}, {"depth": 99}, {"budget": 4, "v": (1.0, 1.0)}, {"c": -1.0}, {"v": (0.0,) * 17}):
        with pytest.raises(ValueError):
            DynamicTree(**bad)
    assert DynamicTree(depth=5).limited(2).depth == 2 and DynamicTree(depth=1).limited(9).depth == 1


# ------------------------------------------------------------------------------------ greedy equality
def _llama(cfg: LlamaConfig, seed: int, sharpen: float):
    m = init_random(cfg, seed=seed, max_len=128).eval()
    m.requires_grad_(False)
    with torch.no_grad():
        m.tok_embeddings.weight.mul_(sharpen)
    return m


V = 61
TARGET = LlamaConfig(vocab_size=V, dim=48, n_layers=2, n_heads=6, n_kv_heads=2, hidden_dim=80, max_seq_len=128)
DRAFT = LlamaConfig(vocab_size=V, dim=32, n_layers=1, n_heads=4, n_kv_heads=2, hidden_dim=48, max_seq_len=128)


@pytest.mark.parametrize("spec", [DynamicTree(4, 4, 10), DynamicTree(2, 6, 16), DynamicTree(3, 3, 20, v=(1.0,) * 21)])
def test_greedy_dynamic_tree_equals_greedy_with_a_model_draft(spec: DynamicTree) -> None:
    target, draft = _llama(TARGET, 0, 20.0), _llama(DRAFT, 3, 5.0)
    for prompt in ([1, 2, 3], [40, 41, 42, 43, 44], [7]):
        ar = run(autoregressive(target, prompt, 40, GREEDY))
        tr = run(tree_speculative(target, TreeDrafter(draft), prompt, 40, spec, GREEDY))
        assert tr.tokens == ar.tokens
        assert max(e.n_accepted for e in tr.events) >= 1  # the trees were verified, not empty


def test_greedy_dynamic_tree_equals_greedy_with_an_eagle_head() -> None:
    target = tiny_target(40)
    drafter = EagleDrafter(target, tiny_head(target, n_out=24))
    for prompt in ([1, 2, 3, 4], [9, 8, 7, 6, 5, 4]):
        ar = run(autoregressive(target, prompt, 30, GREEDY))
        tr = run(tree_speculative(target, drafter, prompt, 30, DynamicTree(4, 4, 12), GREEDY))
        assert tr.tokens == ar.tokens
        assert any(len(e.parent) > 1 for e in tr.events)


def test_the_size_follows_v() -> None:
    """The same draft grows a full tree where verifying is flat (a GPU) and a small one where it is steep."""
    target, draft = _llama(TARGET, 0, 20.0), _llama(DRAFT, 3, 5.0)
    flat = DynamicTree(4, 4, 16, v=(1.0,) * 17, c=0.02)
    steep = DynamicTree(4, 4, 16, v=tuple(1.0 + 0.05 * t for t in range(17)), c=0.02)  # 0.05 a token
    sizes = {}
    for name, spec in (("flat", flat), ("steep", steep)):
        tr = run(tree_speculative(target, TreeDrafter(draft), [1, 2, 3], 20, spec, GREEDY))
        sizes[name] = np.mean([len(e.parent) for e in tr.events])
    assert sizes["flat"] > 4 * sizes["steep"] and sizes["steep"] >= 1


# --------------------------------------------------------------------------------- the target's law
class ClaimsSampled(TreeDrafter):
    """Negative control: chooses the same nodes but reports q = 1/2 one-hot + 1/2 uniform, as if they were drawn."""

    def propose(self, tree, sampling, generator) -> TreeDraft:
        d = super().propose(tree, sampling, generator)
        self._draft = TreeDraft(d.tree, d.tokens, 0.5 * d.q + 0.5 / d.q.shape[-1])
        return self._draft


def _first_two(drafter: TreeDrafter, target, runs: int) -> np.ndarray:
    v = target.vocab_size
    counts = np.zeros(v * v, dtype=np.int64)
    for seed in range(runs):
        toks = run(tree_speculative(target, drafter, [0], 2, DynamicTree(3, 2, 6), SamplingConfig(1.0), seed=seed,
                                    topk=0)).tokens
        counts[toks[0] * v + toks[1]] += 1
    return counts


@pytest.mark.slow
def test_a_dynamic_tree_emits_the_target_law_and_the_control_does_not() -> None:
    t_tab, d_tab = markov_tables()
    law = torch.softmax(torch.tensor(t_tab), -1).numpy()  # p(. | previous), (V, V)
    joint = (law[0][:, None] * law).reshape(-1)  # P(x1, x2) from the prompt [0]
    target = TreeMarkovLM(t_tab)
    good = _first_two(TreeDrafter(TreeMarkovLM(d_tab)), target, 3000)
    bad = _first_two(ClaimsSampled(TreeMarkovLM(d_tab)), target, 3000)
    assert chi_square_gof(good, joint)[2] > P_REJECT
    assert chi_square_gof(bad, joint)[2] < P_REJECT
