"""The feature-level draft trained from stored token shards: features in the target's own precision, and held-out
acceptance at both rules.

Features: the target (in whatever dtype it runs: bf16 on a GPU, float32 or float16 on a CPU) re-reads each stored
prompt + reply, teacher-forced in left-padded batches; f_i is kept in that dtype, and
log Z_i = logsumexp(E f_i) from the last prompt position on.
Acceptance per draft position s: T = 1, sum_{x in S} min(p(x), q(x)); T = 0, [argmax_S q = argmax_V p]
(the greedy rule accepts the draft's argmax only if it is the target's argmax over the whole vocabulary).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from gpu_demo.models.eagle import EagleHead
from gpu_demo.models.llama import Llama
from gpu_demo.training.eagle import EagleTrainConfig, batch_tensors, unrolled_features
from gpu_demo.training.eagle_data import Sample, padded_step


@torch.inference_mode()
def features_for(model: Llama, rows: list[tuple[torch.Tensor, int]], batch: int = 16) -> list[Sample]:
    """Teacher-forced target features (model's dtype) and log Z for (ids, prompt length) rows, in padded batches.

    Rows are batched shortest first, so a batch pads to lengths close to its own; the samples come back in the
    order of ``rows``.
    """
    out: list[Sample | None] = [None] * len(rows)
    E = model.tok_embeddings.weight
    order = sorted(range(len(rows)), key=lambda i: rows[i][0].numel())
    for a in range(0, len(order), batch):
        chunk = order[a:a + batch]
        L = max(rows[i][0].numel() for i in chunk)
        ids = torch.zeros(len(chunk), L, dtype=torch.long, device=model.device)
        keep = torch.zeros(len(chunk), L, dtype=torch.bool, device=model.device)
        for b, i in enumerate(chunk):
            x = rows[i][0]
            ids[b, L - x.numel():] = x.to(model.device)
            keep[b, L - x.numel():] = True
        model.reset(len(chunk))
        f, _ = padded_step(model, ids, keep)  # (B, L, C)
        for b, i in enumerate(chunk):
            x, lp = rows[i]
            fb = f[b, L - x.numel():][:-1]  # f_0 .. f_{n-2}: each predicts the next token
            logz = torch.full((fb.shape[0],), float("nan"))
            logz[lp - 1:] = torch.logsumexp(F.linear(fb[lp - 1:].float(), E.float()), -1).cpu()
            out[i] = Sample(x.cpu(), fb.cpu().clone(), logz, lp)
    return out  # type: ignore[return-value]


@torch.no_grad()
def alpha_both_rules(head: EagleHead, emb: torch.Tensor, val: list[Sample], cfg: EagleTrainConfig,
                     device: str | torch.device = "cpu") -> dict:
    """Held-out acceptance per draft position at T = 1 (1 - TV on S) and T = 0 (argmax agreement), reply slots."""
    head.eval()
    t1 = [0.0] * cfg.unroll
    t0 = [0.0] * cfg.unroll
    n = [0] * cfg.unroll
    for i in range(0, len(val), cfg.batch):
        bt = {k: v.to(device) for k, v in batch_tensors(val[i:i + cfg.batch], cfg.max_len).items()}
        gs = unrolled_features(head, bt["feats"], bt["toks"], cfg.unroll)
        for s, g in enumerate(gs):
            valid = bt["mask"].clone()
            valid[:, :s] = False
            f_next = bt["f_next"][valid]
            p = torch.exp(head.sub_logits(f_next) - bt["logz_next"][valid][:, None])
            q_logits = head.sub_logits(g[valid])
            t1[s] += float(torch.minimum(p, torch.softmax(q_logits, -1)).sum())
            top_target = F.linear(f_next, emb.float()).argmax(-1)
            t0[s] += float((head.out_ids[q_logits.argmax(-1)] == top_target).sum())
            n[s] += int(valid.sum())
    head.train()
    return {"alpha_t1_per_position": [round(a / max(m, 1), 4) for a, m in zip(t1, n)],
            "alpha_t0_per_position": [round(a / max(m, 1), 4) for a, m in zip(t0, n)], "slots": n[0]}
