"""Reading weight files: safetensors only (never pickle), every tensor checked finite, failures naming the file."""

from __future__ import annotations

from pathlib import Path

import torch


class DamagedFile(ValueError):
    """A pair's file is missing or cannot be read; the message names the file."""


def non_finite(state: dict[str, torch.Tensor]) -> str | None:
    """The name of the first floating tensor holding NaN or +-inf, or None (an all-0xFF data block is all NaN)."""
    for name, t in state.items():
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            return name
    return None


def load_safetensors(path: Path | str) -> dict[str, torch.Tensor]:
    """The tensors of a safetensors file on the CPU; DamagedFile naming the file if any holds a non-finite value."""
    from safetensors.torch import load_file

    state = load_file(str(path))
    bad = non_finite(state)
    if bad is not None:
        raise DamagedFile(f"{path}: tensor {bad!r} holds NaN or infinite values; the weights are damaged")
    return state
