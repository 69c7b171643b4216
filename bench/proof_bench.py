"""Benchmark the proof page's two heavy computations; prints a table of medians, --json PATH writes JSON.

1. The seed's exact check: 10,000 random Dirichlet pairs (V in 2..49, q concentration 0.3) through
   emitted_distribution in one batched call (target: under 0.1 s).
2. 10^6 sampled draws through the real accept/resample rule (target: under 0.5 s median).

Usage: .venv/bin/python bench/proof_bench.py [--repeats 15] [--json PATH]
"""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Callable

import numpy as np

from gpu_demo.flags import CliParser, add_json, parse
from gpu_demo.reports import write_report
from specdec_core.proof_cases import case_from_pair, exhaustive_check, preset_pair, random_pairs
from specdec_core.rejection import speculative_sample

TARGETS_S = {"exact_10k_pairs": 0.1, "sample_1e6_draws": 0.5}


def timings(fn: Callable[[], object], repeats: int) -> list[float]:
    """Wall-clock seconds of `repeats` calls, after one warm-up call."""
    fn()
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def run(repeats: int) -> dict:
    """Time each case; return medians, spreads, targets and the checked numbers."""
    p, q, _ = random_pairs(10_000, seed=0)
    gen = timings(lambda: random_pairs(10_000, seed=0), repeats)
    exact = timings(lambda: exhaustive_check(p, q), repeats)
    result = exhaustive_check(p, q)
    case = case_from_pair(*preset_pair("q_sharper", 50))
    draws = timings(lambda: speculative_sample(case.p, case.q, 1_000_000, seed=0), repeats)
    tokens, _ = speculative_sample(case.p, case.q, 1_000_000, seed=0)
    freq = np.bincount(tokens, minlength=50) / tokens.size
    rows = {
        "exact_10k_pairs": exact,
        "sample_1e6_draws": draws,
        "generate_10k_pairs (not in target)": gen,
    }
    return {
        "machine": {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "cpu": platform.processor() or platform.machine(),
        },
        "repeats": repeats,
        "cases": {
            name: {
                "median_s": statistics.median(t),
                "min_s": min(t),
                "max_s": max(t),
                "target_s": TARGETS_S.get(name),
                "meets_target": TARGETS_S.get(name) is None or statistics.median(t) < TARGETS_S[name],
            }
            for name, t in rows.items()
        },
        "checks": {**result, "sample_max_abs_freq_minus_p": float(np.abs(freq - case.p).max())},
    }


def print_table(report: dict) -> None:
    """A plain-text table of the medians against their targets."""
    print(f"{'case':38s} {'median ms':>10s} {'min ms':>8s} {'max ms':>8s} {'target ms':>10s}  ok")
    for name, r in report["cases"].items():
        target = f"{1e3 * r['target_s']:.0f}" if r["target_s"] else "-"
        print(
            f"{name:38s} {1e3 * r['median_s']:10.1f} {1e3 * r['min_s']:8.1f} {1e3 * r['max_s']:8.1f} "
            f"{target:>10s}  {'yes' if r['meets_target'] else 'NO'}"
        )
    c = report["checks"]
    print(
        f"\nmax |emitted - p| over {int(c['pairs']):,} pairs: {c['max_law_error']:.1e}; "
        f"max |alpha - (1 - TV)|: {c['max_alpha_error']:.1e}; "
        f"1e6 draws, max |freq - p|: {c['sample_max_abs_freq_minus_p']:.1e}"
    )


def main() -> None:
    parser = CliParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15, help="timed calls per case (after one warm-up)")
    add_json(parser)
    args = parse(parser)
    report = run(args.repeats)
    print_table(report)
    if args.json:
        print(f"wrote {write_report(args.json, report, 'bench/proof_bench.py', args.force)}")


if __name__ == "__main__":
    main()
