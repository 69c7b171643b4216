"""The README's layout names every module, and its commands exist in the Makefile."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("specdec_core", "gpu_demo", "ui", "content", "views", "harness")


def _layout() -> str:
    text = (ROOT / "README.md").read_text()
    block = text[text.index("## Project layout"):]
    return block[: block.index("```", block.index("```") + 3)]


def _entry(lines: list[str], start: int, indent: int) -> list[str]:
    """Line ``start`` and the lines after it indented deeper than ``indent``: one entry of the layout."""
    end = next((j for j in range(start + 1, len(lines)) if re.match(rf"^ {{0,{indent}}}\S", lines[j])), len(lines))
    return lines[start:end]


def _sub_block(layout: str, pkg: str, sub: str) -> str:
    """The layout's entry for pkg/sub/ (a line "  sub/" inside the entry "pkg/"), with its continuation lines."""
    lines = layout.splitlines()
    top = next((i for i, line in enumerate(lines) if line.startswith(f"{pkg}/")), None)
    if top is None:
        return ""
    block = _entry(lines, top, 0)
    sub_at = next((i for i, line in enumerate(block) if re.match(rf"^ {{2}}{re.escape(sub)}/\s", line)), None)
    return "" if sub_at is None else "\n".join(_entry(block, sub_at, 2))


def _named(layout: str, path: Path) -> bool:
    """A top-level module is named anywhere in the layout; one in a sub-package inside that sub-package's entry."""
    parts = path.relative_to(ROOT).parts
    text = _sub_block(layout, parts[0], parts[1]) if len(parts) > 2 else layout
    return bool(re.search(rf"(?<![\w/]){re.escape(path.name)}", text))


def test_layout_names_every_module() -> None:
    layout = _layout()
    missing = [
        str(path.relative_to(ROOT))
        for pkg in PACKAGES
        for path in sorted((ROOT / pkg).rglob("*.py"))
        if path.name != "__init__.py" and not _named(layout, path)
    ]
    assert not missing, f"README layout does not name: {missing}"


def test_a_page_module_named_only_elsewhere_is_missing() -> None:
    """Negative control: ui/live/figures.py is not covered by "figures.py" under another page's entry."""
    layout = "ui/  helpers\n  algebra/   figures.py, cost.py\n  live/      pairs.py\nother/\n  live/  figures.py\n"
    assert _named(layout, ROOT / "ui" / "algebra" / "figures.py")
    assert not _named(layout, ROOT / "ui" / "live" / "figures.py")


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
