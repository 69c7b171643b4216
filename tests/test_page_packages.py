"""One folder per page: a page's helpers (ui/<page>/) and its script (views/<page>.py) import only what pages
share, never another page's package; the shared modules import no page; the app never imports the test harness."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted(p.name for p in (ROOT / "ui").iterdir() if p.is_dir() and (p / "__init__.py").is_file())


def imported(path: Path) -> set[str]:
    """Every module an import statement in ``path`` names, with ``from a import b`` also giving ``a.b``."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return out


def page_of(module: str) -> str | None:
    """'ui.live.panel' -> 'live'; a shared ui module or anything else -> None."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "ui" and parts[1] in PAGES else None


def offences(path: Path, own: str | None) -> list[str]:
    """Imports of a page package other than ``own`` (``own`` None: any page package)."""
    return sorted(m for m in imported(path) if page_of(m) not in (None, own))


def test_every_page_with_helpers_has_a_package() -> None:
    assert {"algebra", "roofline", "proof", "trees", "live", "engines", "interview"} <= set(PAGES)
    assert not [p.name for p in (ROOT / "ui").glob("*.py") if any(p.name.startswith(f"{pg}_") for pg in PAGES)]


def test_no_page_imports_another_pages_package() -> None:
    bad = {}
    for page in PAGES:
        files = [*(ROOT / "ui" / page).rglob("*.py"), ROOT / "views" / f"{page}.py"]
        bad |= {str(f.relative_to(ROOT)): o for f in files if f.is_file() and (o := offences(f, page))}
    assert not bad, bad


def test_shared_modules_import_no_page() -> None:
    bad = {str(f.relative_to(ROOT)): o for f in (ROOT / "ui").glob("*.py") if (o := offences(f, None))}
    assert not bad, bad


def test_the_app_does_not_import_the_harness() -> None:
    files = [ROOT / "app.py", *(ROOT / "views").glob("*.py"), *(ROOT / "ui").rglob("*.py")]
    assert not [str(f.relative_to(ROOT)) for f in files if any(m.startswith("harness") for m in imported(f))]


def test_the_check_sees_a_cross_page_import(tmp_path: Path) -> None:
    """Negative control: a live helper importing the trees page's data is caught."""
    f = tmp_path / "x.py"
    f.write_text("from ui.trees import data as td\nfrom ui import theme\n")
    assert offences(f, "live") == ["ui.trees", "ui.trees.data"]
    assert offences(f, "trees") == []
