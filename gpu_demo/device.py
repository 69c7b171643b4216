"""Device choice and device sync, the one copy: 'auto' / 'cpu' / 'cuda' -> torch.device, and honest clocks.

Every wall-clock reading in the engine goes through :func:`sync` (CUDA work is asynchronous: without a
synchronize, a timer measures the launch, not the kernel) or the :class:`Stopwatch` built on it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch

DEVICES = ("auto", "cpu", "cuda")


def gpu_name() -> str | None:
    """The first CUDA GPU's name, or None when PyTorch sees no GPU."""
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def default_device() -> torch.device:
    """CUDA when PyTorch sees a GPU, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def resolve_device(device: str | torch.device | None) -> torch.device:
    """'auto' or None -> default_device(); 'cpu'; 'cuda' (ValueError when no GPU is there); anything else refused."""
    if device is None or str(device) == "auto":
        return default_device()
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        dev = None
    if dev is None or dev.type not in ("cpu", "cuda"):
        raise ValueError(f"device must be one of {', '.join(DEVICES)}; got {str(device)!r}")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for, but no CUDA GPU is available here; use 'cpu' or 'auto'")
    return dev


def device_label(dev: torch.device) -> str:
    """A human name for a device: 'CUDA: <GPU name>' or 'CPU (n threads)'."""
    if dev.type == "cuda":
        return f"CUDA: {torch.cuda.get_device_name(dev)}"
    n = torch.get_num_threads()
    return f"CPU ({n} thread{'' if n == 1 else 's'})"


def sync(device: torch.device) -> None:
    """Wait for queued CUDA work so that a wall-clock reading is honest (a no-op on the CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Stopwatch:
    """Synchronised laps: ``lap()`` returns the seconds since the previous lap (or since construction)."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        sync(device)
        self._t = time.perf_counter()

    def lap(self) -> float:
        """Sync the device, then seconds since the last lap."""
        sync(self.device)
        now = time.perf_counter()
        dt, self._t = now - self._t, now
        return dt


def timed_once(fn: Callable[[], object], device: torch.device) -> float:
    """Wall-clock seconds of one synchronised call of fn (no warm-up)."""
    watch = Stopwatch(device)
    fn()
    return watch.lap()


def time_call(fn: Callable[[], object], device: torch.device, repeats: int) -> list[float]:
    """Seconds of `repeats` synchronised calls of fn after one warm-up call."""
    fn()
    sync(device)
    return [timed_once(fn, device) for _ in range(repeats)]
