"""The README's layout names every module, and its commands exist in the Makefile."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("specdec_core", "gpu_demo", "ui", "content", "views")


def _layout() -> str:
    text = (ROOT / "README.md").read_text()
    block = text[text.index("## Project layout"):]
    return block[: block.index("```", block.index("```") + 3)]


def test_layout_names_every_module() -> None:
    layout = _layout()
    missing = [
        str(path.relative_to(ROOT))
        for pkg in PACKAGES
        for path in sorted((ROOT / pkg).rglob("*.py"))
        if path.name != "__init__.py" and not re.search(rf"(?<![\w/]){re.escape(path.name)}", layout)
    ]
    assert not missing, f"README layout does not name: {missing}"


def test_readme_commands_are_make_targets() -> None:
    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), flags=re.M))
    used = set(re.findall(r"`make ([\w-]+)`", (ROOT / "README.md").read_text()))
    assert used and used <= targets, used - targets


def test_start_here_points_at_code_that_exists() -> None:
    text = (ROOT / "README.md").read_text()
    start = text[text.index("## Start here"): text.index("## Project layout")]
    for path in re.findall(r"`((?:gpu_demo|specdec_core|tests)/[\w/]+\.py)`", start):
        assert (ROOT / path).is_file(), path
    for name in re.findall(r"`(speculative_round|exact_rule|greedy_rule|next_token)`", start):
        src = (ROOT / "gpu_demo" / ("decode.py" if name == "speculative_round" else "sampler.py")).read_text()
        assert f"def {name}(" in src, name
