"""Fixed-shape steps of a cached decoder: captured once per shape as CUDA graphs and replayed, as gpt-fast and vLLM do.

On a GPU a small model's eager decode step is mostly the host launching kernels; replaying a captured graph
launches them all at once. A graph replays fixed shapes and fixed addresses, so a step here is the model's
``step_at`` over static buffers: ``Llama.step_at`` (ids -> logits and hidden states) for a target or a model
draft, ``EagleHead.step_at`` (features and ids -> the next features) for the feature-level draft.

- the inputs (B, Tb, ...), slots (Tb,), rope_pos (Tb,) and an additive bias (Tb, capacity): every position is a
  device tensor, and attention reads the whole cache under the bias, so one graph serves every position;
- T new tokens are padded up to a bucket Tb (1, 2, 4, ..., 64). The pad tokens' keys land in the slots after
  the real ones, which the real rows' bias hides and the next step overwrites, and their rows are dropped;
- the cache's length stays a host integer (reserve, advance, rollback), so a step reads nothing back.

capture=False runs the same buffers eagerly: what a CPU test can check of the padding and the buffers. A shape
that does not fit (T past the last bucket, or padding past the cache's end) returns None and the caller runs
its eager step.

compiled=True (``$SPECDEC_TORCH_COMPILE=1``) runs ``torch.compile(step_at)`` instead, as gpt-fast does for its
fusion: one compile per shape (dynamic=False), timed in ``compile_s``, and on a GPU the compiled kernels are what
the graph captures.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import torch

from gpu_demo.models.base import tree_bias_at_offset

BUCKETS = (1, 2, 4, 8, 16, 32, 64)


def bucket_of(t: int, buckets: tuple[int, ...] = BUCKETS) -> int | None:
    """The smallest bucket >= t, or None past the last."""
    return next((b for b in buckets if b >= t), None)


def chain_bias(slots: torch.Tensor, width: int, dtype: torch.dtype) -> torch.Tensor:
    """Additive mask (T, width): 0 where key j <= slots[i], -inf after (causal over the whole cache)."""
    keys = torch.arange(width, device=slots.device)  # (width,)
    zero = torch.zeros((), device=slots.device, dtype=dtype)
    return torch.where(keys[None, :] <= slots[:, None], zero, torch.full_like(zero, float("-inf")))


def tree_bias(start: int, tree_mask: torch.Tensor, t_pad: int, width: int, dtype: torch.dtype) -> torch.Tensor:
    """Additive mask (t_pad, width) for a token tree at start..: the tree's rows (base.tree_bias_at_offset), keys
    past the tree hidden; pad rows see the prefix and themselves (no row is all -inf)."""
    t = tree_mask.shape[0]
    slots = torch.arange(start, start + t_pad, device=tree_mask.device)  # (t_pad,)
    bias = chain_bias(slots, width, dtype)  # (t_pad, width): pad rows causal
    bias[:t, : start + t] = tree_bias_at_offset(start, tree_mask, dtype)
    bias[:t, start + t :] = float("-inf")
    return bias


@dataclass
class StaticShape:
    """The buffers of one (B, Tb) step and its graph (None: run eagerly): the step's inputs (B, Tb, ...) and
    outputs (B, Tb, ...), e.g. a Llama's ids in and logits (B, Tb, V) and hidden states (B, Tb, C) out."""

    inputs: tuple[torch.Tensor, ...]
    slots: torch.Tensor
    rope_pos: torch.Tensor
    bias: torch.Tensor
    graph: object | None = None
    outputs: tuple[torch.Tensor, ...] = ()


@dataclass
class StaticSteps:
    """A cached decoder's steps over static buffers, one StaticShape per (batch, bucket), captured on first use
    when capture is True (CUDA only). The model calls it from its forward and provides
    ``step_at(*inputs, slots, rope_pos, bias) -> outputs``; see the module docstring."""

    model: object
    capture: bool
    buckets: tuple[int, ...] = BUCKETS
    shapes: dict[tuple[int, int], StaticShape] = field(default_factory=dict)
    compiled: bool = False  # torch.compile the step (each shape compiles on its first call)
    capture_s: float = 0.0  # seconds spent warming up and capturing, over every shape (compiling included)
    compile_s: float = 0.0  # seconds of the compiled step's first call per shape (its compile), over every shape
    cache_ptr: int = -1  # the cache buffer the graphs were captured on: a reallocated cache drops them
    _step: object = None  # model.step_at, or its compiled form

    def __post_init__(self) -> None:
        self._step = torch.compile(self.model.step_at, dynamic=False) if self.compiled else self.model.step_at

    def __call__(self, inputs: tuple[torch.Tensor, ...], positions: torch.Tensor | None = None,
                 tree_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, ...] | None:
        """The step's outputs (B, T, ...) for inputs (B, T, ...) at the cache's end (as the model's forward), or
        None where no shape fits."""
        m = self.model
        b, t = inputs[0].shape[:2]
        start = m.cache.reserve(b, t, m.device, m.dtype)
        tb = bucket_of(t, self.buckets)
        if tb is None or start + tb > m.cache.capacity:
            return None
        if m.cache.k[0].data_ptr() != self.cache_ptr:  # reset to another batch or device: new buffers
            self.shapes.clear()
            self.cache_ptr = m.cache.k[0].data_ptr()
        slots = torch.arange(start, start + tb, device=m.device)  # (Tb,)
        rope = slots if positions is None else torch.cat([positions.to(m.device), slots[t:]])  # (Tb,)
        width = m.cache.capacity
        if tree_mask is None:
            bias = chain_bias(slots, width, m.dtype)  # (Tb, width)
        else:
            bias = tree_bias(start, tree_mask, tb, width, m.dtype)
        shape = self.shapes.get((b, tb))
        fresh = shape is None
        if fresh:
            buffers = tuple(x.new_zeros((b, tb, *x.shape[2:])) for x in inputs)  # (B, Tb, ...) each
            shape = StaticShape(buffers, slots.clone(), rope.clone(), bias.clone())
            self.shapes[(b, tb)] = shape
        for buf, x in zip(shape.inputs, inputs):
            buf[:, :t].copy_(x)
        shape.slots.copy_(slots)
        shape.rope_pos.copy_(rope)
        shape.bias.copy_(bias)
        if fresh and self.compiled:
            self._first_call(shape)
        if fresh and self.capture:
            self._capture(shape)
        if shape.graph is not None:
            shape.graph.replay()
        else:
            shape.outputs = self._step(*shape.inputs, shape.slots, shape.rope_pos, shape.bias)
        m.cache.advance(t)
        return tuple(y[:, :t].clone() for y in shape.outputs)  # (B, T, ...) each: the buffers are the next replay's

    def _first_call(self, shape: StaticShape) -> None:
        """Compile the step for this shape by calling it once (it writes this call's slots, which the call itself
        writes next); its time goes to compile_s."""
        t0 = time.perf_counter()
        self._step(*shape.inputs, shape.slots, shape.rope_pos, shape.bias)
        if self.model.device.type == "cuda":
            torch.cuda.synchronize()
        self.compile_s += time.perf_counter() - t0

    def _capture(self, shape: StaticShape) -> None:
        """Warm the step up on a side stream, then capture it into a CUDA graph over this shape's buffers.

        Warm-up runs write this call's slots, which the call itself writes next, so the cache keeps its values."""
        t0 = time.perf_counter()

        def run() -> tuple[torch.Tensor, ...]:
            return self._step(*shape.inputs, shape.slots, shape.rope_pos, shape.bias)

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(2):
                run()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            shape.outputs = run()
        shape.graph = graph
        torch.cuda.synchronize()
        self.capture_s += time.perf_counter() - t0


def use_static_steps(model: object, capture: bool, compiled: bool = False) -> StaticSteps:
    """Route model.forward's eager steps through fixed-shape buffers (capture: as CUDA graphs; compiled: through
    torch.compile); returns them."""
    if capture and not (torch.cuda.is_available() and model.device.type == "cuda"):
        raise ValueError("CUDA graphs need the model on a CUDA device")
    steps = StaticSteps(model, capture, compiled=compiled)
    model.static_steps = steps
    return steps


GRAPHS_ENV = "SPECDEC_CUDA_GRAPHS"
COMPILE_ENV = "SPECDEC_TORCH_COMPILE"


def compile_wanted() -> bool:
    """$SPECDEC_TORCH_COMPILE=1: compile the graphed steps (each shape compiles once: seconds to a minute)."""
    return os.environ.get(COMPILE_ENV, "").strip() == "1"


def graphs_wanted(device: torch.device) -> bool:
    """$SPECDEC_CUDA_GRAPHS=1 on a CUDA device. Off by default until bench/gpu_check.py's graphs stage has measured
    it on a GPU; the fixed-shape steps themselves are checked on a CPU (tests/test_graphs.py)."""
    return device.type == "cuda" and os.environ.get(GRAPHS_ENV, "").strip() == "1"


def graph_models(*models: object, compiled: bool = False) -> list[str]:
    """Capture the steps of every model here that has a tensor-position step (a Llama, an EagleHead), compiled
    first if asked; returns their class names."""
    done = []
    for m in models:
        if hasattr(m, "step_at") and getattr(m, "static_steps", None) is None:
            use_static_steps(m, capture=True, compiled=compiled)
            done.append(type(m).__name__)
    return done
