"""Benchmark: how often the target keeps a child the smollm2-eagle head ranks in its top k, against the head's q.

EAGLE-2 sizes its dynamic tree by the draft's path probability, on the ground that a node is accepted with about
its score. A dynamic tree's children are the draft's top choices (one-hot q), so the target keeps child x with
p(x) at T = 1 (recursive rejection) and when x = argmax p under the greedy rule. This measures both against the
head's q(x) on held-out self-distillation shards (the target teacher-forced in float32, the head unrolled to
draft position 2 on its own features, the top --top-k children of every reply slot), bins them by q and writes the
acceptance map a+(q) per rule: knots at the bins' mean q, values their mean acceptance, made non-decreasing,
from (0, 0) to q = 1 (the last bin's value, extended along the last piece's slope, at most 1). It also prints what a
sampled chain draft gets at the same slots (1 - TV(p, q) on S), beside the top child's p(x).

    .venv/bin/python bench/eagle_calibration.py --data bench/selfdistill_cpu --val-shards 90000,95000 \\
        --json bench/eagle_calibration_cpu.json
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from gpu_demo.flags import CliParser, add_json, add_threads, int_in, parse, path_text
from gpu_demo.models.eagle import ASSETS, load_head
from gpu_demo.models.gguf import load_smollm2
from gpu_demo.reports import write_report
from gpu_demo.training.eagle import batch_tensors, unrolled_features
from gpu_demo.training.eagle_scale import features_for
from gpu_demo.training.selfdistill import load_shards
from specdec_core.dynamic_tree import check_accept_map

EDGES = (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)  # bins of q


def children(head, emb: torch.Tensor, val: list, top_k: int, positions: int, max_len: int = 320
             ) -> dict[int, np.ndarray]:
    """Per draft position s: (slots, top_k, 4) of [q(x), p(x), x == argmax p, 1 - TV(p, q) on S] for the head's
    top_k children x of every held-out reply slot; emb (V, C) is the target's tied output map."""
    E = emb.float()
    out: dict[int, list[torch.Tensor]] = {s: [] for s in range(1, positions + 1)}
    with torch.no_grad():
        for i in range(0, len(val), 8):
            bt = batch_tensors(val[i:i + 8], max_len)
            for s, g in enumerate(unrolled_features(head, bt["feats"], bt["toks"], positions), start=1):
                valid = bt["mask"].clone()
                valid[:, : s - 1] = False  # position s needs s - 1 earlier slots
                f_next = bt["f_next"][valid]  # (N, C)
                p = torch.exp(head.sub_logits(f_next) - bt["logz_next"][valid][:, None])  # (N, n_out): p on S
                q = torch.softmax(head.sub_logits(g[valid]), -1)  # (N, n_out)
                qv, qi = q.topk(top_k, -1)  # (N, k)
                hit = head.out_ids[qi] == F.linear(f_next, E).argmax(-1)[:, None]  # (N, k)
                tv = torch.minimum(p, q).sum(-1, keepdim=True).expand(-1, top_k)  # (N, k)
                out[s].append(torch.stack([qv, p.gather(1, qi), hit.float(), tv], -1))
    return {s: torch.cat(rows).numpy() for s, rows in out.items()}


def binned(q: np.ndarray, a: np.ndarray) -> list[dict]:
    """Per bin of EDGES: count, mean q, mean acceptance."""
    rows = []
    for lo, hi in zip(EDGES, EDGES[1:]):
        k = (q >= lo) & ((q < hi) if hi < 1.0 else (q <= hi))
        if k.any():
            rows.append({"q_lo": lo, "q_hi": hi, "n": int(k.sum()), "mean_q": float(q[k].mean()),
                         "accept": float(a[k].mean())})
    return rows


def accept_map(rows: list[dict]) -> tuple[list[float], list[float]]:
    """Knots (0, bin means, 1) and values (0, bin acceptances made non-decreasing, extended to q = 1, at most 1)."""
    x = np.array([r["mean_q"] for r in rows])
    y = np.maximum.accumulate(np.array([r["accept"] for r in rows]))
    slope = (y[-1] - y[-2]) / (x[-1] - x[-2]) if x.size > 1 else 1.0
    end = min(1.0, y[-1] + max(0.0, slope) * (1.0 - x[-1]))
    knots, values = [0.0, *map(float, x), 1.0], [0.0, *map(float, np.minimum(y, 1.0)), float(end)]
    check_accept_map(knots, values)
    return [round(k, 4) for k in knots], [round(v, 4) for v in values]


def main(argv: list[str] | None = None) -> dict:
    ap = CliParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=path_text, required=True, help="folder of self-distillation shards")
    ap.add_argument("--val-shards", default="90000,95000", help="held-out shard ids, comma-separated")
    ap.add_argument("--head", type=path_text, default=None, help="folder of smollm2_eagle.* (default: the shipped)")
    ap.add_argument("--top-k", type=int_in(1, 8), default=4)
    ap.add_argument("--positions", type=int_in(1, 4), default=2, help="draft positions pooled into the map")
    add_threads(ap, default=2)
    add_json(ap)
    args = parse(ap, argv)
    shards = {int(s) for s in args.val_shards.split(",") if s.strip()}
    t0 = time.perf_counter()
    rows = [r for r in load_shards(Path(args.data)) if r[3] in shards]
    if not rows:
        ap.error(f"no shard of --val-shards {sorted(shards)} is in {args.data}")
    target = load_smollm2(device="cpu", max_len=768).model
    head = load_head(target, Path(args.head) if args.head else ASSETS, max_len=768).eval()
    val = features_for(target, [(r[0], r[1]) for r in rows])
    per_pos = children(head, target.tok_embeddings.weight, val, args.top_k, args.positions)
    pooled = np.concatenate(list(per_pos.values()))  # (slots x positions, k, 4)
    q = pooled[..., 0].ravel()
    report: dict = {"command": "python " + " ".join(sys.argv), "val_shards": sorted(shards), "top_k": args.top_k,
                    "positions": args.positions, "slots": int(per_pos[1].shape[0]), "rules": {}, "per_position": {}}
    for rule, col in (("t1", 1), ("greedy", 2)):
        bins = binned(q, pooled[..., col].ravel())
        knots, values = accept_map(bins)
        report["rules"][rule] = {"knots": knots, "values": values, "bins": bins}
    for s, a in per_pos.items():
        report["per_position"][str(s)] = {
            "chain_sampled_t1": float(a[:, 0, 3].mean()),  # 1 - TV(p, q): a draft drawn from q, min(1, p/q)
            "top1_t1": float(a[:, 0, 1].mean()), "top1_top2_t1": float(a[:, :2, 1].sum(1).mean()),
            "top1_greedy": float(a[:, 0, 2].mean()), "top1_top2_greedy": float(a[:, :2, 2].sum(1).mean()),
            "mean_top1_q": float(a[:, 0, 0].mean()),
            "by_rank_t1": [float(x) for x in a[:, :, 1].mean(0)],  # mean p(x) of the rank-r child, r = 1..k
            "by_rank_greedy": [float(x) for x in a[:, :, 2].mean(0)]}
    report["seconds"] = round(time.perf_counter() - t0, 1)
    print(f"{report['slots']} held-out reply slots per position (shards {sorted(shards)}), top {args.top_k} "
          f"children, positions 1..{args.positions} pooled")
    print(f"{'q bin':>12} {'n':>7} {'mean q':>7} {'T=1: p(x)':>10} {'greedy: x=argmax p':>19}")
    for b1, b0 in zip(report["rules"]["t1"]["bins"], report["rules"]["greedy"]["bins"]):
        print(f"{b1['q_lo']:5.2f}-{b1['q_hi']:<5.2f} {b1['n']:>7} {b1['mean_q']:7.3f} {b1['accept']:10.3f} "
              f"{b0['accept']:19.3f}")
    for s, r in report["per_position"].items():
        print(f"position {s}: T = 1, a sampled draft kept {r['chain_sampled_t1']:.3f}; the top child "
              f"{r['top1_t1']:.3f}, "
              f"top two {r['top1_top2_t1']:.3f} | greedy: top child {r['top1_greedy']:.3f}, top two "
              f"{r['top1_top2_greedy']:.3f} | mean q of the top child {r['mean_top1_q']:.3f}")
    if args.json:
        print(f"wrote {write_report(args.json, report, 'bench/eagle_calibration.py', args.force)}")
    return report


if __name__ == "__main__":
    main()
