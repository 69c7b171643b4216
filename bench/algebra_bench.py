"""Benchmark the algebra page's heavy parts: the best-gamma heatmap, the Monte Carlo, a page rerun, hostile pastes.

    .venv/bin/python bench/algebra_bench.py [--repeats 20] [--json PATH]

Prints a table of medians (and min / max); ``--json PATH`` also writes the numbers as JSON.
Targets on the 2-core CPU machine: heatmap < 0.2 s, Monte Carlo < 0.2 s, page rerun < 0.3 s, and the paste box's
parse_any over all the hostile 200,000-character pastes below < 2 s together (each is refused or read).
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from gpu_demo.flags import CliParser, add_json, int_in, parse
from gpu_demo.reports import write_report

ROOT = Path(__file__).resolve().parents[1]

from specdec_core.algebra import best_gamma_grid, best_gamma_map, break_even_boundary  # noqa: E402
from specdec_core.simulate import simulate_tokens_per_step  # noqa: E402
from specdec_core.vllm_metrics import parse_any  # noqa: E402

GRID = 200            # heatmap cells per side
MAX_GAMMA = 32
MC_STEPS = 1_000_000
MC_GAMMA = 8
PASTE = 200_000       # the paste box's limit (ui.algebra.vllm.PASTE_LIMIT)


def hostile_pastes() -> dict[str, str]:
    """Texts at the paste limit aimed at each reader: deep JSON, long numbers, escapes, many series or lines."""
    n = PASTE
    per_pos = "".join(f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{position="{j}"}} 0\n' for j in range(2500))
    cases = {
        "deep_json": "[" * n, "deep_object": '{"a":' * (n // 5),
        "log_digits": "SpecDecoding metrics: Accepted: " + "1" * n,
        "log_rates": "SpecDecoding metrics: Mean acceptance length: 2, Per-position acceptance rate: " + "0.1, " * n,
        "prom_escapes": 'vllm:spec_decode_num_drafts_total{a="' + '\\"' * n,
        "prom_lines": "vllm:spec_decode_num_drafts_total 1\n" * (n // 30),
        "prom_positions": "vllm:spec_decode_num_drafts_total 1\nvllm:spec_decode_num_draft_tokens_total 2500\n"
                          "vllm:spec_decode_num_accepted_tokens_total 0\n" + per_pos,     # read: gamma 2,500
        "sglang_models": "".join(f'sglang:spec_accept_length{{model_name="m{j}"}} 2\n' for j in range(6000)),
        "trtllm_items": "[" + ", ".join(['{"specDecodingStats": {"numDraftTokens": 3}}'] * (n // 50)) + "]",
        "llamacpp_lines": '{"timings": {"draft_n": 3, "draft_n_accepted": 1}}\n' * (n // 50),
        "json_lines_bad": '{"a": 1}\n' * (n // 9), "garbage": "x" * n,
    }
    return {k: v if len(v) <= n else v[:n].rpartition("\n")[0] or v[:n] for k, v in cases.items()}  # whole lines


def pastes(texts: dict[str, str]) -> Callable[[], None]:
    """parse_any over every hostile text: each is read or refused with a ValueError, nothing else."""
    def run() -> None:
        for text in texts.values():
            try:
                parse_any(text)
            except ValueError:
                pass
    return run


def timings(fn: Callable[[], object], repeats: int, warmup: int = 1) -> list[float]:
    """Wall-clock seconds of `repeats` calls after `warmup` untimed calls."""
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def heatmap() -> None:
    """What the page computes: best integer gamma in 0..32 over GRID x GRID (alpha, c) cells, and break-even."""
    alphas, cs = np.linspace(0.0, 1.0, GRID), np.linspace(0.0, 1.0, GRID)
    g, s = best_gamma_map(alphas, cs, 1.0, MAX_GAMMA)  # (GRID, GRID)
    boundary = break_even_boundary(cs, 1.0, MAX_GAMMA)  # (GRID,)
    assert g.shape == (GRID, GRID) and boundary.shape == (GRID,)


def heatmap_generic() -> None:
    """The public broadcasting search best_gamma_grid on the same grid (forms the (33, GRID, GRID) cube)."""
    alphas, cs = np.linspace(0.0, 1.0, GRID), np.linspace(0.0, 1.0, GRID)
    g, s = best_gamma_grid(alphas[:, None], cs[None, :], 1.0, MAX_GAMMA)
    assert g.shape == (GRID, GRID)


def monte_carlo() -> None:
    """1,000,000 speculative steps at gamma 8, alpha 0.8."""
    tokens = simulate_tokens_per_step(np.full(MC_GAMMA, 0.8), MC_STEPS, seed=0)
    assert tokens.size == MC_STEPS


def page_rerun_factory() -> Callable[[], None]:
    """AppTest of the algebra page; each call moves the alpha slider and reruns the page."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("views/algebra.py").run()
    values = iter(np.round(np.linspace(0.30, 0.95, 1000), 4))  # a new alpha each time: no cache hits
    from ui.controls import widget_key

    key = widget_key("alpha", "algebra")  # the bound number box; its slider mirrors it

    def rerun() -> None:
        at.number_input(key=key).set_value(float(next(values))).run()
        if at.exception:
            raise RuntimeError(f"the algebra page raised: {at.exception[0].message}")

    return rerun


def row(name: str, ts: list[float], target: float, what: str) -> dict:
    med = statistics.median(ts)
    return {
        "name": name,
        "what": what,
        "n": len(ts),
        "median_s": med,
        "min_s": min(ts),
        "max_s": max(ts),
        "target_s": target,
        "meets_target": med < target,
    }


def main() -> None:
    ap = CliParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int_in(1, 10_000), default=20)
    ap.add_argument("--quick", action="store_true", help="one timed call each, no page warm-up (a smoke run)")
    add_json(ap)
    args = parse(ap)
    if args.quick:
        args.repeats = 1
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None  # other jobs share the 2 cores

    rows = [
        row(
            "heatmap",
            timings(heatmap, args.repeats),
            0.2,
            f"page: {GRID}x{GRID} cells, best gamma in 0..{MAX_GAMMA} each + break-even line",
        ),
        row(
            "heatmap_grid",
            timings(heatmap_generic, args.repeats),
            0.2,
            "same cells through the generic best_gamma_grid (for comparison)",
        ),
        row("monte_carlo", timings(monte_carlo, args.repeats), 0.2, f"{MC_STEPS:,} steps at gamma {MC_GAMMA}"),
        row("paste_hostile", timings(pastes(hostile_pastes()), args.repeats), 2.0,
            f"parse_any over {len(hostile_pastes())} hostile {PASTE:,}-character pastes, all together"),
        row(
            "page_rerun",
            timings(page_rerun_factory(), args.repeats, warmup=0 if args.quick else 3),
            0.3,
            "AppTest: alpha slider moved, algebra page rerun",
        ),
    ]
    if load_before:
        print(f"1-minute load average before the runs: {load_before[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'benchmark':<13} {'median s':>9} {'min s':>8} {'max s':>8} {'target':>7}  ok   what")
    for r in rows:
        print(
            f"{r['name']:<13} {r['median_s']:>9.4f} {r['min_s']:>8.4f} {r['max_s']:>8.4f} "
            f"{r['target_s']:>7.2f}  {'yes' if r['meets_target'] else 'NO ':<4} {r['what']}"
        )
    if args.json:
        meta = {
            "python": platform.python_version(),
            "numpy": np.__version__,
            "cpus": os.cpu_count(),
            "machine": platform.machine(),
            "repeats": args.repeats,
            "load_avg_before": load_before,
            "load_avg_after": os.getloadavg() if hasattr(os, "getloadavg") else None,
        }
        print(f"wrote {write_report(args.json, {'meta': meta, 'results': rows}, 'bench/algebra_bench.py', args.force)}")


if __name__ == "__main__":
    main()
