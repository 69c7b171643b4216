"""Measured speedup of speculative over autoregressive decoding, beside the algebra's prediction.

Everything is read from the decoder's own events (nothing is timed twice):

* target step t_T = mean ``verify_s`` of the autoregressive rounds (one forward over one token plus
  sampling): the unit of cost;
* c = (draft seconds / drafted tokens) / t_T and v = mean ``verify_s`` of speculative rounds / t_T;
* alpha_j per draft position, and the mean number of tokens per target forward;
* predicted speedup = ``specdec_core.algebra.speedup_positional(alpha_j, c, v)``;
* measured speedup = (autoregressive seconds per token) / (speculative seconds per token), wall clock
  over the decoding loop (prefill excluded), the same prompts and lengths, in one process.

Each repeat runs autoregressive, then every gamma, then autoregressive again (the baseline is the mean
of the two, so drift in a shared machine's load hits both sides); the report quotes medians over
repeats.
"""

from __future__ import annotations

import math
import platform
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from gpu_demo.constraints import Constraint, build
from gpu_demo.decode import RoundEvent, autoregressive, run, speculative
from gpu_demo.measure.stats import alpha_per_position, mean_accepted_length, overall_alpha
from gpu_demo.pairs import Pair
from gpu_demo.sampler import SamplingConfig
from specdec_core.algebra import speedup_positional

BUILTIN_PROMPTS = (
    "It is a truth universally acknowledged, that",
    "Emma Woodhouse, handsome, clever, and rich,",
    "\"My dear Mr. Bennet,\" said his lady to him one day,",
    "CHAPTER I\n\nSir Walter Elliot, of Kellynch Hall,",
)


@dataclass
class RunStats:
    """Totals of one decoding run over all prompts."""

    seconds: float  # decoding wall time, prefill excluded
    tokens: int
    events: list[RoundEvent]


def _decode_all(pair: Pair, prompts: Sequence[list[int]], n_new: int, sampling: SamplingConfig,
                gamma: int | None, seed: int, constraints: Sequence[Constraint | None] = ()) -> RunStats:
    """Autoregressive (gamma None) or speculative runs over every prompt; wall time without prefill."""
    secs, toks, evs = 0.0, 0, []
    for i, ids in enumerate(prompts):
        c = constraints[i] if constraints else None  # issue 18: one constraint per prompt (its prefix may differ)
        if gamma is None:
            gen = autoregressive(pair.target, ids, n_new, sampling, seed=seed + i, topk=5, constraint=c)
        else:
            gen = speculative(pair.target, pair.drafter, ids, n_new, gamma, sampling, seed=seed + i, topk=5,
                              constraint=c)
        res = run(gen)
        secs += res.wall_s - res.events[0].prefill_s
        toks += len(res.tokens)
        evs.extend(res.events)
    return RunStats(secs, toks, evs)


def _row(gamma: int, spec: RunStats, ar_s_per_tok: float, t_target: float) -> dict:
    """Per-gamma measurements and the algebra's prediction from them."""
    ev = spec.events
    drafted = sum(e.k for e in ev)
    draft_step = sum(e.draft_s for e in ev) / max(1, drafted)
    c = draft_step / t_target
    v = statistics.fmean(e.verify_s for e in ev) / t_target
    alphas = alpha_per_position(ev, gamma)
    alphas_f = [0.0 if math.isnan(a) else a for a in alphas]
    predicted = float(speedup_positional(alphas_f, c, v))
    measured = ar_s_per_tok / (spec.seconds / spec.tokens)
    return {
        "gamma": gamma, "alpha_per_position": alphas, "alpha": overall_alpha(ev),
        "mean_accepted_length": mean_accepted_length(ev), "c": c, "v": v,
        "draft_step_ms": 1e3 * draft_step, "spec_ms_per_token": 1e3 * spec.seconds / spec.tokens,
        "predicted_speedup": predicted, "measured_speedup": measured, "measured_over_predicted": measured / predicted,
        "mask_ms_per_round": 1e3 * statistics.fmean(e.mask_s for e in ev),  # 0 without a constraint
    }


def _median_rows(rows: list[dict]) -> dict:
    """Median of every numeric field across repeats (alpha_per_position elementwise, NaN-aware)."""
    out = {"gamma": rows[0]["gamma"]}
    for key in rows[0]:
        if key == "gamma":
            continue
        if key == "alpha_per_position":
            cols = zip(*(r[key] for r in rows))
            out[key] = [statistics.median(x) if not any(math.isnan(y) for y in x) else math.nan for x in cols]
        else:
            out[key] = statistics.median(r[key] for r in rows)
    return out


def measure(
    pair: Pair,
    prompts: Sequence[str] = BUILTIN_PROMPTS,
    gammas: Sequence[int] = range(1, 9),
    sampling: SamplingConfig = SamplingConfig(),
    max_new_tokens: int = 200,
    repeats: int = 3,
    seed: int = 0,
    progress: bool = True,
    constraint: tuple[str, str] | None = None,
    constrain_prompt: bool = False,
) -> dict:
    """Benchmark autoregressive vs speculative on `pair` for each gamma; medians over `repeats`.

    ``constraint`` = (kind, source) decodes every run under it (gpu_demo.constraints.build; with
    ``constrain_prompt`` each prompt is the start of the constrained text).
    """
    ids = [pair.tokenizer.encode(p) for p in prompts]
    cons = [build(*constraint, pair.tokenizer, pair.target.vocab_size, prefix=i if constrain_prompt else ())
            for i in ids] if constraint else []
    with torch.inference_mode():
        _decode_all(pair, ids[:1], 20, sampling, None, seed, cons[:1])  # warm-up: allocations, caches
        _decode_all(pair, ids[:1], 20, sampling, max(gammas), seed, cons[:1])
    per_gamma: dict[int, list[dict]] = {g: [] for g in gammas}
    ar_rows: list[dict] = []
    bar = None
    if progress:
        from tqdm import tqdm
        bar = tqdm(total=repeats * (len(gammas) + 2), desc="bench", mininterval=1.0)
    t_start = time.perf_counter()
    for rep in range(repeats):
        s = seed + 1000 * rep
        ar1 = _decode_all(pair, ids, max_new_tokens, sampling, None, s, cons)
        bar and bar.update()
        specs = {}
        for g in gammas:
            specs[g] = _decode_all(pair, ids, max_new_tokens, sampling, g, s, cons)
            bar and bar.update()
        ar2 = _decode_all(pair, ids, max_new_tokens, sampling, None, s, cons)
        bar and bar.update()
        ar_s_per_tok = (ar1.seconds + ar2.seconds) / (ar1.tokens + ar2.tokens)
        t_target = statistics.fmean(e.verify_s for e in ar1.events + ar2.events)
        ar_rows.append({"ar_ms_per_token": 1e3 * ar_s_per_tok, "target_step_ms": 1e3 * t_target})
        for g in gammas:
            per_gamma[g].append(_row(g, specs[g], ar_s_per_tok, t_target))
    if bar:
        bar.close()
    rows = [_median_rows(per_gamma[g]) for g in gammas]
    best = max(rows, key=lambda r: r["measured_speedup"])
    return {
        "pair": pair.name, "device": str(pair.device), "sampling": sampling.__dict__ | {"greedy": sampling.greedy},
        "constraint": list(constraint) if constraint else None,
        "prompts": list(prompts), "max_new_tokens": max_new_tokens, "repeats": repeats, "seed": seed,
        "ar_ms_per_token": statistics.median(r["ar_ms_per_token"] for r in ar_rows),
        "target_step_ms": statistics.median(r["target_step_ms"] for r in ar_rows),
        "rows": rows, "per_repeat": {str(g): per_gamma[g] for g in gammas},
        "best_gamma": best["gamma"], "best_measured_speedup": best["measured_speedup"],
        "best_measured_over_predicted": best["measured_over_predicted"],
        "bench_seconds": time.perf_counter() - t_start, "environment": environment(pair.device),
        "pair_info": pair.info,
    }


def environment(device: torch.device) -> dict:
    """Versions and hardware, for the JSON report."""
    env = {
        "torch": torch.__version__, "python": platform.python_version(), "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(), "torch_threads": torch.get_num_threads(),
    }
    try:
        import os
        env["cpu_count"] = os.cpu_count()
        env["loadavg_1min"] = os.getloadavg()[0]
    except (AttributeError, OSError):
        pass
    if device.type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(device)
    return env


def format_table(report: dict) -> str:
    """Plain-text table of the report's rows, best gamma marked."""
    head = (f"pair {report['pair']} on {report['device']}, sampling {report['sampling']}, "
            f"{len(report['prompts'])} prompts x {report['max_new_tokens']} tokens, median of {report['repeats']}\n"
            f"autoregressive: {report['ar_ms_per_token']:.3f} ms/token; target step t_T = "
            f"{report['target_step_ms']:.3f} ms\n")
    cols = (
        f"{'gamma':>5} {'alpha':>6} {'E[N]':>5} {'c':>6} {'v':>5} {'ms/tok':>7} {'pred':>6} {'meas':>6} {'m/p':>5}"
        "  alpha_j"
    )
    lines = [head + cols]
    for r in report["rows"]:
        mark = " <- best" if r["gamma"] == report["best_gamma"] else ""
        aj = " ".join("  nan" if math.isnan(a) else f"{a:.2f}" for a in r["alpha_per_position"])
        lines.append(
            f"{r['gamma']:>5} {r['alpha']:>6.3f} {r['mean_accepted_length']:>5.2f} {r['c']:>6.3f} {r['v']:>5.2f} "
            f"{r['spec_ms_per_token']:>7.3f} {r['predicted_speedup']:>6.2f} {r['measured_speedup']:>6.2f} "
            f"{r['measured_over_predicted']:>5.2f}  {aj}{mark}"
        )
    return "\n".join(lines)
