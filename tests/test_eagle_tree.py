"""The feature-level draft filling token trees (gpu_demo.models.eagle_tree): exact through the shared tree engine.

Tiny random-weight Llama targets and tiny heads (tests/eagle_support.py), the same classes as with SmolLM2.

* greedy: tree speculative output equals greedy autoregressive output token for token, for chains and branching
  trees, with a trained head (long accepted paths) and a random one (many corrections), a 1-token prompt included;
* state: on a chain the tree drafter drafts exactly what the chain drafter drafts (greedy, round by round), so the
  feature bookkeeping after a tree round (the target's tree-ordered rows of the accepted path) is the chain's;
* law: the first three tokens of sampled tree runs follow the target's exact law (chi-square over 216 cells);
  negative control: a drafter that reports each child's law without removing its earlier siblings (the law a
  child drawn WITHOUT replacement did not come from) is rejected on the first token's law, same sample size
  (a random head, so q is far from p and the mistake is large enough to see).
"""

from __future__ import annotations

import copy
import itertools

import numpy as np
import pytest
import torch
from eagle_support import exact_joint, tiny_head, tiny_target, trained_head

from gpu_demo.decode import autoregressive, run, speculative
from gpu_demo.models.eagle import EagleDrafter
from gpu_demo.models.eagle_tree import EagleTreeDrafter
from gpu_demo.models.graphs import use_static_steps
from gpu_demo.sampler import SamplingConfig
from gpu_demo.tree_decode import tree_drafter_for, tree_speculative
from gpu_demo.tree_draft import TreeDraft
from specdec_core.stats import chi_square_gof
from specdec_core.trees import branching_tree, chain

pytestmark = pytest.mark.usefixtures("one_torch_thread")

GREEDY = SamplingConfig(temperature=0.0)
T1 = SamplingConfig(temperature=1.0)
N_RUNS = 2000
P_REJECT = 1e-3
V = 6
PROMPT = [2, 4, 1]


@pytest.fixture(scope="module")
def trained():
    target = tiny_target(16, seed=2, scale=20.0)
    return target, trained_head(target, 12)[0]


def test_a_pairs_eagle_drafter_gets_its_tree_form(trained) -> None:
    target, head = trained
    chain_drafter = EagleDrafter(target, head)
    td = tree_drafter_for(chain_drafter)
    assert isinstance(td, EagleTreeDrafter) and td.head is head and td.chain is chain_drafter


def test_one_token_prompt_drafts_nothing_in_the_first_round_as_the_chain_does(trained) -> None:
    """No true feature before the first target step: the tree drafter, like the chain drafter, drafts nothing
    (seeding a zero feature would draft a whole tree from nothing)."""
    target, head = trained
    chain_events = list(speculative(target, EagleDrafter(target, head), [7], 10, 3, GREEDY))
    tree_events = list(tree_speculative(target, EagleDrafter(target, head), [7], 10, branching_tree([2, 1]), GREEDY))
    for events in (chain_events, tree_events):
        assert events[0].drafted == [] and events[0].kinds == ["target"]
        assert events[1].k >= 1
    assert tree_events[0].parent == [] and tree_events[0].gamma == 0


def test_the_tree_module_imports_the_chain_module_never_the_reverse() -> None:
    import ast
    import inspect

    import gpu_demo.models.eagle as eagle

    modules = {n.module for n in ast.walk(ast.parse(inspect.getsource(eagle))) if isinstance(n, ast.ImportFrom)}
    assert "gpu_demo.models.eagle_tree" not in modules and "gpu_demo.tree_decode" not in modules


@pytest.mark.parametrize("shape", ["chain3", "2,1", "3,2", "2,2,1"])
def test_greedy_tree_equals_greedy_autoregressive(trained, shape: str) -> None:
    target, head = trained
    tree = chain(3) if shape == "chain3" else branching_tree([int(b) for b in shape.split(",")])
    kinds, tried = set(), set()
    for h, prompt in itertools.product([head, tiny_head(target, 12)], ([5], [3, 1, 4, 1, 5], list(range(16)))):
        want = run(autoregressive(target, prompt, 50, GREEDY)).tokens
        res = run(tree_speculative(target, EagleDrafter(target, h), prompt, 50, tree, GREEDY))
        assert res.tokens == want, f"prompt {prompt}, shape {shape}"
        kinds |= {k for e in res.events for k in e.kinds}
        tried |= {j for e in res.events for j in e.tried}
    assert {"accepted", "correction"} <= kinds, kinds
    if shape != "chain3":  # the walk reached second-ranked siblings, not only first choices
        assert any(tree.rank[j] > 1 for j in tried), tried


def test_on_a_chain_the_tree_drafter_drafts_what_the_chain_drafter_drafts(trained) -> None:
    target, head = trained
    prompt = [2, 7, 1, 8, 2, 8]
    chain_events = run(speculative(target, EagleDrafter(target, head), prompt, 60, 3, GREEDY)).events
    tree_events = run(tree_speculative(target, EagleDrafter(target, head), prompt, 60, chain(3), GREEDY)).events
    assert [e.drafted for e in tree_events] == [e.drafted for e in chain_events]
    assert sum(e.n_accepted == 3 for e in tree_events) >= 2  # full acceptances: the leaf stays pending


def test_head_cache_holds_only_true_feature_slots_after_each_round(trained) -> None:
    target, head = trained
    prompt = [3, 1, 4, 1, 5]
    committed = len(prompt) - 1  # the head's slots pair x_j with f_{j-1}: one per committed token but the first
    for e in tree_speculative(target, EagleDrafter(target, head), prompt, 40, branching_tree([2, 2]), T1, seed=3):
        committed += len(e.emitted)
        assert e.kv_target == committed  # the target keeps the prefix and the path; y is pending
        assert e.kv_draft <= committed - 1  # tree slots rolled back; the latest true pairs wait for the next round


# ----------------------------------------------------------------------------------------------------- law


class SiblingBlindQ(EagleTreeDrafter):
    """The mistake: children drawn without replacement, but each reported with the parent's full law."""

    def propose(self, tree, sampling, generator) -> TreeDraft:
        d = super().propose(tree, sampling, generator)
        q = d.q.clone()
        for j, (par, rank) in enumerate(zip(tree.parent, tree.rank)):
            if rank > 1:
                first = next(i for i in range(j) if tree.parent[i] == par and tree.rank[i] == 1)
                q[j] = d.q[first]  # the first sibling's law: the earlier siblings' tokens not removed
        return TreeDraft(d.tree, d.tokens, q)


def sample_joint(target, drafter: EagleTreeDrafter, tree) -> np.ndarray:
    """Counts of the first three emitted tokens over N_RUNS seeded runs of the tree engine."""
    counts = np.zeros(V**3, dtype=np.int64)
    for seed in range(N_RUNS):
        toks = [t for e in tree_speculative(target, drafter, PROMPT, 3, tree, T1, seed=seed, topk=0) for t in e.emitted]
        counts[toks[0] * V * V + toks[1] * V + toks[2]] += 1
    return counts


@pytest.fixture(scope="module")
def law_pair():
    target = tiny_target(V, seed=7, scale=4.0)
    return target, tiny_head(target, 4)  # a random head: q far from p, and q = 0 on two of the six ids


@pytest.mark.parametrize("static", [False, True], ids=["eager", "fixed-shape-steps"])
def test_sampled_tree_law_matches_the_target(law_pair, static: bool) -> None:
    """Also with the target's and the head's steps on the fixed-shape buffers a CUDA graph replays (padded
    buckets, whole-cache attention): the emitted law is still the target's."""
    target, head = law_pair
    for m in (target, head) if static else ():
        use_static_steps(m, capture=False)
    try:
        counts = sample_joint(target, EagleTreeDrafter(EagleDrafter(target, head)), branching_tree([3, 2]))
    finally:
        target.static_steps = head.static_steps = None
    stat, dof, pval = chi_square_gof(counts, exact_joint(target, PROMPT, V))
    assert dof > 20
    assert pval > P_REJECT, f"chi2={stat:.1f} dof={dof} p={pval:.2e}"


def test_negative_control_sibling_blind_q_is_rejected(law_pair) -> None:
    target, head = law_pair
    counts = sample_joint(target, SiblingBlindQ(EagleDrafter(target, head)), branching_tree([3, 2]))
    first, p_first = counts.reshape(V, -1).sum(1), exact_joint(target, PROMPT, V).reshape(V, -1).sum(1)
    stat, dof, pval = chi_square_gof(first, p_first)  # the root's three siblings decide the first token
    assert pval < P_REJECT, f"the wrongly reported q passed: chi2={stat:.1f} dof={dof} p={pval:.2e}"


def test_sampled_children_are_distinct_and_their_laws_sum_to_one(law_pair) -> None:
    target, head = law_pair
    drafter = EagleTreeDrafter(EagleDrafter(target, head))
    tree = branching_tree([3, 2])
    for e in tree_speculative(target, drafter, PROMPT, 12, tree, T1, seed=1):
        if len(e.drafted) == tree.n_nodes:
            roots = [e.drafted[j] for j in range(tree.n_nodes) if tree.parent[j] == -1]
            assert len(set(roots)) == len(roots)
    d = drafter._draft
    torch.testing.assert_close(d.q.sum(-1)[d.q.sum(-1) > 0], torch.ones(int((d.q.sum(-1) > 0).sum())))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_on_cuda_greedy_tree_equals_greedy_and_sampled_trees_run(trained) -> None:
    target, head = trained
    dev = torch.device("cuda")
    target, head = copy.deepcopy(target).to(dev), copy.deepcopy(head).to(dev)  # the fixture's stay on the CPU
    head.attach(target)
    assert target.pack_for_cpu() == 0 and head.pack_for_cpu() == 0  # packing is for CPUs only
    for shape in ([2, 1], [3, 2]):
        want = run(autoregressive(target, [3, 1, 4, 1, 5], 40, GREEDY)).tokens
        got = run(tree_speculative(target, EagleDrafter(target, head), [3, 1, 4, 1, 5], 40, branching_tree(shape),
                                   GREEDY)).tokens
        assert got == want, shape
        res = run(tree_speculative(target, EagleDrafter(target, head), [3, 1, 4, 1, 5], 40, branching_tree(shape),
                                   T1, seed=0))
        assert len(res.tokens) == 40 and all(0 <= t < 16 for t in res.tokens)
