"""Benchmark: what a constraint does to alpha, and what the masks cost per round.

For each pair and preset, the same prompt is decoded speculatively with and without the constraint. Per run:

* alpha measured = accepted drafts / drafted positions reached;
* alpha expected = mean of min(1, p(x)/q(x)) over the reached drafted tokens (specdec_core.measure), an
  unbiased estimate of 1 - TV(p_A, q_A) for the laws actually used (masked and renormalised under a constraint);
* tokens per target pass, masks computed per round, mask ms per round, round ms, and the masks' share of the
  round's time (masks are computed on the CPU by llguidance, k + 1 per round: k while drafting, one for the
  bonus position; masks of rejected positions are wasted work).

    .venv/bin/python bench/constraint_bench.py                        # builtin + SmolLM2 (both drafts)
    .venv/bin/python bench/constraint_bench.py --pairs builtin --json artifacts/constraint_bench.json
"""

from __future__ import annotations

import statistics
import time

import torch

from gpu_demo import constraints
from gpu_demo.decode import run, speculative
from gpu_demo.drafters import LookupDrafter
from gpu_demo.flags import (
    CliParser,
    add_gamma,
    add_json,
    add_max_new_tokens,
    add_temperature,
    add_threads,
    int_in,
    parse,
)
from gpu_demo.measure.bench import environment
from gpu_demo.measure.stats import mean_accepted_length, overall_alpha
from gpu_demo.reports import write_report
from gpu_demo.sampler import SamplingConfig
from specdec_core.measure import acceptance_probability


def expected_alpha(events) -> float:
    """Mean min(1, p(x)/q(x)) over drafted tokens whose position was reached (NaN if none)."""
    p_x = [p for e in events for p in e.p_x[: min(e.k, e.n_accepted + 1)]]
    q_x = [q for e in events for q in e.q_x[: min(e.k, e.n_accepted + 1)]]
    return float(acceptance_probability(p_x, q_x).mean()) if p_x else float("nan")


def one_run(pair, drafter, ids, constraint, gamma: int, n_new: int, sampling: SamplingConfig, seeds: int) -> dict:
    """Pooled statistics over `seeds` seeded runs of one request."""
    events, states = [], []
    for seed in range(seeds):
        res = run(speculative(pair.target, drafter, ids, n_new, gamma, sampling, seed=seed, topk=0,
                              stop_tokens=pair.info.get("stop_tokens", ()), constraint=constraint))
        events.extend(res.events)
        if constraint is not None:
            states.append(constraint.check(res.tokens)[0])
    rounds = len(events)
    round_s = [e.draft_s + e.verify_s for e in events]
    return {
        "rounds": rounds, "tokens": sum(len(e.emitted) for e in events),
        "alpha": overall_alpha(events), "alpha_expected": expected_alpha(events),
        "tokens_per_pass": mean_accepted_length(events),
        "masks_per_round": statistics.fmean(len(e.mask_sizes) for e in events) if constraint else 0.0,
        "mask_ms_per_round": 1e3 * statistics.fmean(e.mask_s for e in events),
        "round_ms": 1e3 * statistics.fmean(round_s),
        "mask_share": sum(e.mask_s for e in events) / sum(round_s),
        "mean_allowed": statistics.fmean(m for e in events for m in e.mask_sizes) if constraint else float("nan"),
        "outputs": states,
    }


def requests(pair_name: str, pair) -> list[tuple[str, str, list[int], constraints.Constraint]]:
    """(drafter label, preset key, prompt ids, constraint) for a pair's presets."""
    tok = pair.tokenizer
    out = []
    if pair_name == "builtin":
        for key, pre in constraints.CHAR_PRESETS.items():
            ids = tok.encode(pre.prompt)
            out.append((pair.drafter.name, key, ids, constraints.build(pre.kind, pre.source, tok, prefix=ids)))
    else:
        for key, pre in constraints.CHAT_PRESETS.items():
            ids = tok.encode(tok.chat(pre.prompt))
            out.append((pair.drafter.name, key, ids, constraints.build(pre.kind, pre.source, tok)))
    return out


def bench(pairs: list[str], gamma: int, n_new: int, sampling: SamplingConfig, seeds: int) -> dict:
    """Rows for every pair x draft x preset, constrained and unconstrained."""
    from gpu_demo.pairs import load_pair

    rows = []
    for name in pairs:
        pair = load_pair(name, "cpu", **({"max_len": 256} if name != "builtin" else {}))
        drafters = [pair.drafter] + ([LookupDrafter(pair.target.vocab_size)] if name != "builtin" else [])
        for drafter in drafters:
            for _, key, ids, constraint in requests(name, pair):
                for label, c in (("constrained", constraint), ("free", None)):
                    stats = one_run(pair, drafter, ids, c, gamma, n_new, sampling, seeds)
                    rows.append({"pair": name, "draft": drafter.name, "preset": key, "mode": label} | stats)
                    print(_line(rows[-1]), flush=True)
    return {"gamma": gamma, "max_new_tokens": n_new, "sampling": sampling.describe(), "seeds": seeds,
            "rows": rows, "environment": environment(torch.device("cpu")), "torch_threads": torch.get_num_threads()}


HEADER = (f"{'pair':<14} {'draft':<24} {'preset':<9} {'mode':<11} {'alpha':>6} {'a_exp':>6} {'E[N]':>5} "
          f"{'masks/rd':>8} {'mask ms':>8} {'round ms':>8} {'share':>6} {'allowed':>8}  outputs")


def _line(r: dict) -> str:
    outs = ",".join(sorted({f"{s}x{r['outputs'].count(s)}" for s in r["outputs"]}))
    return (f"{r['pair']:<14} {r['draft'][:24]:<24} {r['preset']:<9} {r['mode']:<11} {r['alpha']:>6.3f} "
            f"{r['alpha_expected']:>6.3f} {r['tokens_per_pass']:>5.2f} {r['masks_per_round']:>8.2f} "
            f"{r['mask_ms_per_round']:>8.3f} {r['round_ms']:>8.2f} {100 * r['mask_share']:>5.1f}% "
            f"{r['mean_allowed']:>8.1f}  {outs}")


def main(argv: list[str] | None = None) -> None:
    ap = CliParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", default="builtin,smollm2-draft", help="comma-separated: builtin, smollm2-draft")
    add_gamma(ap, "4", single=True)
    add_max_new_tokens(ap, 40)
    add_temperature(ap)
    ap.add_argument("--seeds", type=int_in(1, 1000), default=3, help="runs per request (pooled)")
    add_threads(ap)
    add_json(ap)
    args = parse(ap, argv)
    t0 = time.perf_counter()
    print(HEADER)
    report = bench(args.pairs.split(","), args.gamma, args.max_new_tokens, SamplingConfig(args.temperature),
                   args.seeds)
    report["bench_seconds"] = time.perf_counter() - t0
    if args.json:
        print(f"wrote {write_report(args.json, report, 'bench/constraint_bench.py', args.force)}")


if __name__ == "__main__":
    main()
