"""The one training loop: AdamW steps on a loss, a learning-rate schedule, clipping, and periodic evaluation.

Used by the built-in pair's training (``training.char``), distillation on the target's laws
(``training.distill``), the SmolLM2 draft (``training.smollm2_draft``) and the feature-level draft
(``training.eagle``). Each caller supplies what differs: the loss of step t (which draws its own batch,
so the random stream is the caller's), the schedule (every caller's is :func:`lr_cosine`), and what to
evaluate and when.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import torch


def lr_cosine(step: int, steps: int, lr: float, lr_min: float, warmup: int = 20) -> float:
    """Linear warm-up over `warmup` steps, then cosine decay from lr to lr_min at `steps`."""
    if step < warmup:
        return lr * (step + 1) / warmup
    frac = (step - warmup) / max(1, steps - warmup)
    return lr_min + 0.5 * (lr - lr_min) * (1 + math.cos(math.pi * min(1.0, frac)))


@dataclass
class Progress:
    """Where a run is: the step just taken (1-based), the smoothed and the last loss, seconds elapsed."""

    step: int
    loss_ema: float
    loss: float
    elapsed_s: float


@dataclass
class FitResult:
    """What a run leaves: the evaluation log and the final smoothed loss."""

    log: list[dict] = field(default_factory=list)
    loss_ema: float = float("nan")


def fit(
    params: Iterable[torch.nn.Parameter],
    opt: torch.optim.Optimizer,
    loss_at: Callable[[int], torch.Tensor],
    steps: int,
    lr_at: Callable[[int], float],
    evaluate: Callable[[Progress], dict | None] | None = None,
    eval_due: Callable[[int], bool] = lambda step: False,
    desc: str = "train",
    clip: float = 1.0,
) -> FitResult:
    """For t < steps: lr <- lr_at(t); loss_at(t).backward(); clip the gradient norm; step. Returns the log.

    ``eval_due(t)`` (t the 0-based step just taken) decides when ``evaluate`` runs; each dict it returns is
    appended to the log (None appends nothing). The loss is smoothed as ema <- 0.95 ema + 0.05 loss.
    """
    from tqdm import tqdm

    params = list(params)
    result, t0 = FitResult(), time.perf_counter()
    ema: float | None = None
    bar = tqdm(range(steps), desc=desc, mininterval=2.0)
    for step in bar:
        for group in opt.param_groups:
            group["lr"] = lr_at(step)
        loss = loss_at(step)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, clip)
        opt.step()
        value = loss.item()
        ema = value if ema is None else 0.95 * ema + 0.05 * value
        bar.set_postfix(loss=f"{ema:.4f}")
        if evaluate is not None and (eval_due(step) or step + 1 == steps):
            entry = evaluate(Progress(step + 1, ema, value, time.perf_counter() - t0))
            if entry is not None:
                result.log.append(entry)
                bar.write(f"[{desc}] " + "  ".join(f"{k} {v}" for k, v in entry.items()))
    result.loss_ema = float("nan") if ema is None else ema
    return result
