"""Benchmark: SmolLM2-135M with the distilled 2-layer draft on open-ended prose prompts.

Runs gpu_demo.bench.measure (autoregressive vs speculative on the same prompts, medians over repeats)
and prints its table; --json PATH writes the full report. The prompts are open beginnings in the
register the draft was distilled on (the target continuing Austen-like prose), none of them taken
from the corpus.

    .venv/bin/python bench/live_smollm2_draft.py --gamma 1,2,3,4 --temperature 1 --max-new-tokens 48
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

OPEN_PROMPTS = (
    "It was a fine morning in Bath, and Miss Elliot had resolved to walk",
    "The letter arrived on a Tuesday, and nobody in the family could agree on what it meant.",
    "Mrs. Weston was very fond of her neighbours, but she could not help observing that",
)


def main(argv: list[str] | None = None) -> None:
    import torch

    from gpu_demo.__main__ import _gammas
    from gpu_demo.bench import format_table, measure
    from gpu_demo.pairs import load_pair
    from gpu_demo.sampler import SamplingConfig

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gamma", default="1,2,3,4")
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    pair = load_pair("smollm2-draft", "cpu", max_len=512)
    report = measure(pair, list(OPEN_PROMPTS), _gammas(args.gamma), SamplingConfig(args.temperature),
                     args.max_new_tokens, args.repeats, seed=0)
    print(format_table(report))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2, default=str) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
