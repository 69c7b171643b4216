"""Benchmark: the feature-level draft (smollm2-eagle) as a chain and as token trees, against autoregressive decoding.

The same held-out chat prompts (gpu_demo.training.eagle_data.BENCH_CHAT_PROMPTS) and seeds for every configuration:
autoregressive decoding, the chain engine the live page runs (gpu_demo.decode.speculative) at each gamma, and the
tree engine (gpu_demo.tree_decode.tree_speculative, EagleTreeDrafter) for each branching shape b_1,..,b_D (b_d
children per node that gets children at depth d). Configurations are interleaved in every repeat, the order
reversed on odd repeats. Per configuration: tokens per target pass, draft and verify ms per round (the engine's
synced timers), ms per token (wall, prefill included) and speedup = autoregressive ms/token / its ms/token in the
same repeat; median (min-max) over repeats. A tree verifies n + 1 tokens in one pass, so it pays where v(n + 1)
stays near 1 (bench/verify_cost.py measures v on this machine). A dynamic tree (EAGLE-2, --dynamic top_k,depth,budget)
sizes itself each round from v(T) measured here first (tree-masked passes, T = 1..budget + 1, batch 1) and the
head's c measured on a chain run (specdec_core.dynamic_tree), and scores a path by the head's measured acceptance
map a+(q) for the rule (specdec_core.tree_run.accept_map, bench/eagle_calibration.py; T = 0 or 1 only).
--accept draft-q scores it by the draft's own probabilities instead, as EAGLE-2 does; --accept both runs each
dynamic tree both ways.

    .venv/bin/python bench/eagle_trees.py --repeats 3 --json bench/eagle_trees_t1.json
"""

from __future__ import annotations

from dataclasses import asdict, replace

import torch

from gpu_demo.decode import autoregressive, speculative
from gpu_demo.device import resolve_device, timed_once
from gpu_demo.flags import (
    CliParser,
    add_device,
    add_gamma,
    add_json,
    add_max_new_tokens,
    add_temperature,
    add_threads,
    parse,
)
from gpu_demo.measure.batch import measure_v
from gpu_demo.measure.bench import environment
from gpu_demo.pairs import load_pair
from gpu_demo.reports import write_report
from gpu_demo.sampler import SamplingConfig
from gpu_demo.training.eagle_data import BENCH_CHAT_PROMPTS
from gpu_demo.tree_decode import tree_speculative
from specdec_core.dynamic_tree import DynamicTree
from specdec_core.repeats import check_repeats, spread
from specdec_core.tree_run import accept_map, expected_by_rank
from specdec_core.trees import branching_tree, greedy_tree, parse_ints


def run_config(pair, name: str, prompts: list[list[int]], n_new: int, sampling: SamplingConfig,
               dynamic: dict[str, DynamicTree] | None = None) -> dict:
    """One pass over the prompts with configuration `name` ('ar', 'chain g', 'tree b1,..', 'dynamic k,d,n'): totals."""
    events = []

    def decode_all() -> None:
        for i, ids in enumerate(prompts):
            if name == "ar":
                gen = autoregressive(pair.target, ids, n_new, sampling, seed=i, topk=0)
            elif name.startswith("chain"):
                gen = speculative(pair.target, pair.drafter, ids, n_new, int(name.split()[1]), sampling, seed=i,
                                  topk=0)
            elif name.startswith("dynamic"):
                gen = tree_speculative(pair.target, pair.drafter, ids, n_new, dynamic[name], sampling, seed=i, topk=0)
            else:
                shape = branching_tree(parse_ints(name.split()[1], "shape"))
                gen = tree_speculative(pair.target, pair.drafter, ids, n_new, shape, sampling, seed=i, topk=0)
            events.extend(gen)

    wall = timed_once(decode_all, pair.device)
    return {"tokens": sum(len(e.emitted) for e in events), "passes": len(events), "wall_s": wall,
            "draft_s": sum(e.draft_s for e in events), "verify_s": sum(e.verify_s for e in events)}


def device_costs(pair, prompt: list[int], budget: int, rule: str) -> tuple[tuple[float, ...], float]:
    """(v(T) for T = 1..budget + 1 at batch 1, the head's c): v from measure_v at context 256 on tree-masked passes
    (of greedy_tree's T - 1 nodes for the head's measured acceptance by rank under `rule`: the shape a dynamic tree
    grows toward), c from a chain run's draft time per drafted token over the target's decode step."""
    rates = expected_by_rank(rule)
    v = [1.0] + [measure_v(pair.target, t - 1, [1], context=256, repeats=3, tree=greedy_tree(rates, t - 1))[0][3]
                 for t in range(2, budget + 2)]
    step_s = measure_v(pair.target, 1, [1], context=256, repeats=3)[0][1]
    events = list(speculative(pair.target, pair.drafter, prompt, 32, 3, SamplingConfig(0.0), seed=0, topk=0))
    c = sum(e.draft_s for e in events) / max(1, sum(len(e.drafted) for e in events)) / step_s
    return tuple(v), c


def summarise(runs: dict[str, list[dict]]) -> list[dict]:
    """Per configuration: tokens per pass, ms per round (draft, verify), ms per token, speedup over AR (spreads)."""
    ar = [r["wall_s"] / r["tokens"] for r in runs["ar"]]
    rows = []
    for name, rs in runs.items():
        ms_tok = [1e3 * r["wall_s"] / r["tokens"] for r in rs]
        rows.append({
            "config": name,
            "tokens_per_pass": asdict(spread([r["tokens"] / r["passes"] for r in rs])),
            "draft_ms_per_round": asdict(spread([1e3 * r["draft_s"] / r["passes"] for r in rs])),
            "verify_ms_per_round": asdict(spread([1e3 * r["verify_s"] / r["passes"] for r in rs])),
            "ms_per_token": asdict(spread(ms_tok)),
            "speedup": asdict(spread([a * 1e3 / m for a, m in zip(ar, ms_tok)])),
            "runs": rs,
        })
    return rows


def _fmt(s: dict, digits: int = 2) -> str:
    return f"{s['median']:.{digits}f} ({s['lo']:.{digits}f}-{s['hi']:.{digits}f})"


def table(rows: list[dict]) -> str:
    """The printed table, one line per configuration."""
    head = f"{'config':<24}{'tokens/pass':>20}{'draft ms/rnd':>20}{'verify ms/rnd':>22}{'ms/token':>22}{'speedup':>20}"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['config']:<24}{_fmt(r['tokens_per_pass']):>20}{_fmt(r['draft_ms_per_round'], 1):>20}"
                     f"{_fmt(r['verify_ms_per_round'], 1):>22}{_fmt(r['ms_per_token'], 1):>22}"
                     f"{_fmt(r['speedup']):>20}")
    best = max((r for r in rows if r["config"] != "ar"), key=lambda r: r["speedup"]["median"])
    lines.append(f"best: {best['config']} at {_fmt(best['speedup'])}x (median (min-max) over repeats)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    """CLI."""
    ap = CliParser(description=__doc__.splitlines()[0])
    add_gamma(ap, "2,3")
    ap.add_argument("--trees", default="2;3;2,1;2,2;3,2", help="branching shapes, ';'-separated (b1,b2,..)")
    ap.add_argument("--dynamic", default="4,4,8;4,5,16", help="dynamic trees top_k,depth,budget; ';'-separated")
    ap.add_argument("--accept", choices=("measured", "draft-q", "both"), default="measured",
                    help="score a dynamic tree's paths by the head's measured acceptance map (T = 0 or 1), by the "
                         "draft's q (EAGLE-2), or run both")
    add_temperature(ap)
    add_max_new_tokens(ap, 64)
    ap.add_argument("--prompts", type=int, default=len(BENCH_CHAT_PROMPTS))
    ap.add_argument("--repeats", type=int, default=3)
    add_threads(ap)
    add_device(ap)
    add_json(ap)
    args = parse(ap, argv)
    check_repeats(args.repeats)
    shapes = [s.strip() for s in args.trees.split(";") if s.strip()]
    for s in shapes:
        branching_tree(parse_ints(s, "shape"))  # ValueError with the allowed range, before any model loads
    sampling = SamplingConfig(args.temperature)
    rule = "greedy" if sampling.greedy else "t1"
    if args.accept != "draft-q" and sampling.temperature not in (0.0, 1.0):
        ap.error(f"the acceptance map is measured at T = 0 and 1; at T = {args.temperature} pass --accept draft-q")
    ways = ("measured", "draft-q") if args.accept == "both" else (args.accept,)
    scoring = {"measured": lambda: {"accept": accept_map(rule), "expect": expected_by_rank(rule)}, "draft-q": dict}
    specs = {f"dynamic {s.strip()}" + (f" {w}" if len(ways) > 1 else ""):
             DynamicTree(*parse_ints(s, "dynamic tree"), **scoring[w]())
             for s in args.dynamic.split(";") if s.strip() for w in ways}
    pair = load_pair("smollm2-eagle", resolve_device(args.device), max_len=512)
    prompts = [pair.tokenizer.encode(pair.tokenizer.chat(p)) for p in BENCH_CHAT_PROMPTS[: args.prompts]]
    names = ["ar", *(f"chain {g}" for g in args.gamma), *(f"tree {s}" for s in shapes), *specs]
    runs: dict[str, list[dict]] = {n: [] for n in names}
    with torch.inference_mode():
        run_config(pair, "ar", prompts[:1], 8, sampling)  # warm-up (allocations, kernels)
        v, c = device_costs(pair, prompts[0], max((s.budget for s in specs.values()), default=0), rule)
        dynamic = {n: replace(s, v=v[: s.budget + 1], c=c) for n, s in specs.items()}
        for r in range(args.repeats):
            for name in names if r % 2 == 0 else names[::-1]:
                runs[name].append(run_config(pair, name, prompts, args.max_new_tokens, sampling, dynamic))
    rows = summarise(runs)
    print(f"smollm2-eagle on {pair.device}, T = {args.temperature}, {len(prompts)} chat prompts x "
          f"{args.max_new_tokens} tokens, {args.threads} thread(s), {args.repeats} interleaved repeats")
    print(table(rows))
    print("this device: v(T) = " + ", ".join(f"{x:.2f}" for x in v) + f" for T = 1..{len(v)}; the head's c = {c:.3f}")
    report = {"v": list(v), "c": c, "accept": {n: {"map": [list(a) for a in s.accept], "expect": list(s.expect)}
                                                for n, s in specs.items()},
              "temperature": args.temperature, "max_new_tokens": args.max_new_tokens,
              "prompts": len(prompts),
              "repeats": args.repeats, "threads": args.threads, "rows": rows, "environment": environment(pair.device)}
    if args.json:
        print(f"wrote {write_report(args.json, report, 'bench/eagle_trees.py', args.force)}")
    return report


if __name__ == "__main__":
    main()
