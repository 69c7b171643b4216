"""The command-line flags the CLI and every bench script share, each with its one check and default.

A bad value is refused in one line with exit 2 (:class:`CliParser`), before any model is loaded.
``--json PATH`` / ``--out DIR`` go through :mod:`gpu_demo.reports` (never a file the project ships; an
existing file that is not a report of ours only with ``--force``), checked by :func:`parse` before any work.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

from gpu_demo.reports import RefusedPath, check_out_dir, check_report_path

SEED_MAX = 2**63 - 1  # torch.Generator.manual_seed takes a signed 64-bit seed
MAX_NEW_TOKENS = 100_000
MAX_THREADS = 1024


class CliParser(argparse.ArgumentParser):
    """argparse that reports a bad argument in one line (no usage block) and exits 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {' '.join(message.split())}\n")


def int_in(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse type: an integer in [lo, hi], refused with the range otherwise."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer (allowed: {lo} to {hi})") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value} is outside the allowed range {lo} to {hi}")
        return value

    return parse


def float_in(lo: float, hi: float) -> Callable[[str], float]:
    """An argparse type: a finite number in [lo, hi]."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number (allowed: {lo:g} to {hi:g})") from None
        if not (math.isfinite(value) and lo <= value <= hi):
            raise argparse.ArgumentTypeError(f"{text} is outside the allowed range {lo:g} to {hi:g}")
        return value

    return parse


def gamma_list(text: str) -> list[int]:
    """'4', '1,2,4' or '1-8' -> the draft lengths, each in [1, MAX_GAMMA], refused before anything is allocated."""
    from gpu_demo.decode import MAX_GAMMA

    out: list[int] = []
    for part in text.split(","):
        lo, dash, hi = part.strip().partition("-")
        try:
            a, b = int(lo), int(hi) if dash else int(lo)
        except ValueError:
            msg = f"{text!r} is not a list of draft lengths such as 4, 1,2,4 or 1-8"
            raise argparse.ArgumentTypeError(msg) from None
        if not (1 <= a <= MAX_GAMMA and 1 <= b <= MAX_GAMMA):
            raise argparse.ArgumentTypeError(f"draft lengths must be in 1 to {MAX_GAMMA}; got {part.strip()!r}")
        if b < a:
            raise argparse.ArgumentTypeError(f"the range {part.strip()!r} runs backwards; write {b}-{a}")
        out.extend(range(a, b + 1))
    return sorted(set(out))


def device_name(text: str) -> str:
    """An argparse type: auto, cpu or cuda (cuda only where PyTorch sees a GPU)."""
    from gpu_demo.device import resolve_device

    try:
        resolve_device(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def path_text(text: str) -> Path:
    """An argparse type: a non-empty path (where it may be written is checked by :func:`parse`, with --force known)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("needs a path; got an empty one")
    return Path(text)


# ------------------------------------------------------------------------------------- the shared flags


def add_device(ap: argparse.ArgumentParser, default: str = "auto") -> None:
    """--device auto | cpu | cuda."""
    ap.add_argument("--device", default=default, type=device_name, help=f"auto (CUDA if present) | cpu | cuda "
                    f"(default {default})")


def add_threads(ap: argparse.ArgumentParser, default: int | None = 1) -> None:
    """--threads N: torch CPU threads (1 by default: batch-1 decoding of small models is latency-bound)."""
    ap.add_argument("--threads", type=int_in(1, MAX_THREADS), default=default,
                    help="torch CPU threads (default 1: batch-1 decoding of small models is latency-bound, and "
                         "OpenMP hand-offs cost milliseconds on a busy machine)" if default == 1 else
                         f"torch CPU threads (default {default or 'torch' + chr(39) + 's choice'})")


def add_max_new_tokens(ap: argparse.ArgumentParser, default: int = 200, *aliases: str) -> None:
    """--max-new-tokens N (old spellings such as --max-new kept as aliases)."""
    ap.add_argument("--max-new-tokens", *aliases, dest="max_new_tokens", type=int_in(1, MAX_NEW_TOKENS),
                    default=default, help=f"tokens to generate per prompt (default {default})")


def add_gamma(ap: argparse.ArgumentParser, default: str = "1-8", single: bool = False) -> None:
    """--gamma: one draft length (0 = plain autoregressive) when single, else a list such as 4, 1,2,4 or 1-8."""
    from gpu_demo.decode import MAX_GAMMA

    if single:
        ap.add_argument("--gamma", type=int_in(0, MAX_GAMMA), default=int(default),
                        help="draft length (0 = plain autoregressive)")
    else:
        ap.add_argument("--gamma", type=gamma_list, default=gamma_list(default),
                        help=f"draft lengths, e.g. 4, 1,2,4 or 1-8 (default {default})")


def add_temperature(ap: argparse.ArgumentParser, default: float = 1.0) -> None:
    """--temperature T in [0, 100], 0 = greedy."""
    ap.add_argument("--temperature", type=float_in(0.0, 100.0), default=default, help="0 = greedy")


def add_json(ap: argparse.ArgumentParser, const: str | None = None) -> None:
    """--json PATH (the report) and --force (replace an existing file that is not a report of ours)."""
    extra = {"nargs": "?", "const": const} if const else {}
    ap.add_argument("--json", metavar="PATH", type=path_text, default=None, **extra,
                    help="write the full report as JSON" + (f" (default path: {const})" if const else ""))
    add_force(ap)


def add_force(ap: argparse.ArgumentParser) -> None:
    """--force, once per parser."""
    if not any("--force" in a.option_strings for a in ap._actions):
        ap.add_argument("--force", action="store_true",
                        help="replace an existing file that is not a report of ours (or, for train, the shipped "
                             "weights in gpu_demo/assets)")


def check_paths(args: argparse.Namespace, default_out: Path | None = None) -> None:
    """Refuse (RefusedPath) a --json or --out the reports guard forbids; --out defaults to default_out."""
    force = bool(getattr(args, "force", False))
    if getattr(args, "json", None) is not None:
        check_report_path(args.json, force)
    if hasattr(args, "out") and (args.out is not None or default_out is not None):
        check_out_dir(args.out if args.out is not None else default_out, force)


def parse(ap: argparse.ArgumentParser, argv: Sequence[str] | None = None,
          default_out: Path | None = None) -> argparse.Namespace:
    """parse_args, then the path checks: a refused --json / --out exits 2 with one line before any work."""
    args = ap.parse_args(argv)
    try:
        check_paths(args, default_out)
    except RefusedPath as exc:
        ap.error(str(exc))
    if getattr(args, "threads", None):
        import torch

        torch.set_num_threads(args.threads)
    return args
