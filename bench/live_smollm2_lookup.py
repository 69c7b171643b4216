"""Benchmark: SmolLM2-135M with the prompt-lookup draft on copy-heavy chat prompts (quote, edit, repeat).

Runs gpu_demo.measure.bench.measure (autoregressive vs speculative on the same prompts, medians over repeats)
and prints its table; --json PATH writes the full report. Prompts are chat-formatted with SmolLM2's
own template, around passages from the held-out end of the Austen corpus. --prompts edit measures the live
page's "copy-heavy" preset instead (gpu_demo.live.prompts: correct a paragraph's spelling and return it), sent
as the page sends it (one user turn); keep --max-new-tokens within its greedy reply (about 115 tokens), since
this bench does not stop at the end of the turn.

    .venv/bin/python bench/live_smollm2_lookup.py --gamma 2,4,6,8 --max-new-tokens 64 --repeats 2
    .venv/bin/python bench/live_smollm2_lookup.py --prompts edit --temperature 0 --gamma 4,6,8 \
        --max-new-tokens 110 --repeats 3 --threads 1
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


def edit_prompts(tokenizer) -> list[str]:
    """The live page's copy-heavy preset (an edit task) as the page sends it: one user turn."""
    from gpu_demo.live.prompts import preset_text

    return [tokenizer.user_turn(preset_text("copy-heavy", chat=True))]


PROMPT_SETS = {"copy": copy_prompts, "edit": edit_prompts}


def main(argv: list[str] | None = None) -> None:
    run(
        "smollm2-lookup",
        lambda pair, which: PROMPT_SETS[which](pair.tokenizer),
        __doc__.splitlines()[0],
        gamma="2,4,6,8",
        max_new_tokens=64,
        argv=argv,
        prompt_sets=tuple(PROMPT_SETS),
    )


if __name__ == "__main__":
    main()
