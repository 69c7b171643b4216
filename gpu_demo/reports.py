"""Where a command may write: the one guard for every ``--json``, ``--out``, export and training path.

Nothing a command writes may land on a file the project ships. A path is refused (``RefusedPath``, a
ValueError with one line) when it lies inside one of the project's packages (``gpu_demo`` with its
assets, ``specdec_core``, ``ui``, ``content``, ``views``), or when it is an existing file that is not a
report of ours, unless ``force`` is given. A report of ours is a JSON object carrying the key
:data:`MARKER`, which :func:`write_report` adds to everything it writes. An output folder (training) inside
the packages is refused unless ``force``: ``train --force`` is how the shipped weights are rebuilt.
"""

from __future__ import annotations

import importlib.util
import json
import os
import tempfile
from pathlib import Path

MARKER = "specdec_lab_report"  # the key every report we write carries; its value names the writer
PACKAGES = ("gpu_demo", "specdec_core", "ui", "content", "views", "engines")
MAX_REPORT_BYTES = 64 * 2**20  # an existing file larger than this is not read to look for the marker
_ROOT = Path(__file__).resolve().parent.parent
COMMITTED = (_ROOT / "bench",)  # folders whose reports are committed results: replaced only with --force


class RefusedPath(ValueError):
    """A path a command must not write to; the message names the path and why, on one line."""


def protected_roots() -> tuple[Path, ...]:
    """The folders of the project's packages, resolved (where they are installed, else beside gpu_demo)."""
    roots = []
    for name in PACKAGES:
        spec = importlib.util.find_spec(name) if name != "views" else None  # views/ is a folder, not a package
        locations = list(spec.submodule_search_locations or []) if spec is not None else []
        roots += [Path(p).resolve() for p in locations] or [(_ROOT / name).resolve()]
    return tuple(dict.fromkeys(roots))


def inside_packages(path: Path) -> Path | None:
    """The package folder that holds path (after resolving links), or None."""
    real = Path(os.path.abspath(path)).resolve()
    return next((root for root in protected_roots() if real == root or root in real.parents), None)


def is_report(path: Path) -> bool:
    """Whether path is a JSON object written by :func:`write_report` (it carries :data:`MARKER`)."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_REPORT_BYTES:
            return False
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and MARKER in doc


def check_report_path(path: Path, force: bool = False, flag: str = "--json") -> Path:
    """path if a report may go there, else RefusedPath: inside the packages always, a foreign file without force."""
    _refuse_dir_or_package(path, flag, "write reports elsewhere (e.g. artifacts/)")
    if path.exists() and not force and not is_report(path):
        raise RefusedPath(f"{flag} {path} exists and is not a report of ours (no {MARKER!r} key); "
                          "pass --force to replace it")
    _refuse_committed(path, force, flag)
    _probe(path.parent, path, flag)
    return path


def check_output_file(path: Path, force: bool = False, flag: str = "--out") -> Path:
    """path if a non-report file (a figure, a joined download) may go there: never in the packages, links resolved."""
    _refuse_dir_or_package(path, flag, "write it elsewhere (e.g. artifacts/)")
    _refuse_committed(path, force, flag)
    _probe(path.parent, path, flag)
    return path


def _refuse_dir_or_package(path: Path, flag: str, elsewhere: str) -> None:
    """RefusedPath for an empty path, a directory, or a path inside a shipped package (links resolved)."""
    if not str(path).strip():
        raise RefusedPath(f"{flag} needs a file path; got an empty one")
    if path.is_dir():
        raise RefusedPath(f"{flag} {path} is a directory; give a file path")
    root = inside_packages(path)
    if root is not None:
        raise RefusedPath(f"{flag} {path} is inside the {root.name} package, which this project ships; {elsewhere}")


def _refuse_committed(path: Path, force: bool, flag: str) -> None:
    """RefusedPath for an existing file in a folder of committed results (bench/), unless force."""
    real = Path(os.path.abspath(path)).resolve()
    if not force and real.exists() and any(real.parent == Path(c).resolve() for c in COMMITTED):
        raise RefusedPath(f"{flag} {path} is a committed result of this project; pass --force to replace it")


def check_out_dir(path: Path, force: bool = False, flag: str = "--out") -> Path:
    """path if a writer (training, export) may fill that folder, else RefusedPath; in the packages only with force."""
    if not str(path).strip():
        raise RefusedPath(f"{flag} needs a directory; got an empty path")
    if path.exists() and not path.is_dir():
        raise RefusedPath(f"{flag} {path} is a file, not a directory")
    root = inside_packages(path)
    if root is not None and not force:
        raise RefusedPath(f"{flag} {path} is inside the {root.name} package: this would overwrite files the project "
                          "ships (the shipped weights live in gpu_demo/assets); give another folder, or --force")
    if path.is_dir() and not force:
        for entry in path.iterdir():
            linked = inside_packages(entry) if entry.is_symlink() else None
            if linked is not None:
                raise RefusedPath(f"{flag} {path} holds {entry.name}, a link into the {linked.name} package the "
                                  "project ships; remove it, give another folder, or --force")
    _probe(path, path, flag)
    return path


def _probe(folder: Path, shown: Path, flag: str) -> None:
    """Create folder if needed and write (then delete) a scratch file in it; RefusedPath naming `shown`."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-check-"):
            pass
    except OSError as exc:
        raise RefusedPath(f"{flag} cannot write {shown}: {exc.strerror or exc}") from None


def write_report(path: Path, report: dict, writer: str, force: bool = False, flag: str = "--json") -> Path:
    """Check path, then write {MARKER: writer, **report} as JSON atomically (a temp file renamed over it)."""
    path = check_report_path(Path(path), force, flag)
    text = json.dumps({MARKER: writer, **report}, indent=2, default=str) + "\n"
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
