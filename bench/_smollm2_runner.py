"""Shared runner for the SmolLM2 benchmarks: parse the common flags, measure one pair, print, write JSON."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path


def run(pair_name: str, prompts: Callable[[object], list[str]], description: str,
        gamma: str, max_new_tokens: int, argv: list[str] | None = None) -> dict:
    """Benchmark `pair_name` on prompts(pair) with gpu_demo.measure.bench.measure; --json PATH writes the report."""
    import torch

    from gpu_demo.__main__ import gamma_list
    from gpu_demo.measure.bench import format_table, measure
    from gpu_demo.pairs import load_pair
    from gpu_demo.sampler import SamplingConfig

    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--gamma", default=gamma)
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--max-new-tokens", type=int, default=max_new_tokens)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    pair = load_pair(pair_name, "cpu", max_len=512)
    report = measure(pair, prompts(pair), gamma_list(args.gamma), SamplingConfig(args.temperature),
                     args.max_new_tokens, args.repeats, seed=0)
    print(format_table(report))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2, default=str) + "\n")
        print(f"wrote {args.json}")
    return report
