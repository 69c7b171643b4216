"""The one walk that swaps a model's linear maps for another kernel (prepacked, quantised) and back."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn


def swappable(m: nn.Module) -> bool:
    """A bias-free nn.Linear holding float32 weights on the CPU: what the CPU kernels replace."""
    return isinstance(m, nn.Linear) and m.bias is None and m.weight.device.type == "cpu" \
        and m.weight.dtype == torch.float32


def swap_linears(module: nn.Module, make: Callable[[str, nn.Linear], nn.Module], kind: type[nn.Module],
                 prefix: str = "") -> int:
    """Every swappable linear under ``module`` -> make(its qualified name, it); modules already of ``kind`` are left
    alone (not wrapped twice, not entered). Returns how many were swapped."""
    n = 0
    for name, child in module.named_children():
        full = f"{prefix}{name}"
        if swappable(child):
            setattr(module, name, make(full, child))
            n += 1
        elif not isinstance(child, kind):
            n += swap_linears(child, make, kind, f"{full}.")
    return n


def unswap_linears(module: nn.Module, kind: type[nn.Module]) -> int:
    """Undo swap_linears: every module of ``kind`` back to the nn.Linear its ``plain()`` gives. Returns how many."""
    n = 0
    for name, child in module.named_children():
        if isinstance(child, kind):
            setattr(module, name, child.plain())
            n += 1
        else:
            n += unswap_linears(child, kind)
    return n
