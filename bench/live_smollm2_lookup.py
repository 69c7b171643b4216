"""Benchmark: SmolLM2-135M with the prompt-lookup draft on copy-heavy chat prompts (quote, edit, repeat).

Runs gpu_demo.bench.measure (autoregressive vs speculative on the same prompts, medians over repeats)
and prints its table; --json PATH writes the full report. Prompts are chat-formatted with SmolLM2's
own template, around passages from the held-out end of the Austen corpus.

    .venv/bin/python bench/live_smollm2_lookup.py --gamma 2,4,6,8 --max-new-tokens 64 --repeats 2
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PASSAGES = (
    "Anne's object was, not to be in the way of anybody; and where the narrow paths across the fields "
    "made many separations necessary, to keep with her brother and sister.",
    "Emma could not forgive her; but as neither provocation nor resentment were discerned by Mr. Knightley, "
    "who had been of the party, and had seen only proper attention and pleasing behaviour on each side.",
    "Elizabeth, as they drove along, watched for the first appearance of Pemberley Woods with some "
    "perturbation; and when at length they turned in at the lodge, her spirits were in a high flutter.",
)
TASKS = (
    "Repeat the following text exactly, word for word:\n\n{}",
    "Copy this passage, keeping every word:\n\n{}",
    "Quote the following sentence back to me exactly as written:\n\n{}",
)


def copy_prompts(tokenizer) -> list[str]:
    """Chat prompts asking to repeat/quote a passage (the copy-heavy set)."""
    return [tokenizer.chat(t.format(p)) for t, p in zip(TASKS, PASSAGES)]


def main(argv: list[str] | None = None) -> None:
    import torch

    from gpu_demo.__main__ import _gammas
    from gpu_demo.bench import format_table, measure
    from gpu_demo.pairs import load_pair
    from gpu_demo.sampler import SamplingConfig

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gamma", default="2,4,6,8")
    ap.add_argument("--temperature", type=float, default=1.0)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", metavar="PATH")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    pair = load_pair("smollm2-lookup", "cpu", max_len=512)
    report = measure(pair, copy_prompts(pair.tokenizer), _gammas(args.gamma), SamplingConfig(args.temperature),
                     args.max_new_tokens, args.repeats, seed=0)
    print(format_table(report))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2, default=str) + "\n")
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
