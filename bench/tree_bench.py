"""Benchmark: live token trees on the built-in pair, measured against what the tree algebra predicts.

For each tree shape the same prompts are decoded by gpu_demo.tree_decode (and by plain autoregressive decoding, the
baseline), repeats interleaved (the order reverses on odd repeats, so drift hits every shape alike). Per shape:

* E[N] measured = tokens / target passes; predicted = specdec_core.trees.expected_accepted_length(tree, a_r) with the
  per-rank rates a_r counted in the same runs (the positional model), and with rates per depth a_r(d), averaged
  over the rounds' trees (the last rounds of a request are cut to the depths still wanted). On a chain the per-depth
  figure reproduces the measured E[N] by construction (a telescoping product); on a tree it tests the model;
* c_tree = draft seconds per round / the baseline's seconds per token, v = verify seconds per round / the same
  (as specdec_core.tree_cost defines them); predicted from isolated pass times by tree_cost's formula,
  c_tree = sum_d t_draft(w_d) / t_target(1) and v = t_target(n + 1) / t_target(1), with w_d = trees.draft_widths;
* speedup measured = baseline wall s/token / tree wall s/token; predicted = E[N] / (c_tree + v), both predicted.

Medians over repeats with min-max. One torch thread by default (the live page's setting on a shared CPU).

    .venv/bin/python bench/tree_bench.py                               # greedy, 4 shapes, 3 repeats
    .venv/bin/python bench/tree_bench.py --temperature 1 --json artifacts/tree_bench_t1.json
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import torch

from gpu_demo.decode import autoregressive, run
from gpu_demo.flags import CliParser, add_json, add_max_new_tokens, add_temperature, add_threads, parse
from gpu_demo.measure.bench import environment
from gpu_demo.measure.tree_stats import expected_length_by_depth, measured_rank_rates
from gpu_demo.pairs import load_pair
from gpu_demo.reports import write_report
from gpu_demo.sampler import SamplingConfig
from gpu_demo.tree_decode import tree_speculative, verify_mask
from specdec_core.trees import (
    MAX_RANK,
    Tree,
    branching_tree,
    chain,
    draft_widths,
    expected_accepted_length,
    greedy_tree,
    verify_tokens,
)

PROMPTS = ("It is a truth universally acknowledged, that", "Emma Woodhouse, handsome, clever, and rich,",
           "\"My dear Mr. Bennet,\" said his lady to him one day,")
PILOT_PROMPT = "Sir Walter Elliot, of Kellynch Hall, in Somersetshire,"


def pilot_rates(pair, sampling: SamplingConfig, n_new: int) -> np.ndarray:
    """a_1..a_4 pooled over a pilot run with four children per node (a prompt outside the bench's own)."""
    ids = pair.tokenizer.encode(PILOT_PROMPT)
    ev = run(tree_speculative(pair.target, pair.drafter, ids, n_new, branching_tree([4, 4, 4]), sampling, seed=99,
                              topk=0)).events
    return np.nan_to_num(measured_rank_rates(ev, 4, 3)[2])


def shapes(rates: np.ndarray) -> dict[str, Tree]:
    """The bench's trees: a chain of 4, a branching tree, and node budgets placed by the pilot's rates (8 nodes at
    any depth, which the built-in pair's high a_1 makes a chain; 12 nodes within depth 4, a real tree)."""
    return {"chain 4": chain(4), "branching 3,2,1": branching_tree([3, 2, 1]),
            "budget 8": greedy_tree(rates, 8), "budget 12, d<=4": greedy_tree(rates, 12, max_depth=4)}


CLOCKS = {"cpu": time.process_time, "wall": time.perf_counter}


def pass_seconds(model, n_tokens: int, mask: torch.Tensor | None, context: int, reps: int, clock) -> float:
    """Median seconds of one tree-masked forward of n_tokens new tokens after `context` cached ones (then rolled
    back), positions all at the cache's end; one untimed warm-up."""
    model.reset(1)
    model.forward(torch.zeros(1, context, dtype=torch.long))
    idx = torch.zeros(1, n_tokens, dtype=torch.long)
    pos = torch.full((n_tokens,), context, dtype=torch.long)
    times = []
    for _ in range(reps + 1):
        t0 = clock()
        model.forward(idx, pos, mask) if mask is not None else model.forward(idx)
        times.append(clock() - t0)
        model.rollback(context)
    return statistics.median(times[1:])


def predicted_costs(pair, tree: Tree, context: int, reps: int, clock) -> tuple[float, float]:
    """(c_tree, v) from isolated pass times, by specdec_core.tree_cost's formula."""
    t1 = pass_seconds(pair.target, 1, None, context, reps, clock)
    verify = pass_seconds(pair.target, verify_tokens(tree), verify_mask(tree), context, reps, clock)
    draft = sum(pass_seconds(pair.drafter.model, int(w), torch.eye(int(w), dtype=torch.bool), context, reps, clock)
                for w in draft_widths(tree))
    return draft / t1, verify / t1


def timed(gen, clock) -> tuple[list, list[float]]:
    """The events of a generator and the clock's seconds spent producing each one."""
    events, secs, t0 = [], [], clock()
    for e in gen:
        t1 = clock()
        events.append(e)
        secs.append(t1 - t0)
        t0 = clock()
    return events, secs


def one_pass(pair, tree: Tree | None, sampling: SamplingConfig, n_new: int, seed: int, clock) -> tuple[list, list]:
    """(events, seconds per event) over every prompt; tree None = autoregressive."""
    events, secs = [], []
    for i, text in enumerate(PROMPTS):
        ids = pair.tokenizer.encode(text)
        gen = (autoregressive(pair.target, ids, n_new, sampling, seed=seed + i, topk=0) if tree is None else
               tree_speculative(pair.target, pair.drafter, ids, n_new, tree, sampling, seed=seed + i, topk=0))
        ev, s = timed(gen, clock)
        events += ev
        secs += s
    return events, secs


def split_costs(events: list, secs: list[float], t_step: float) -> tuple[float, float]:
    """(c_tree, v): each round's clock seconds split between draft and verify as the events' own timers split them,
    in units of the baseline's step."""
    draft = [s * e.draft_s / (e.draft_s + e.verify_s) for e, s in zip(events, secs)]
    return statistics.fmean(draft) / t_step, (statistics.fmean(secs) - statistics.fmean(draft)) / t_step


def spread(xs: list[float]) -> dict[str, float]:
    """Median, min and max."""
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs)}


def bench(pair, sampling: SamplingConfig, n_new: int, repeats: int, reps: int, clock) -> dict:
    """Interleaved repeats of the baseline and every shape; rows with measured and predicted figures."""
    rates = pilot_rates(pair, sampling, n_new)
    trees = shapes(rates)
    names = ["autoregressive", *trees]
    runs: dict[str, list] = {n: [] for n in names}
    for r in range(repeats):
        for name in names if r % 2 == 0 else names[::-1]:
            runs[name].append(one_pass(pair, trees.get(name), sampling, n_new, 100 * r, clock))
    t_base = [statistics.fmean(secs) for _, secs in runs["autoregressive"]]  # s per plain step (= per token)
    rows = []
    for name, tree in trees.items():
        evs = [e for ev, _ in runs[name] for e in ev]
        depth = int(tree.depth.max())
        kept, reached, pooled = measured_rank_rates(evs, MAX_RANK, depth)
        a = np.nan_to_num(pooled)
        a = a / a.sum() if a.sum() > 1 else a  # counted per rank with different denominators: keep sum <= 1
        with np.errstate(invalid="ignore", divide="ignore"):
            by_depth = np.where(reached > 0, kept / np.maximum(reached, 1), np.nan)
        c_pred, v_pred = predicted_costs(pair, tree, 64, reps, clock)
        cut = [Tree(tuple(e.parent), tuple(e.rank)) for e in evs]  # each round's tree (the last ones are cut)
        e_pred = statistics.fmean(expected_accepted_length(t, a) for t in cut)
        per = []
        for (ev, secs), tb in zip(runs[name], t_base):
            tokens = sum(len(e.emitted) for e in ev)
            per.append((tokens / len(ev), *split_costs(ev, secs, tb), tb / (sum(secs) / tokens)))
        rows.append({
            "shape": name, "nodes": tree.n_nodes, "depth": depth, "parent": list(tree.parent),
            "rank": list(tree.rank), "rounds": len(evs), "rank_rates": a.tolist(),
            "rank_rates_by_depth": [[None if np.isnan(x) else float(x) for x in row] for row in by_depth],
            "e_n": {**spread([p[0] for p in per]), "pooled": sum(len(e.emitted) for e in evs) / len(evs)},
            "e_n_pred": e_pred,
            "e_n_pred_by_depth": statistics.fmean(expected_length_by_depth(t, by_depth) for t in cut),
            "e_n_pred_uncut": expected_accepted_length(tree, a),
            "c": spread([p[1] for p in per]), "c_pred": c_pred, "v": spread([p[2] for p in per]), "v_pred": v_pred,
            "speedup": spread([p[3] for p in per]), "speedup_pred": e_pred / (c_pred + v_pred),
        })
    return {"pilot_rates": rates.tolist(), "t_target_ms": spread([1e3 * t for t in t_base]),
            "base_tokens_per_s": spread([1 / t for t in t_base]), "rows": rows}


def _fmt(sp: dict, key: str = "median") -> str:
    """'median (min-max)' (or another centre, e.g. the pooled value), 2 decimals."""
    return f"{sp[key]:.2f} ({sp['min']:.2f}-{sp['max']:.2f})"


def table(report: dict) -> str:
    """The printed table: measured (median, min-max over repeats) beside predicted."""
    head = (f"{'shape':<17}{'n':>4}{'E[N] meas':>20}{'pred':>7}{'by d':>7}{'c meas':>20}{'pred':>7}"
            f"{'v meas':>20}{'pred':>7}{'speedup meas':>20}{'pred':>7}")
    lines = [head, "-" * len(head)]
    for r in report["rows"]:
        lines.append(f"{r['shape']:<17}{r['nodes']:>4}{_fmt(r['e_n'], 'pooled'):>20}{r['e_n_pred']:>7.2f}"
                     f"{r['e_n_pred_by_depth']:>7.2f}{_fmt(r['c']):>20}{r['c_pred']:>7.2f}{_fmt(r['v']):>20}"
                     f"{r['v_pred']:>7.2f}{_fmt(r['speedup']):>20}{r['speedup_pred']:>7.2f}")
    lines.append("E[N] meas: all rounds pooled (min-max of the repeats); c, v, speedup: median (min-max)")
    lines.append(f"pilot a_r = {np.round(report['pilot_rates'], 3).tolist()}; target step "
                 f"{_fmt(report['t_target_ms'])} ms; baseline {_fmt(report['base_tokens_per_s'])} tokens/s "
                 f"({report.get('clock', 'cpu')} clock)")
    for r in report["rows"]:
        ranks = int(np.max(r["rank"], initial=1))
        depth = [[None if x is None else round(x, 2) for x in row[:ranks]] for row in r["rank_rates_by_depth"]]
        lines.append(f"  {r['shape']}: a_r pooled {np.round(r['rank_rates'][:ranks], 3).tolist()}, by depth {depth}")
    return "\n".join(lines)


def main() -> None:
    ap = CliParser(description=__doc__.split("\n")[0])
    add_temperature(ap, 0.0)
    add_max_new_tokens(ap, 200, "--tokens")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pass-reps", type=int, default=50, help="timed calls per isolated pass")
    add_threads(ap)
    ap.add_argument("--clock", choices=list(CLOCKS), default="cpu",
                    help="cpu: process time (steady on a shared machine, 1 thread); wall: perf_counter")
    add_json(ap)
    args = parse(ap)
    pair = load_pair("builtin", "cpu")
    sampling = SamplingConfig(args.temperature)
    with torch.inference_mode():
        report = bench(pair, sampling, args.max_new_tokens, args.repeats, args.pass_reps, CLOCKS[args.clock])
    report |= {"clock": args.clock, "temperature": args.temperature, "tokens_per_prompt": args.max_new_tokens,
               "prompts": list(PROMPTS), "repeats": args.repeats, "environment": environment(torch.device("cpu"))}
    print(table(report))
    if args.json:
        print(f"wrote {write_report(args.json, report, 'bench/tree_bench.py', args.force)}")


if __name__ == "__main__":
    main()
