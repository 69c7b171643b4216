"""Distil a draft on its target's laws, so that it accepts more: alpha = sum_x min(p(x), q(x)) = 1 - TV(p, q).

A draft trained on the text alone learns the data's law, not the target's. Speculative decoding only
cares about the second: per position the acceptance probability is 1 - TV(p, q), so the loss here
is the total variation itself, plus a small soft cross-entropy H(p, q) that keeps q's support wide
(TV has no gradient where p = q = 0, and a q that is 0 where p is not can never be corrected).
This is the idea of DistillSpec (Zhou et al., 2023), which found TV-style objectives among the best.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from gpu_demo.training.loop import Progress, fit, lr_cosine


def distill_loss(p: torch.Tensor, log_q: torch.Tensor, ce_weight: float = 0.1) -> torch.Tensor:
    """mean over positions of TV(p, q) + ce_weight * H(p, q); p (..., V) probabilities, log_q (..., V) log-probs.

    TV(p, q) = 0.5 * sum_x |p(x) - q(x)| = 1 - sum_x min(p(x), q(x)); H(p, q) = -sum_x p(x) log q(x).
    """
    if p.shape != log_q.shape:
        raise ValueError(f"p {tuple(p.shape)} and log_q {tuple(log_q.shape)} must have one shape")
    if not ce_weight >= 0:
        raise ValueError(f"ce_weight must be >= 0; got {ce_weight!r}")
    tv = 0.5 * (p - log_q.exp()).abs().sum(-1)  # (...,)
    ce = -(p * log_q).sum(-1)  # (...,)
    return (tv + ce_weight * ce).mean()


@torch.no_grad()
def acceptance(teacher: torch.nn.Module, student: torch.nn.Module, windows: torch.Tensor) -> float:
    """Mean over positions of alpha = sum_x min(p(x), q(x)) at temperature 1, from full forwards over windows (B, L)."""
    p = torch.softmax(teacher.forward_train(windows).float(), -1)  # (B, L, V)
    q = torch.softmax(student.forward_train(windows).float(), -1)  # (B, L, V)
    return torch.minimum(p, q).sum(-1).mean().item()


def distill(
    student: torch.nn.Module, teacher: torch.nn.Module, batches: Callable[[int], torch.Tensor], steps: int,
    lr: float, ce_weight: float, val_windows: torch.Tensor, eval_every: int = 250, desc: str = "distil",
) -> list[dict]:
    """Train `student` for `steps` AdamW steps on distill_loss against the frozen `teacher`; returns the log.

    ``batches(step)`` gives the input windows (B, L) of that step. The teacher's laws are computed on
    the fly (in inference mode), so nothing is stored. Each log entry has the held-out alpha.
    """
    teacher.eval()
    student.train()
    opt = torch.optim.AdamW(student.parameters(), lr=lr, betas=(0.9, 0.99), weight_decay=0.0)
    log: list[dict] = [{"step": 0, "held_out_alpha_t1": round(acceptance(teacher, student, val_windows), 4)}]

    def loss_at(step: int) -> torch.Tensor:
        x = batches(step)  # (B, L)
        with torch.inference_mode():
            p = torch.softmax(teacher.forward_train(x).float(), -1)  # (B, L, V)
        return distill_loss(p.clone(), F.log_softmax(student.forward_train(x), -1), ce_weight)

    def evaluate(pr: Progress) -> dict:
        student.eval()
        a = acceptance(teacher, student, val_windows)
        student.train()
        return {"step": pr.step, "distill_loss_ema": round(pr.loss_ema, 4), "held_out_alpha_t1": round(a, 4),
                "elapsed_s": round(pr.elapsed_s, 1)}

    fitted = fit(student.parameters(), opt, loss_at, steps, lambda step: lr_cosine(step, steps, lr, lr / 10),
                 evaluate, eval_due=lambda step: (step + 1) % eval_every == 0, desc=desc)
    log += fitted.log
    student.eval()
    return log
