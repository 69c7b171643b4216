"""Benchmark: SmolLM2-135M with the distilled 2-layer draft on open-ended prose prompts.

Runs gpu_demo.measure.bench.measure (autoregressive vs speculative on the same prompts, medians over repeats)
and prints its table; --json PATH writes the full report. The prompts are open beginnings in the
register the draft was distilled on (the target continuing Austen-like prose), none of them taken
from the corpus.

    .venv/bin/python bench/live_smollm2_draft.py --gamma 1,2,3,4 --temperature 1 --max-new-tokens 48
"""

from __future__ import annotations

from _smollm2_runner import run

OPEN_PROMPTS = (
    "It was a fine morning in Bath, and Miss Elliot had resolved to walk",
    "The letter arrived on a Tuesday, and nobody in the family could agree on what it meant.",
    "Mrs. Weston was very fond of her neighbours, but she could not help observing that",
)


def main(argv: list[str] | None = None) -> None:
    run(
        "smollm2-draft",
        lambda pair: list(OPEN_PROMPTS),
        __doc__.splitlines()[0],
        gamma="1,2,3,4",
        max_new_tokens=48,
        argv=argv,
    )


if __name__ == "__main__":
    main()
