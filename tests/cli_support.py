"""Running the CLI in-process the way a person sees it: its exit code and the one line it printed to stderr."""

from __future__ import annotations

from gpu_demo.__main__ import main


def one_line_run(argv: list[str], capsys) -> tuple[int, str]:
    """(exit code, the single stderr line) of `python -m gpu_demo argv`; fails if it printed more or a traceback."""
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = int(exc.code or 0)
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return rc, lines[0]
