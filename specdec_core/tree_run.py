"""What trees did on a 2-core CPU, measured, set beside the H200's verify cost at batch 1.

The file `measured/cpu-eagle-trees-2026-12-07-xeon.json` is bench/eagle_trees.py's run of the smollm2-eagle pair
at T = 1 on a 2-core Xeon (provenance inside): autoregressive decoding, a chain, fixed trees and EAGLE-2's
dynamic trees, each dynamic tree scored two ways (configurations ending "measured": by the acceptance map below;
"draft-q": by the draft's q, as EAGLE-2 does), and the verify cost v(T) measured first. A tree of n nodes
verifies n + 1 tokens in one pass, so it pays where v(n + 1) stays near 1: the H200's v at batch 1
(specdec_core.h200_run) is flat to 64 tokens, this CPU's rises as a pass grows.
Every number the page shows of the run is read here.

The file `measured/smollm2-eagle-acceptance.json` is bench/eagle_calibration.py's map a+(q) of the same head (each
file's provenance names the head, and both provenance lines print it): how often the target keeps a child the head
ranks in its top 4, by the head's q, per rule; a dynamic tree (specdec_core.dynamic_tree.DynamicTree.accept) scores
its paths with it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from specdec_core import h200_run
from specdec_core.dynamic_tree import DynamicTree

DATA = Path(__file__).resolve().parent / "measured" / "cpu-eagle-trees-2026-12-07-xeon.json"
ACCEPT = DATA.parent / "smollm2-eagle-acceptance.json"
RULES = ("t1", "greedy")


@dataclass(frozen=True)
class TreeRunRow:
    """One configuration: tokens per target pass, drafting ms per round and speedup over autoregressive decoding,
    median (min, max)."""

    config: str
    tokens_per_pass: float
    draft_ms: float
    speedup: float
    speedup_lo: float
    speedup_hi: float


@lru_cache(maxsize=1)
def load(path: Path = DATA) -> dict:
    """The committed run, read once per process."""
    return json.loads(path.read_text())


def rows() -> list[TreeRunRow]:
    """Every configuration but autoregressive decoding, in the file's order."""
    return [TreeRunRow(r["config"], r["tokens_per_pass"]["median"], r["draft_ms_per_round"]["median"],
                       r["speedup"]["median"], r["speedup"]["lo"], r["speedup"]["hi"])
            for r in load()["rows"] if r["config"] != "ar"]


def best() -> TreeRunRow:
    """The configuration with the highest median speedup."""
    return max(rows(), key=lambda r: r.speedup)


def a_tree_pays() -> bool:
    """The run's best configuration is a tree (fixed or dynamic), not a chain."""
    return not best().config.startswith("chain")


def dynamic_rows(scoring: str | None = None) -> list[TreeRunRow]:
    """The dynamic-tree configurations; with scoring ('measured' or 'draft-q'), those scored that way."""
    return [r for r in rows() if r.config.startswith("dynamic")
            and (scoring is None or r.config.endswith(f" {scoring}"))]


def dynamic_tokens_per_pass(scoring: str | None = None) -> tuple[float, float]:
    """(least, most) tokens per pass over the dynamic-tree configurations (scored `scoring`)."""
    tpp = [r.tokens_per_pass for r in dynamic_rows(scoring)]
    return min(tpp), max(tpp)


def dynamic_draft_ms(scoring: str | None = None) -> tuple[float, float]:
    """(least, most) drafting ms per round over the dynamic-tree configurations (scored `scoring`)."""
    ms = [r.draft_ms for r in dynamic_rows(scoring)]
    return min(ms), max(ms)


def dynamic_speedup(scoring: str | None = None) -> tuple[float, float]:
    """(least, most) median speedup over the dynamic-tree configurations (scored `scoring`)."""
    x = [r.speedup for r in dynamic_rows(scoring)]
    return min(x), max(x)


def cpu_v() -> NDArray[np.float64]:
    """v(T) for T = 1, 2, ... on the CPU, batch 1 (v(1) = 1)."""
    return np.asarray(load()["v"], dtype=np.float64)


def h200_v_batch1() -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """(T, v(T)) of the same target on one H200 at batch 1, from specdec_core.h200_run."""
    p = h200_run.verify_points()
    at_one = p.batch == 1
    return p.tokens[at_one], p.v[at_one]


def h200_span() -> tuple[int, int, float, float]:
    """(least T, most T, least v, most v) of the H200's batch-1 verify points."""
    tokens, v = h200_v_batch1()
    return int(tokens.min()), int(tokens.max()), float(v.min()), float(v.max())


def provenance_line() -> str:
    """One line a page prints under the run's numbers."""
    p = load()["provenance"]
    return (f"measured with {p['head']} on {p['machine']} on {p['date']} (torch {p['torch']}), the project at commit "
            f"{p['commit']}: {p['command']}; file specdec_core/measured/{DATA.name}")


def accept_map(rule: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The measured map a+(q) of smollm2-eagle's top children under `rule` ('t1' or 'greedy'): (q knots, a+)."""
    if rule not in RULES:
        raise ValueError(f"the acceptance map is measured for the rules {', '.join(RULES)}; got {rule!r}")
    m = load(ACCEPT)["rules"][rule]
    return tuple(m["knots"]), tuple(m["values"])


def kept_at(q: float, rule: str = "t1") -> float:
    """a+(q): how often the target keeps a child the head gives probability q, under `rule` (the measured map)."""
    return float(DynamicTree(accept=accept_map(rule)).edge(q))


def top_child_acceptance(position: int = 1) -> dict[str, float]:
    """At draft `position`: what a sampled draft is kept with at T = 1 (1 - TV(p, q)) beside the head's top child
    (and its top two) at T = 1 and under the greedy rule, from the acceptance map's file."""
    return dict(load(ACCEPT)["per_position"][str(position)])


def expected_by_rank(rule: str) -> tuple[float, ...]:
    """Mean a+ of the head's rank-r child (r = 1..4) under `rule`, averaged over the file's draft positions."""
    if rule not in RULES:
        raise ValueError(f"the acceptance map is measured for the rules {', '.join(RULES)}; got {rule!r}")
    per = [np.asarray(v[f"by_rank_{rule}"], dtype=np.float64) for v in load(ACCEPT)["per_position"].values()]
    return tuple(float(x) for x in np.mean(per, axis=0))


def accept_provenance_line() -> str:
    """One line a page prints under the acceptance map's numbers."""
    p = load(ACCEPT)["provenance"]
    return (f"acceptance map of {p['head']}, measured on {p['machine']} on {p['date']} (torch {p['torch']}), the "
            f"project at commit {p['commit']}: {p['command']}; file specdec_core/measured/{ACCEPT.name}")
