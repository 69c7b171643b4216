"""The live page's prompt presets, shared with the benches that measure them (bench/live_smollm2_lookup.py).

Every preset uses only characters the built-in (Jane Austen) alphabet has. "copy-heavy" has two forms, one per
kind of model: for a chat model an edit task (correct a paragraph's spelling and return it in full), whose
greedy reply writes most of the prompt back, so a draft that copies from the prompt (prompt lookup) is accepted
for long runs; for a model that continues text, a passage that starts repeating itself (short enough for the
built-in pair's 512-character context).
"""

from __future__ import annotations

EDIT_PASSAGE = (
    "Elizabeth, as they drove along, watched for the first apearance of Pemberley Woods with some perturbation; "
    "and when at length they turned in at the lodge, her spirits were in a high fluter. The park was very large, "
    "and contained great variety of ground. They entered it in one of its lowest points, and drove for some time "
    "through a beautifull wood stretching over a wide extent. Elizabeth's mind was too full for conversation, but "
    "she saw and admired every remarkable spot and point of view. They gradually ascended for half a mile, and then "
    "found themselves at the top of a considerable eminence, where the wood ceased, and the eye was instantly caught "
    "by Pemberley House, situated on the oposite side of a valley."
)
EDIT_TASK = "Correct the spelling in this paragraph and return it in full:\n\n"

PRESETS: dict[str, str] = {
    "open-ended": "It was a fine morning in the country, and Elizabeth walked out",
    "copy-heavy": (
        "It is a truth universally acknowledged, that a single man in possession of a good fortune, "
        "must be in want of a wife.\nAgain: It is a truth universally acknowledged, that a single man"
    ),
    "code-like": "def total(items):\n    return sum([x * 2 for x in items])\n\ndef mean(items):\n    return",
    "chat question": "Explain how a rainbow forms, in simple words.",
}
CHAT_PRESETS: dict[str, str] = {"copy-heavy": EDIT_TASK + EDIT_PASSAGE}


def preset_text(name: str, chat: bool) -> str:
    """Preset `name`'s text for a chat model (its chat form where it has one) or for a text-continuing model."""
    return CHAT_PRESETS.get(name, PRESETS[name]) if chat else PRESETS[name]


def preset_forms(name: str) -> tuple[str, ...]:
    """Every form of preset `name` (so a prompt still holding one can follow the pair to the other)."""
    return tuple(dict.fromkeys((PRESETS[name], CHAT_PRESETS.get(name, PRESETS[name]))))
