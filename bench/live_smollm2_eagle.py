"""Benchmark: SmolLM2-135M-Instruct with the feature-level (EAGLE-style) draft on open-ended chat prompts.

Runs gpu_demo.measure.bench.measure (autoregressive vs speculative on the same prompts, interleaved:
autoregressive, every gamma, autoregressive again, per repeat; medians over repeats) and prints its table
with alpha per position, c, v, predicted and measured speedup, then the spread of the measured speedup
over repeats; --json PATH writes the full report (per-repeat rows included). One CPU thread by default.
The prompts (gpu_demo.training.eagle_data.BENCH_CHAT_PROMPTS) are open questions in the chat template,
none of them among the training prompts.

    .venv/bin/python bench/live_smollm2_eagle.py --gamma 2,3,4 --temperature 1 --max-new-tokens 96 --repeats 3
"""

from __future__ import annotations

from gpu_demo.flags import CliParser, add_gamma, add_json, add_max_new_tokens, add_temperature, add_threads, parse
from gpu_demo.measure.bench import format_table, measure
from gpu_demo.pairs import load_pair
from gpu_demo.reports import write_report
from gpu_demo.sampler import SamplingConfig
from gpu_demo.training.eagle_data import BENCH_CHAT_PROMPTS


def spread(report: dict) -> str:
    """Per gamma: measured speedup of every repeat (min, median, max) and measured / predicted."""
    lines = ["spread over repeats (measured speedup min / median / max; measured/predicted min..max):"]
    for g, rows in report["per_repeat"].items():
        m = sorted(r["measured_speedup"] for r in rows)
        mp = sorted(r["measured_over_predicted"] for r in rows)
        lines.append(f"  gamma {g}: {m[0]:.2f} / {m[len(m) // 2]:.2f} / {m[-1]:.2f};  m/p {mp[0]:.2f}..{mp[-1]:.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    ap = CliParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pair", default="smollm2-eagle")
    add_gamma(ap, "2,3,4")
    add_temperature(ap)
    add_max_new_tokens(ap, 96)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--prompts", type=int, default=len(BENCH_CHAT_PROMPTS), help="use the first N chat prompts")
    add_threads(ap)
    add_json(ap)
    args = parse(ap, argv)
    gammas = args.gamma
    pair = load_pair(args.pair, "cpu", max_len=512)
    prompts = [pair.tokenizer.chat(p) for p in BENCH_CHAT_PROMPTS[: args.prompts]]
    report = measure(pair, prompts, gammas, SamplingConfig(args.temperature), args.max_new_tokens, args.repeats)
    print(format_table(report))
    print(spread(report))
    if args.json:
        print(f"wrote {write_report(args.json, report, 'bench/live_smollm2_eagle.py', args.force)}")
    return report


if __name__ == "__main__":
    main()
