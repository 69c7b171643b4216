"""One verification step for the chain and the tree (gpu_demo.sampler's accepts / residual / try_in_turn), one
fallback, and public helpers between the engine's modules."""

from __future__ import annotations

import ast
from pathlib import Path

import torch
from doubles import TreeMarkovLM, markov_tables

from gpu_demo.decode import run, speculative
from gpu_demo.drafters import ModelDrafter
from gpu_demo.sampler import SamplingConfig, residual, try_in_turn
from gpu_demo.tree_decode import tree_speculative
from specdec_core.trees import chain

ROOT = Path(__file__).resolve().parents[1]


def test_an_empty_residual_leaves_the_law_still_owed_not_p() -> None:
    """p = [.4, .4, .2, 0]. Candidate 1 (x = 2, q one-hot) is rejected at u = .5: r = (p - q1)+ = [.5, .5, 0, 0].
    Candidate 2's q covers r (a law rounded above 1), so its rejection leaves an empty residual: the correction is
    drawn from r, where the earlier rejection already took token 2 out, not from p (which would bring it back)."""
    p = torch.tensor([0.4, 0.4, 0.2, 0.0])
    q = torch.tensor([[0.0, 0.0, 1.0, 0.0], [0.5, 1.0, 0.0, 0.0]])
    kept, r = try_in_turn(p, [2, 1], q, [0.5, 0.9])
    assert kept == -1
    torch.testing.assert_close(r, torch.tensor([0.5, 0.5, 0.0, 0.0]))
    # the same step keeps a candidate it should: u = 0.1 < r(1) / q2(1) = 0.5
    assert try_in_turn(p, [2, 1], q, [0.5, 0.1])[0] == 1


def test_residual_is_normalised_and_batched() -> None:
    p = torch.tensor([[0.5, 0.3, 0.2], [0.5, 0.5, 0.0]])
    q = torch.tensor([[0.2, 0.3, 0.5], [0.5, 0.5, 0.0]])
    torch.testing.assert_close(residual(p, q), torch.tensor([[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]]))  # row 2: p == q


def test_a_chain_is_a_one_child_tree() -> None:
    """The chain round and the tree walk over chain(3) take the same steps: the same tokens from the same seed."""
    t_tab, d_tab = markov_tables()
    for seed in range(20):
        a = run(speculative(TreeMarkovLM(t_tab), ModelDrafter(TreeMarkovLM(d_tab)), [0], 12, 3,
                            SamplingConfig(1.0), seed=seed)).tokens
        b = run(tree_speculative(TreeMarkovLM(t_tab), ModelDrafter(TreeMarkovLM(d_tab)), [0], 12, chain(3),
                                 SamplingConfig(1.0), seed=seed)).tokens
        assert a == b, seed


def _private_imports(package: str) -> list[str]:
    """'file: module.name' for every `from <project module> import _name` under package."""
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith(package):
                found += [f"{path.relative_to(ROOT)}: {node.module}.{a.name}" for a in node.names
                          if a.name.startswith("_")]
    return found


def test_the_engine_imports_no_private_helper_across_modules() -> None:
    assert _private_imports("gpu_demo") == []
