"""Live tree verification: tree-masked passes, compaction of the accepted path, greedy equality, exact sampling.

References are independent of the tree code: a tree pass is checked node by node against a fresh causal forward
over the prefix and that node's path (forward_train); the cache after a round against a fresh recompute of the
committed sequence; the sampled rule against specdec_core.multidraft's exact laws and the target's own law, by
chi-square, with a negative control (dividing by the draft's law without removing the earlier siblings) that must
fail at the same sample size.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from doubles import MarkovLM, TreeMarkovLM, markov_tables

import gpu_demo.tree_draft as tdraft
from gpu_demo import tree_decode
from gpu_demo.decode import autoregressive, run
from gpu_demo.drafters import LookupDrafter, ModelDrafter
from gpu_demo.measure.tree_stats import expected_length_by_depth, measured_rank_rates
from gpu_demo.models.char import (
    CharConfig,
    CharTransformer,
    ExpertSumLM,
    WindowConfig,
    WindowMLP,
)
from gpu_demo.models.llama import LlamaConfig, init_random
from gpu_demo.pairs import load_pair
from gpu_demo.sampler import SamplingConfig
from gpu_demo.tree_decode import recursive_walk, tree_round, tree_speculative
from gpu_demo.tree_draft import TreeDraft, TreeDrafter, prune
from specdec_core.multidraft import WOR, WOR_RATIO_Q, multidraft_distribution
from specdec_core.stats import chi_square_gof
from specdec_core.trees import Tree, branching_tree, chain, expected_accepted_length, greedy_tree

V = 81
P_REJECT = 1e-3
SHAPES = {
    "chain 4": chain(4),
    "branching 3,2,1": branching_tree([3, 2, 1]),
    "budget 12": greedy_tree([0.55, 0.2, 0.1, 0.05], 12),
}
TINY_LLAMA = LlamaConfig(vocab_size=V, dim=48, n_layers=2, n_heads=6, n_kv_heads=2, hidden_dim=80,
                         norm_eps=1e-5, rope_base=10000.0, max_seq_len=128)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _models(seed: int = 0) -> dict[str, torch.nn.Module]:
    """Every model type, small and random: transformer (KVCache), window MLP (TokenHistory), their sum, Llama."""
    torch.manual_seed(seed)
    t = CharTransformer(CharConfig(vocab_size=V, n_layer=2, n_head=4, d_model=64, max_seq_len=128)).eval()
    w = WindowMLP(WindowConfig(vocab_size=V, window=6, d_emb=8, d_hidden=64, max_seq_len=128)).eval()
    w2 = WindowMLP(WindowConfig(vocab_size=V, window=5, d_emb=8, d_hidden=64, max_seq_len=128)).eval()
    for m in (t, w, w2):
        m.requires_grad_(False)
    w.fold()
    w2.fold()
    t.head.weight.mul_(20.0)  # sharpen the random target: argmax ties become impossible in practice
    llama = init_random(TINY_LLAMA, seed=seed, max_len=128).eval()
    llama.requires_grad_(False)
    return {"transformer": t, "window": w, "sum": ExpertSumLM(t, w2).eval(), "llama": llama}


def _tree_inputs(tree: Tree, base: int, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """[root, nodes] ids (1, n + 1), positions base + depth, and the verify mask."""
    positions = base + torch.cat([torch.zeros(1, dtype=torch.long), torch.as_tensor(tree.depth)])
    return tokens.view(1, -1), positions, tree_decode.verify_mask(tree)


def _path(tree: Tree, j: int) -> list[int]:
    """Nodes from the root's child down to node j."""
    out = []
    while j >= 0:
        out.append(j)
        j = tree.parent[j]
    return out[::-1]


# ------------------------------------------------------------------------------------- the tree-masked pass


@pytest.mark.parametrize("kind", ["transformer", "window", "sum", "llama"])
@pytest.mark.parametrize("shape", ["branching 3,2,1", "budget 12"])
def test_tree_pass_equals_path_forward(kind: str, shape: str) -> None:
    """Every node's logits from ONE tree pass equal a fresh causal forward over prefix + root + its path."""
    model, tree = _models()[kind], SHAPES[shape]
    g = torch.Generator().manual_seed(1)
    prefix = torch.randint(0, V, (9,), generator=g)
    ids = torch.randint(0, V, (tree.n_nodes + 1,), generator=g)  # root, then one token per node
    model.reset(1)
    model.forward(prefix.view(1, -1))
    logits = model.forward(*_tree_inputs(tree, prefix.numel(), ids))[0]  # (n + 1, V)
    assert model.cache_len == prefix.numel() + tree.n_nodes + 1
    fresh_root = model.forward_train(torch.cat([prefix, ids[:1]]).view(1, -1))[0, -1]
    torch.testing.assert_close(logits[0], fresh_root, rtol=1e-4, atol=1e-4)
    for j in range(tree.n_nodes):
        seq = torch.cat([prefix, ids[:1], ids[[k + 1 for k in _path(tree, j)]]])
        torch.testing.assert_close(logits[j + 1], model.forward_train(seq.view(1, -1))[0, -1], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kind", ["transformer", "window", "sum", "llama"])
def test_keep_compacts_the_path_to_a_fresh_recompute(kind: str) -> None:
    """After a tree pass, keep(base + 1, path slots): K/V (or ids) and the next logits equal a fresh recompute."""
    model, tree = _models()[kind], SHAPES["branching 3,2,1"]
    g = torch.Generator().manual_seed(2)
    prefix = torch.randint(0, V, (7,), generator=g)
    ids = torch.randint(0, V, (tree.n_nodes + 1,), generator=g)
    base = prefix.numel()
    model.reset(1)
    model.forward(prefix.view(1, -1))
    model.forward(*_tree_inputs(tree, base, ids))
    path = _path(tree, tree.n_nodes - 1)  # the last node: rank > 1 at depth 2, so slots are not contiguous
    model.keep(base + 1, [base + 1 + j for j in path])
    seq = torch.cat([prefix, ids[:1], ids[[j + 1 for j in path]]])
    assert model.cache_len == seq.numel()
    caches = _caches(model)
    kept = [c.clone() for c in caches]
    nxt = torch.tensor([[5]])
    after = model.forward(nxt)[0, -1]
    torch.testing.assert_close(after, model.forward_train(torch.cat([seq.view(1, -1), nxt], 1))[0, -1],
                               rtol=1e-4, atol=1e-4)
    model.reset(1)
    model.forward(seq.view(1, -1))
    for a, b in zip(kept, _caches(model)):
        torch.testing.assert_close(a[..., : seq.numel(), :] if a.dim() == 4 else a[:, : a.shape[1] - 1],
                                   b[..., : seq.numel(), :] if b.dim() == 4 else b[:, : b.shape[1] - 1])


def _caches(model) -> list[torch.Tensor]:
    """The committed cache contents: every layer's keys and values, or the window model's id history."""
    parts = [model.transformer, model.expert] if isinstance(model, ExpertSumLM) else [model]
    out = []
    for m in parts:
        c = m.cache
        if hasattr(c, "keys"):
            out += [c.keys(i).clone() for i in range(c.n_layers)] + [c.values(i).clone() for i in range(c.n_layers)]
        else:
            out.append(c.ids[:, : c.window + c.length + 1].clone())  # +1: compared without the last column
    return out


def test_keep_refuses_bad_slots_and_changes_nothing() -> None:
    model = _models()["transformer"]
    model.reset(1)
    model.forward(torch.arange(10).view(1, -1))
    for start, slots in ((11, []), (4, [3]), (4, [6, 5]), (4, [5, 10]), (-1, [])):
        with pytest.raises(ValueError, match="keep needs"):
            model.keep(start, slots)
        assert model.cache_len == 10
    model.keep(4, [4, 5])  # contiguous: a plain rollback
    assert model.cache_len == 6


# ----------------------------------------------------------------------------------------------- greedy


@pytest.fixture(scope="module")
def builtin():
    return load_pair("builtin", "cpu")


@pytest.mark.parametrize("shape", list(SHAPES))
def test_greedy_tree_equals_greedy_small(shape: str) -> None:
    m = _models()
    drafter = ModelDrafter(m["window"])
    for prompt in ([1, 2, 3], [40, 41, 42, 43, 44, 45], [7]):
        ar = run(autoregressive(m["transformer"], prompt, 40, SamplingConfig(0.0)))
        tr = run(tree_speculative(m["transformer"], drafter, prompt, 40, SHAPES[shape], SamplingConfig(0.0)))
        assert tr.tokens == ar.tokens


@pytest.mark.parametrize("shape", list(SHAPES))
def test_greedy_tree_equals_greedy_builtin(builtin, shape: str) -> None:
    tok, tree = builtin.tokenizer, SHAPES[shape]
    for text in ("It is a truth universally acknowledged, that", "Emma Woodhouse", "\"Oh! Mr. Darcy"):
        ids = tok.encode(text)
        ar = run(autoregressive(builtin.target, ids, 80, SamplingConfig(0.0)))
        tr = run(tree_speculative(builtin.target, builtin.drafter, ids, 80, tree, SamplingConfig(0.0)))
        assert tok.decode(tr.tokens) == tok.decode(ar.tokens)
        assert sum(e.n_accepted for e in tr.events) > 0
        if tree.n_nodes > tree.depth.max():  # a real tree: some round kept a child of rank > 1
            assert any(e.rank[j] > 1 for e in tr.events for j in e.path)


def _check_round_caches(target, drafter: TreeDrafter, committed: list[int]) -> None:
    """Target holds committed[:-1], draft committed minus its pending ids; both equal fresh recomputes."""
    seq = torch.tensor(committed).view(1, -1)
    assert target.cache_len == seq.shape[1] - 1
    cache = target.transformer.cache
    k_run = [cache.keys(i).clone() for i in range(cache.n_layers)]
    v_run = [cache.values(i).clone() for i in range(cache.n_layers)]
    ids_run = target.expert.cache.ids[:, : target.expert.cfg.window + target.cache_len].clone()
    draft = drafter.model
    n_draft = draft.cache_len
    assert n_draft == seq.shape[1] - drafter._pending.numel()
    assert drafter._pending.tolist() == committed[n_draft:]
    d_ids = draft.cache.ids[:, : draft.cfg.window + n_draft].clone()
    target.reset(1)
    target.forward(seq[:, :-1])
    for i in range(cache.n_layers):
        torch.testing.assert_close(k_run[i], cache.keys(i), rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(v_run[i], cache.values(i), rtol=1e-4, atol=1e-4)
    assert torch.equal(ids_run, target.expert.cache.ids[:, : target.expert.cfg.window + target.cache_len])
    draft.reset(1)
    draft.forward(seq[:, :n_draft])
    assert torch.equal(d_ids, draft.cache.ids[:, : draft.cfg.window + n_draft])


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_cache_after_each_round_equals_fresh_recompute(builtin, temperature: float) -> None:
    """Round by round on the built-in pair: K/V, expert ids, the draft's ids and the next logits match a recompute."""
    target, tree = builtin.target, SHAPES["branching 3,2,1"]
    drafter = TreeDrafter.from_drafter(builtin.drafter)
    committed = builtin.tokenizer.encode("Emma Woodhouse, handsome, clever")
    samp = SamplingConfig(temperature)
    gen = torch.Generator().manual_seed(4)
    with torch.inference_mode():
        for _ in range(6):
            target.reset(1)
            target.forward(torch.tensor(committed[:-1]).view(1, -1))
            drafter.begin(torch.tensor(committed))
            rd = tree_round(target, drafter, torch.tensor(committed[-1:]), tree, samp, samp, gen)
            committed += rd.emitted
            nxt = torch.tensor([[rd.next_token]])
            after = target.forward(nxt)[0, -1]
            target.rollback(target.cache_len - 1)
            torch.testing.assert_close(after, target.forward_train(torch.tensor(committed).view(1, -1))[0, -1],
                                       rtol=1e-4, atol=1e-4)
            _check_round_caches(target, drafter, committed)


def test_cache_after_a_tree_run_equals_fresh_recompute(builtin) -> None:
    """Many rounds in a row (the drafter's catch-up included): the final caches equal a recompute."""
    ids = builtin.tokenizer.encode("It is a truth universally acknowledged, that")
    drafter = TreeDrafter.from_drafter(builtin.drafter)
    res = run(tree_speculative(builtin.target, drafter, ids, 60, SHAPES["budget 12"], SamplingConfig(1.0), seed=3))
    assert any(e.kinds[-1] == "bonus" for e in res.events)  # a leaf was reached: the catch-up path ran
    with torch.inference_mode():
        _check_round_caches(builtin.target, drafter, ids + res.tokens)


# --------------------------------------------------------------------------------------------- sampling


def _root_draft(p_root: torch.Tensor, q_logits: torch.Tensor, b: int, gen: torch.Generator,
                wrong: bool = False, sampling: SamplingConfig = SamplingConfig(1.0)) -> TreeDraft:
    """b children of the root drawn without replacement from q, or the top b with one-hot q when sampling is
    greedy (wrong: every sibling keeps the parent's q)."""
    x, qs = tdraft.choose_children(q_logits.view(1, -1), b, sampling, gen, q_logits.numel())
    if wrong:
        qs = torch.softmax(q_logits, -1).expand(1, b, -1)
    return TreeDraft(chain(0) if b == 0 else branching_tree([b]), x[0], qs[0])


def _emitted_first(p_rows: torch.Tensor, draft: TreeDraft, gen: torch.Generator) -> tuple[int, int]:
    """(first emitted token, kept rank or b + 1 when every child was rejected) of one walk."""
    path, _, y, _ = recursive_walk(p_rows, draft, gen)
    return (int(draft.tokens[path[0]]), path[0] + 1) if path else (y, draft.tree.n_nodes + 1)


@pytest.mark.parametrize("b", [2, 3])
def test_recursive_rejection_keeps_p_and_ranks_follow_multidraft(b: int) -> None:
    """One position, b candidates: the emitted law is p; the kept rank's law is multidraft's 'wor' one. The mistake
    (divide by q, not by q without the earlier siblings) follows multidraft's 'wor_ratio_q' law and is rejected."""
    t_tab, d_tab = markov_tables()
    p64, q64 = (torch.softmax(torch.tensor(tab[0]), -1).numpy() for tab in (t_tab, d_tab))  # float64 laws
    p, q_logits = torch.tensor(p64).float(), torch.tensor(d_tab[0]).float()
    law, ranks = multidraft_distribution(p64, q64, b, WOR)
    wrong_law = multidraft_distribution(p64, q64, b, WOR_RATIO_Q)[0]
    assert np.abs(law - p64).max() < 1e-12 and 0.5 * np.abs(wrong_law - law).sum() > 0.05
    n, gen = 6000, torch.Generator().manual_seed(11)
    p_rows = p.view(1, -1).expand(b + 1, -1)  # the rows after the leaves are never read
    counts, rank_counts, wrong_counts = np.zeros(6), np.zeros(b + 1), np.zeros(6)
    for _ in range(n):
        x, rank = _emitted_first(p_rows, _root_draft(p, q_logits, b, gen), gen)
        counts[x] += 1
        rank_counts[rank - 1] += 1
        wrong_counts[_emitted_first(p_rows, _root_draft(p, q_logits, b, gen, wrong=True), gen)[0]] += 1
    assert chi_square_gof(counts, p64)[2] > P_REJECT
    assert chi_square_gof(rank_counts, np.append(ranks, 1 - ranks.sum()))[2] > P_REJECT
    assert chi_square_gof(wrong_counts, wrong_law)[2] > P_REJECT  # the mistake does what its law says
    assert chi_square_gof(wrong_counts, p64)[2] < P_REJECT  # and is caught at this n


def _markov_pair(v: int = 6) -> tuple[TreeMarkovLM, TreeDrafter, np.ndarray]:
    t_tab, d_tab = markov_tables(v)
    law = torch.softmax(torch.tensor(t_tab), -1).numpy()  # p(. | previous token), (V, V)
    return TreeMarkovLM(t_tab), TreeDrafter(TreeMarkovLM(d_tab)), law


PROMPT = [0]  # the state where dropping the siblings' renormalisation shows most (see the negative control)
N_RUNS = 2000


def _joint(law: np.ndarray) -> np.ndarray:
    """P(x1, x2, x3) = p(x1 | prompt) p(x2 | x1) p(x3 | x2), flattened over V^3 cells."""
    return (law[PROMPT[-1]][:, None, None] * law[:, :, None] * law[None, :, :]).reshape(-1)


def _joint_counts(target, drafter, tree: Tree, runs: int = N_RUNS, draft: SamplingConfig | None = None
                  ) -> np.ndarray:
    """Counts over V^3 cells of the first three tokens of `runs` seeded tree runs from PROMPT."""
    v = target.vocab_size
    counts = np.zeros(v**3, dtype=np.int64)
    for seed in range(runs):
        toks = run(tree_speculative(target, drafter, PROMPT, 3, tree, SamplingConfig(1.0), draft, seed=seed,
                                    topk=0)).tokens
        counts[toks[0] * v * v + toks[1] * v + toks[2]] += 1
    return counts


def _first(counts: np.ndarray, v: int = 6) -> np.ndarray:
    """Counts of the first token from the V^3 joint counts."""
    return counts.reshape(v, v * v).sum(1)


def test_deterministic_children_under_a_sampling_target_keep_p() -> None:
    """Top-b children (q one-hot, a greedy draft) verified by recursive rejection at one position still emit p."""
    t_tab, d_tab = markov_tables()
    p64 = torch.softmax(torch.tensor(t_tab[0]), -1).numpy()
    p, q_logits = torch.tensor(p64).float(), torch.tensor(d_tab[0]).float()
    gen, counts = torch.Generator().manual_seed(12), np.zeros(6)
    for _ in range(6000):
        draft = _root_draft(p, q_logits, 2, gen, sampling=SamplingConfig(0.0))
        counts[_emitted_first(p.view(1, -1).expand(3, -1), draft, gen)[0]] += 1
    assert chi_square_gof(counts, p64)[2] > P_REJECT
    assert chi_square_gof(counts, np.full(6, 1 / 6))[2] < P_REJECT  # the test has power: uniform is rejected


def test_children_over_a_sub_vocabulary_are_the_full_vocabularys_children() -> None:
    """A head over S (logits (w, |S|), column k = token ids[k]) chooses as the same logits spread over V with -inf
    outside S: the same top b under greedy; under sampling, distinct ids of S, and each q_i is q without the earlier
    siblings, renormalised, scattered back onto V (zero outside S)."""
    V, ids = 10, torch.tensor([1, 4, 5, 8])
    sub = torch.randn(3, 4, generator=torch.Generator().manual_seed(5)) * 2  # (w, |S|)
    full = torch.full((3, V), float("-inf")).index_copy_(1, ids, sub)  # (w, V)
    greedy = SamplingConfig(0.0)
    for got, want in zip(tdraft.choose_children(sub, 2, greedy, None, V, ids), tdraft.choose_children(full, 2, greedy,
                                                                                                      None, V)):
        assert torch.equal(got, want)
    q = torch.softmax(full, -1)  # (w, V)
    gen = torch.Generator().manual_seed(6)
    for _ in range(20):
        x, qs = tdraft.choose_children(sub, 3, SamplingConfig(1.0), gen, V, ids)  # (w, 3), (w, 3, V)
        assert qs.shape == (3, 3, V) and set(x.flatten().tolist()) <= set(ids.tolist())
        for row in range(3):
            assert len(set(x[row].tolist())) == 3
            left = q[row].clone()
            for i in range(3):
                torch.testing.assert_close(qs[row, i], left / left.sum())
                left[x[row, i]] = 0.0


@pytest.mark.slow
def test_tree_engine_emits_the_target_law() -> None:
    """The one engine-level run (the rule's law, its negative control and the greedy-draft case are tested at the
    rule above): through TreeDrafter, tree_round and keep, the first three tokens of N_RUNS runs follow
    p(x1) p(x2|x1) p(x3|x2) over 216 cells, and the first token alone follows p(x1)."""
    target, drafter, law = _markov_pair()
    counts = _joint_counts(target, drafter, branching_tree([3, 1]))
    assert chi_square_gof(counts, _joint(law))[2] > P_REJECT
    assert chi_square_gof(_first(counts), law[PROMPT[-1]])[2] > P_REJECT


# ------------------------------------------------------------------------------------ events and rates


def test_events_describe_the_walk(builtin) -> None:
    ids = builtin.tokenizer.encode("Emma Woodhouse")
    tree = SHAPES["branching 3,2,1"]
    res = run(tree_speculative(builtin.target, builtin.drafter, ids, 50, tree, SamplingConfig(1.0), seed=2))
    assert len(res.tokens) == 50
    for e in res.events:
        assert e.k == len(e.parent) == len(e.rank) <= tree.n_nodes
        assert e.emitted[: e.n_accepted] == [e.drafted[j] for j in e.path][: len(e.emitted)]
        assert [e.parent[j] for j in e.path] == ([-1] + e.path)[: len(e.path)]
        assert e.accept_mask == [j in e.path for j in range(e.k)]
        assert e.kinds[: e.n_accepted] == ["accepted"] * e.n_accepted
        leaf = not e.path or all(par != e.path[-1] for par in e.parent)
        assert e.kinds[-1] in (("bonus",) if e.path and leaf else ("target",) if e.k == 0 else ("correction",))
        verdicts = e.verdicts()
        assert verdicts.count("accepted") == e.n_accepted and set(e.path) <= set(e.tried)
        assert all(0 <= px <= 1 and 0 <= qx <= 1 for px, qx in zip(e.p_x, e.q_x))
        assert len(e.p_top) == e.n_accepted + 1 and e.draft_s >= 0 and e.verify_s > 0
    assert res.events[-1].k < tree.n_nodes  # the last rounds were cut to the depths still wanted


def test_measured_rates_and_prediction() -> None:
    """Counting by hand on two rounds of branching (2, 1), and the per-depth E[N] against specdec_core.trees."""
    tree = branching_tree([2, 1])  # nodes 0, 1 at depth 1 (ranks 1, 2); node 2 under 0, node 3 under 1
    mk = lambda path: tree_decode.TreeRoundEvent(  # noqa: E731
        round=0, drafted=[0] * 4, q_x=[], p_x=[], uniforms=[], accept_mask=[], n_accepted=len(path), emitted=[],
        kinds=[], draft_s=0.0, verify_s=0.0, parent=list(tree.parent), rank=list(tree.rank), path=path)
    kept, reached, pooled = measured_rank_rates([mk([1, 3]), mk([])], max_rank=2, max_depth=2)
    assert reached.tolist() == [[2, 2], [1, 0]] and kept.tolist() == [[0, 1], [1, 0]]
    np.testing.assert_allclose(pooled, [1 / 3, 1 / 2])
    rates = np.array([0.5, 0.3])
    assert expected_length_by_depth(tree, np.stack([rates, rates])) == pytest.approx(
        expected_accepted_length(tree, rates))
    assert expected_length_by_depth(tree, np.array([[0.5, 0.3], [0.9, 0.0]])) == pytest.approx(
        1 + 0.5 + 0.3 + 0.5 * 0.9 + 0.3 * 0.9)


def test_prune_keeps_whole_levels() -> None:
    tree = SHAPES["budget 12"]
    for d in range(0, int(tree.depth.max()) + 1):
        cut = prune(tree, d)
        assert cut.n_nodes == int((tree.depth <= d).sum()) and (cut.n_nodes == 0 or cut.depth.max() <= d)


def test_refusals_are_clear(builtin) -> None:
    ids = builtin.tokenizer.encode("Emma")
    with pytest.raises(ValueError, match="needs a model draft"):
        tree_speculative(builtin.target, LookupDrafter(builtin.target.vocab_size), ids, 5, chain(2))
    with pytest.raises(ValueError, match="must be a specdec_core.trees.Tree"):
        tree_speculative(builtin.target, builtin.drafter, ids, 5, [2, 2])
    with pytest.raises(ValueError, match="cannot verify a token tree"):
        tree_speculative(MarkovLM(np.zeros((V, V))), builtin.drafter, ids, 5, chain(2))
    with pytest.raises(ValueError, match="max_new_tokens must be an integer"):
        tree_speculative(builtin.target, builtin.drafter, ids, 512 - len(ids), branching_tree([2, 2]))
