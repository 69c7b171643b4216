"""Shared runner for the SmolLM2 benchmarks: parse the common flags, measure one pair, print, write JSON."""

from __future__ import annotations

from collections.abc import Callable

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
from gpu_demo.reports import write_report


def run(pair_name: str, prompts: Callable[[object], list[str]], description: str,
        gamma: str, max_new_tokens: int, argv: list[str] | None = None, prompt_sets: tuple[str, ...] = ()) -> dict:
    """Benchmark `pair_name` on prompts(pair) with gpu_demo.measure.bench.measure; --json PATH writes the report.

    With prompt_sets, --prompts NAME picks one and the bench calls prompts(pair, NAME)."""
    from gpu_demo.measure.bench import format_table, measure
    from gpu_demo.pairs import load_pair
    from gpu_demo.sampler import SamplingConfig

    ap = CliParser(description=description)
    add_gamma(ap, gamma)
    add_temperature(ap)
    add_max_new_tokens(ap, max_new_tokens)
    ap.add_argument("--repeats", type=int_in(1, 1000), default=2)
    add_threads(ap)
    add_json(ap)
    if prompt_sets:
        ap.add_argument("--prompts", choices=prompt_sets, default=prompt_sets[0])
    args = parse(ap, argv)
    pair = load_pair(pair_name, "cpu", max_len=512)
    texts = prompts(pair, args.prompts) if prompt_sets else prompts(pair)
    report = measure(pair, texts, args.gamma, SamplingConfig(args.temperature),
                     args.max_new_tokens, args.repeats, seed=0)
    print(format_table(report))
    if args.json:
        print(f"wrote {write_report(args.json, report, 'bench/' + pair_name, args.force)}")
    return report
