"""Batch timing for the live page's batch view (meaningful on CUDA): v measured at batch 1..256 beside the model.

v(B) = t(B sequences x (gamma + 1) new tokens) / t(B sequences x 1 new token) on the pair's own target,
at a fixed cached context, median of a few synchronised repeats. The model curve is the roofline page's
``specdec_core.steptime.step_time`` for this GPU's preset (matched by name) and the target's shape.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence

import torch

from gpu_demo.device import timed_once
from gpu_demo.tree_decode import verify_args
from specdec_core.roofline import HARDWARE, Hardware
from specdec_core.steptime import DecoderShape, spec_curve
from specdec_core.trees import Tree

BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)


def _timed_forward(model, idx: torch.Tensor, start: int, repeats: int, tree: Tree | None = None) -> float:
    """Median seconds of forward(idx (B, T)) from a cache of `start` positions (rolled back each time); with a tree
    (T = its nodes + 1), the pass the tree engine makes to verify it (tree_decode.verify_args)."""
    args = () if tree is None else verify_args(tree, start, idx.device)
    times = []
    for _ in range(repeats):
        model.rollback(start)
        times.append(timed_once(lambda: model.forward(idx, *args), idx.device))
    return statistics.median(times)


def measure_v(model, gamma: int, batches: Sequence[int] = BATCHES, context: int = 64, repeats: int = 7,
              on_progress: Callable[[float], None] | None = None, tree: Tree | None = None
              ) -> list[tuple[int, float, float, float]]:
    """(B, decode s, verify s, v) per batch size, on any DecoderLM (the GPU is where it is meaningful).

    v = t(gamma + 1 new tokens) / t(1): a chain's causal pass, or with `tree` (gamma = its nodes) the tree-masked
    pass that verifies it (tree_decode.verify_args: a chain-shaped tree is verified causally), which a dynamic
    tree's costs should come from.
    """
    if tree is not None and tree.n_nodes != gamma:
        raise ValueError(f"a tree of {tree.n_nodes} nodes verifies {tree.n_nodes + 1} tokens, not gamma + 1 = "
                         f"{gamma + 1}")
    dev = model.device
    gen = torch.Generator(device="cpu").manual_seed(0)
    rows = []
    with torch.inference_mode():
        for i, b in enumerate(batches):
            ids = torch.randint(0, model.vocab_size, (b, context + gamma + 1), generator=gen).to(dev)  # (B, L)
            model.reset(b)
            model.forward(ids[:, :context])  # the cached context
            _timed_forward(model, ids[:, context:context + 1], context, 2)  # warm-up
            t1 = _timed_forward(model, ids[:, context:context + 1], context, repeats)  # (B, 1) decode step
            tv = _timed_forward(model, ids[:, context:context + gamma + 1], context, repeats, tree)  # (B, gamma+1)
            rows.append((b, t1, tv, tv / t1))
            if on_progress:
                on_progress((i + 1) / len(batches))
        model.reset(1)
    return rows


def gpu_preset(device_name: str) -> Hardware | None:
    """The roofline preset whose name matches this GPU (e.g. 'NVIDIA H200' -> 'H200 SXM'), if any."""
    name = device_name.upper()
    for key, hw in HARDWARE.items():
        model = key.split()[0].upper()
        if model in name and ("PCIE" in name) == ("PCIE" in key.upper()):
            return hw
    return None


def target_shape(model, params: int | None) -> DecoderShape | None:
    """The built-in transformer's shape for the step-time model (None for models without a CharConfig)."""
    cfg = getattr(model, "cfg", None)
    if cfg is None or not hasattr(cfg, "n_layer"):
        return None
    n = params or sum(p.numel() for p in model.parameters())
    return DecoderShape("built-in target", float(n), cfg.n_layer, cfg.d_model, cfg.n_head,
                        cfg.d_model // cfg.n_head, cfg.max_seq_len, source="gpu_demo/assets/target.json")


def model_v(shape: DecoderShape, hw: Hardware, gamma: int, batches: Sequence[int], context: int = 64) -> list[float]:
    """v(B) = t(B, gamma + 1) / t(B, 1) from the roofline page's spec_curve, bf16 (alpha and draft do not enter v)."""
    return spec_curve(shape, shape, hw, "bf16", gamma, 0.5, context, list(batches)).v.tolist()
