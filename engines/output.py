"""Where a command may write its JSON: anywhere but inside the project's package folders (nothing it writes may land
on a file the project ships). Interim home until a shared safe-writer exists; then this defers to it."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("engines", "specdec_core", "gpu_demo", "ui", "views", "content", "tests", ".streamlit")


def check_output_path(path: str | Path) -> Path:
    """The resolved path, or ValueError when it lies inside a package folder or is a folder itself."""
    p = Path(path).expanduser().resolve()
    for name in PACKAGES:
        if p.is_relative_to(ROOT / name):
            raise ValueError(f"Refusing to write {p}: it is inside the project's {name}/ folder; write elsewhere "
                             "(e.g. bench/results/ or /tmp).")
    if p.is_dir():
        raise ValueError(f"{p} is a folder; give a file path.")
    return p


def write_json(path: str | Path, data: object) -> Path:
    """Write data as indented JSON to a checked path (parents created)."""
    p = check_output_path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(data, indent=2, default=str) + "\n")
    return p
