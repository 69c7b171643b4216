"""Measured speedup of speculative over autoregressive decoding, beside the algebra's prediction.

Everything is read from the decoder's own events (nothing is timed twice) and summarised by the one
adapter, ``gpu_demo.measure.stats.measure_events`` -> ``specdec_core.measure.summarise``:

* target step t_T = mean ``verify_s`` of the autoregressive rounds (one forward over one token plus
  sampling): the unit of cost;
* c = (draft seconds / drafted tokens) / t_T and v = mean ``verify_s`` of speculative rounds / t_T;
* alpha_j per draft position, and the mean number of tokens per target forward;
* predicted speedup = ``specdec_core.algebra.speedup_positional(alpha_j, c, v)``;
* measured speedup = (autoregressive seconds per token) / (speculative seconds per token), wall clock
  over the decoding loop (prefill excluded), the same prompts and lengths, in one process.

Each repeat runs autoregressive, then every gamma (in reverse order on odd repeats), then autoregressive
again (the baseline is the two pooled), so drift in a shared machine's load hits both sides. The report
quotes, per gamma, the median over repeats with its [min, max] spread (``specdec_core.repeats``), and
vLLM's three quantities over the pooled rounds (``specdec_core.vllm_metrics.counts_from_rounds``):
batch 1, this device.
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
from gpu_demo.measure.stats import measure_events
from gpu_demo.pairs import Pair
from gpu_demo.sampler import SamplingConfig
from specdec_core.measure import Measured
from specdec_core.repeats import Spread, check_repeats, spread, summarise_repeats
from specdec_core.vllm_metrics import counts_from_rounds

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
        c = constraints[i] if constraints else None  # one constraint per prompt (its prefix may differ)
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


def _measured(gamma: int, spec: RunStats, ar: RunStats) -> Measured:
    """One repeat at one gamma, through the one events -> specdec_core adapter.

    The decoder's wall time is known per run (prefill excluded), not per round: spec's enters as one total,
    the baseline's as its seconds per token once per token (summarise counts baseline tokens by entries).
    """
    per_tok = ar.seconds / ar.tokens if ar.tokens else 0.0
    return measure_events(gamma, spec.events, [spec.seconds], ar.events, [per_tok] * ar.tokens)


def _row(m: Measured, spec: RunStats) -> dict:
    """Per-gamma measurements of one repeat and the algebra's prediction from them."""
    return {
        "gamma": m.gamma, "alpha_per_position": [float(a) for a in m.alphas], "alpha": m.alpha_const,
        "mean_accepted_length": m.tokens_per_pass, "c": m.c, "v": m.v,
        "draft_step_ms": 1e3 * m.c * m.t_target_s, "spec_ms_per_token": 1e3 / m.spec_tokens_per_s,
        "spec_tokens_per_s": m.spec_tokens_per_s, "base_tokens_per_s": m.base_tokens_per_s,
        "predicted_speedup": m.predicted_speedup, "measured_speedup": m.measured_speedup,
        "measured_over_predicted": m.measured_speedup / m.predicted_speedup,
        "mask_ms_per_round": 1e3 * statistics.fmean(e.mask_s for e in spec.events),  # 0 without a constraint
    }


BENCH_MAX_REPEATS = 100
SPREAD_KEYS = ("spec_tokens_per_s", "base_tokens_per_s", "alpha", "mean_accepted_length", "c", "v",
               "predicted_speedup", "measured_speedup", "measured_over_predicted")


def _spread_dict(s: Spread) -> dict:
    """{median, min, max, n} of a Spread."""
    return {"median": s.median, "min": s.lo, "max": s.hi, "n": s.n}


def _median_row(gamma: int, runs: list[Measured], rows: list[dict], spec_events: list[RoundEvent]) -> dict:
    """Medians over repeats (alpha_per_position elementwise), each spread, and vLLM's pooled quantities."""
    out = {"gamma": gamma}
    for key in rows[0]:
        if key == "alpha_per_position":
            cols = zip(*(r[key] for r in rows))
            out[key] = [statistics.median(x) if not any(math.isnan(y) for y in x) else math.nan for x in cols]
        elif key != "gamma":
            out[key] = spread([r[key] for r in rows]).median
    out["spread"] = {key: _spread_dict(spread([r[key] for r in rows])) for key in SPREAD_KEYS}
    s = summarise_repeats(runs)
    out["gap_factors"] = {k: _spread_dict(getattr(s, k)) for k in ("accept", "spec_round", "base_step",
                                                                    "overhead_s_per_round")}
    out["rounds_min"] = s.rounds.lo
    out["vllm"] = counts_from_rounds([e.k for e in spec_events], [e.n_accepted for e in spec_events],
                                     gamma).as_dict()
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
    """Benchmark autoregressive vs speculative on `pair` for each gamma; medians and spread over `repeats`.

    ``constraint`` = (kind, source) decodes every run under it (gpu_demo.constraints.build; with
    ``constrain_prompt`` each prompt is the start of the constrained text).
    """
    check_repeats(repeats, BENCH_MAX_REPEATS)
    ids = [pair.tokenizer.encode(p) for p in prompts]
    gammas = list(gammas)
    cons = [build(*constraint, pair.tokenizer, pair.target.vocab_size, prefix=i if constrain_prompt else ())
            for i in ids] if constraint else []
    with torch.inference_mode():
        _decode_all(pair, ids[:1], 20, sampling, None, seed, cons[:1])  # warm-up: allocations, caches
        _decode_all(pair, ids[:1], 20, sampling, max(gammas), seed, cons[:1])
    runs: dict[int, list[Measured]] = {g: [] for g in gammas}
    per_gamma: dict[int, list[dict]] = {g: [] for g in gammas}
    spec_evs: dict[int, list[RoundEvent]] = {g: [] for g in gammas}
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
        for g in (gammas if rep % 2 == 0 else gammas[::-1]):  # reversed on odd repeats: drift hits every gamma
            specs[g] = _decode_all(pair, ids, max_new_tokens, sampling, g, s, cons)
            bar and bar.update()
        ar2 = _decode_all(pair, ids, max_new_tokens, sampling, None, s, cons)
        bar and bar.update()
        ar = RunStats(ar1.seconds + ar2.seconds, ar1.tokens + ar2.tokens, ar1.events + ar2.events)
        ar_rows.append({"ar_ms_per_token": 1e3 * ar.seconds / ar.tokens,
                        "target_step_ms": 1e3 * statistics.fmean(e.verify_s for e in ar.events)})
        for g in gammas:
            m = _measured(g, specs[g], ar)
            runs[g].append(m)
            per_gamma[g].append(_row(m, specs[g]))
            spec_evs[g].extend(specs[g].events)
    if bar:
        bar.close()
    rows = [_median_row(g, runs[g], per_gamma[g], spec_evs[g]) for g in gammas]
    best = max(rows, key=lambda r: r["measured_speedup"])
    return {
        "pair": pair.name, "device": str(pair.device), "sampling": sampling.__dict__ | {"greedy": sampling.greedy},
        "constraint": list(constraint) if constraint else None,
        "prompts": list(prompts), "max_new_tokens": max_new_tokens, "repeats": repeats, "seed": seed,
        "batch": 1, "statistics": "median over repeats, with min and max; vLLM quantities over the pooled rounds",
        "ar_ms_per_token": statistics.median(r["ar_ms_per_token"] for r in ar_rows),
        "target_step_ms": statistics.median(r["target_step_ms"] for r in ar_rows),
        "ar_spread": {k: _spread_dict(spread([r[k] for r in ar_rows])) for k in ("ar_ms_per_token", "target_step_ms")},
        "rows": rows, "per_repeat": {str(g): per_gamma[g] for g in gammas},
        "best_gamma": best["gamma"], "best_measured_speedup": best["measured_speedup"],
        "best_measured_over_predicted": best["measured_over_predicted"],
        "bench_seconds": time.perf_counter() - t_start, "environment": environment(pair.device),
        "pair_info": pair.info,
    }


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else platform.processor() (a CPU timing depends on which CPU)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment(device: torch.device) -> dict:
    """Versions and hardware, for the JSON report."""
    env = {
        "torch": torch.__version__, "python": platform.python_version(), "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(), "torch_threads": torch.get_num_threads(),
    }
    env["cpu"] = cpu_model()
    env["cpu_capability"] = torch.backends.cpu.get_cpu_capability()  # the widest ISA torch's kernels use here
    try:
        import os
        env["cpu_count"] = os.cpu_count()
        env["loadavg_1min"] = os.getloadavg()[0]
    except (AttributeError, OSError):
        pass
    if device.type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(device)
    return env


def _range(r: dict, key: str) -> str:
    """'median (min-max)' of a row's spread entry, 2 decimals."""
    sp = r["spread"][key]
    return f"{sp['median']:.2f} ({sp['min']:.2f}-{sp['max']:.2f})"


def format_table(report: dict) -> str:
    """Plain-text table of the report's rows (medians, and min-max of the speedups), best gamma marked."""
    head = (f"pair {report['pair']} on {report['device']}, batch 1, sampling {report['sampling']}, "
            f"{len(report['prompts'])} prompts x {report['max_new_tokens']} tokens, median (min-max) of "
            f"{report['repeats']} repeats\n"
            f"autoregressive: {report['ar_ms_per_token']:.3f} ms/token; target step t_T = "
            f"{report['target_step_ms']:.3f} ms\n")
    cols = (
        f"{'gamma':>5} {'alpha':>6} {'E[N]':>5} {'c':>6} {'v':>5} {'ms/tok':>7} {'predicted':>17} {'measured':>17} "
        f"{'m/p':>5} {'acc.rate':>8} {'mean len':>8}  alpha_j"
    )
    lines = [head + cols]
    for r in report["rows"]:
        mark = " <- best" if r["gamma"] == report["best_gamma"] else ""
        aj = " ".join("  nan" if math.isnan(a) else f"{a:.2f}" for a in r["alpha_per_position"])
        vl = r["vllm"]
        rate = "—" if vl["acceptance_rate"] is None else f"{vl['acceptance_rate']:.3f}"
        length = "—" if vl["mean_acceptance_length"] is None else f"{vl['mean_acceptance_length']:.3f}"
        lines.append(
            f"{r['gamma']:>5} {r['alpha']:>6.3f} {r['mean_accepted_length']:>5.2f} {r['c']:>6.3f} {r['v']:>5.2f} "
            f"{r['spec_ms_per_token']:>7.3f} {_range(r, 'predicted_speedup'):>17} {_range(r, 'measured_speedup'):>17} "
            f"{r['measured_over_predicted']:>5.2f} {rate:>8} {length:>8}  {aj}{mark}"
        )
    lines.append("acc.rate, mean len: vLLM's acceptance rate (accepted / drafted tokens) and mean acceptance length "
                 "(1 + accepted / drafts); the JSON adds its per-position rates (unconditional) per gamma.")
    return "\n".join(lines)
