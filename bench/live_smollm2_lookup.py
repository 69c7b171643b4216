"""Benchmark: SmolLM2-135M with the prompt-lookup draft on copy-heavy chat prompts (quote, edit, repeat).

Runs gpu_demo.measure.bench.measure (autoregressive vs speculative on the same prompts, medians over repeats)
and prints its table; --json PATH writes the full report. Prompts are chat-formatted with SmolLM2's
own template, around passages from the held-out end of the Austen corpus.

    .venv/bin/python bench/live_smollm2_lookup.py --gamma 2,4,6,8 --max-new-tokens 64 --repeats 2
"""

from __future__ import annotations

from _smollm2_runner import run

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
    run(
        "smollm2-lookup",
        lambda pair: copy_prompts(pair.tokenizer),
        __doc__.splitlines()[0],
        gamma="2,4,6,8",
        max_new_tokens=64,
        argv=argv,
    )


if __name__ == "__main__":
    main()
