"""Scaling curve of the feature-level draft: held-out alpha per draft position, at T = 1 and T = 0, against the
number of target-generated reply tokens it trained on.

Data: token shards written by ``python -m gpu_demo.training.selfdistill`` (both rules). Shards in --val-shards are
held out (ids from 90000 on draw from pool prompts no training shard uses; the script checks disjointness), and
alpha is reported per held-out pool: the templated one (90000-94999, the key ``held_out``) and the open questions
(95000 on, ``held_out_open``).
For each size N in --sizes, a fresh head (seeded) trains on the first N training shards of each rule with the
training-time test (--unroll draft positions, TV + ce_weight * CE on S), features from the target in --dtype.

    python bench/eagle_scaling.py --data artifacts/selfdistill --sizes 1,2,4,8 --val-shards 90000-90003 \\
        --steps 400 --json bench/eagle_scaling_cpu.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gpu_demo.flags import CliParser, add_device, add_json, add_threads, int_in, parse, path_text
from gpu_demo.models.eagle import EagleConfig, EagleHead, head_meta, load_head, save_head
from gpu_demo.reports import RefusedPath, check_out_dir, write_report
from gpu_demo.training.eagle import HEAD_TEXT, EagleTrainConfig, choose_out_ids, fit, init_head, reply_mass
from gpu_demo.training.eagle_scale import alpha_both_rules, features_for
from gpu_demo.training.open_prompts import open_pool
from gpu_demo.training.selfdistill import OPEN_HELD_OUT_FIRST, load_shards, pool_slot, prompt_pool


def shard_range(text: str) -> list[int]:
    """'200-203', '7' or a comma list of either ('90000,95000') -> shard ids."""
    out = []
    for part in text.split(","):
        lo, _, hi = part.strip().partition("-")
        try:
            out += range(int(lo), int(hi or lo) + 1)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a shard range such as 200-203 or 90000,95000") from None
    return sorted(set(out))


def pool_items(shards: list[int], per_shard: int) -> set[tuple[str, int]]:
    """(pool, item) pairs these shards' chat, code and open prompts use (passage prompts aside)."""
    n_pool, n_open = len(prompt_pool()), len(open_pool())
    return {pool_slot(k, per_shard, i, n_pool, n_open) for k in shards for i in range(per_shard)}


def held_out_sets(rows: list, val_shards: list[int]) -> dict[str, list]:
    """The held-out rows per pool: 'held_out' (templated prompts) and 'held_out_open' (open questions), where any."""
    sets = {"held_out": [r for r in rows if r[3] in val_shards and r[3] < OPEN_HELD_OUT_FIRST],
            "held_out_open": [r for r in rows if r[3] in val_shards and r[3] >= OPEN_HELD_OUT_FIRST]}
    return {k: v for k, v in sets.items() if v}


def main(argv: list[str] | None = None) -> None:
    ap = CliParser(prog="bench/eagle_scaling.py", description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=path_text, required=True)
    ap.add_argument("--sizes", default="1,2,4,8", help="training shards per rule, comma-separated")
    ap.add_argument("--val-shards", type=shard_range, default=shard_range("90000-90003"))
    ap.add_argument("--per-shard", type=int_in(1, 4096), default=64, help="prompts per shard the data was made with")
    ap.add_argument("--steps", type=int_in(1, 10**7), default=400)
    ap.add_argument("--batch", type=int_in(1, 4096), default=8, help="sequences per training step")
    ap.add_argument("--unroll", type=int_in(1, 8), default=4)
    ap.add_argument("--eval-unroll", type=int_in(1, 8), default=4)
    ap.add_argument("--ce-weight", type=float, default=0.1)
    ap.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32")
    ap.add_argument("--lr", type=float, default=EagleTrainConfig.lr, help="peak learning rate (cosine to a tenth)")
    ap.add_argument("--init-head", type=path_text, default=None,
                    help="folder holding smollm2_eagle.{json,safetensors}: every size starts from that head (its "
                         "subset S kept) instead of a fresh one, and the JSON gives its held-out alpha before")
    ap.add_argument("--save-head", type=path_text, default=None,
                    help="folder for the largest size's head (the shipped assets only with --force)")
    add_device(ap, default="cpu")
    add_threads(ap)
    add_json(ap)
    args = parse(ap, argv)
    if args.save_head is not None:
        try:
            check_out_dir(args.save_head, args.force, "--save-head")
        except RefusedPath as exc:
            ap.error(str(exc))
    from gpu_demo.models.gguf import load_smollm2

    device = "cuda" if args.device in ("auto", "cuda") and torch.cuda.is_available() else "cpu"
    sizes = sorted({int(x) for x in args.sizes.split(",")})
    rows = load_shards(args.data)
    train_ids = sorted({r[3] for r in rows} - set(args.val_shards))
    overlap = pool_items(train_ids[: sizes[-1]], args.per_shard) & pool_items(args.val_shards, args.per_shard)
    if overlap:
        ap.error(f"{len(overlap)} held-out pool prompts are also in the training shards; pick other --val-shards")
    smol = load_smollm2(device=device, dtype=getattr(torch, args.dtype), max_len=768)
    target = smol.model
    # the head trains in float32 on the (rounded) features; it borrows E and the norm from a float32 copy
    ref = target if args.dtype == "float32" else load_smollm2(device=device, max_len=64).model
    t0 = time.perf_counter()
    vals = {k: features_for(target, [(r[0], r[1]) for r in rs])
            for k, rs in held_out_sets(rows, args.val_shards).items()}
    if not vals:
        ap.error(f"no shard of --val-shards {args.val_shards} is in {args.data}")
    val = next(iter(vals.values()))  # the first set also serves fit()'s own held-out log

    def evaluate(head: EagleHead) -> dict:
        """alpha_both_rules on each held-out set: the first set's keys at the top level, the others nested."""
        evs = {k: alpha_both_rules(head, ref.tok_embeddings.weight, v, eval_cfg, device) for k, v in vals.items()}
        first = next(iter(evs))
        return {**evs[first], "held_out_set": first, **{k: e for k, e in evs.items() if k != first}}
    by_rule = {rule: [r for r in rows if r[2] == rule and r[3] in train_ids] for rule in ("t1", "greedy")}
    cfg0 = EagleTrainConfig(steps=args.steps, batch=args.batch, unroll=args.unroll, ce_weight=args.ce_weight,
                            lr=args.lr, eval_every=max(1, args.steps))
    eval_cfg = replace(cfg0, unroll=args.eval_unroll)
    init_from = None if args.init_head is None else str(args.init_head)
    before = None
    if args.init_head is not None:
        before = evaluate(load_head(ref, Path(args.init_head)))
        print(json.dumps({"init_head": init_from, **before}), flush=True)
    curve = []
    for n in sizes:
        keep = set(train_ids[:n])
        train_rows = [r for rs in by_rule.values() for r in rs if r[3] in keep]
        train_set = features_for(target, [(r[0], r[1]) for r in train_rows])
        n_tok = sum(s.ids.numel() - s.prompt_len for s in train_set)
        if args.init_head is not None:  # warm start: the head's weights and S, trainable again
            head = load_head(ref, Path(args.init_head), max_len=target.cfg.max_seq_len).train().requires_grad_(True)
        else:
            head = EagleHead(EagleConfig.for_target(ref.cfg, cfg0.hidden_dim, cfg0.n_out),
                             max_len=target.cfg.max_seq_len)
            init_head(head, cfg0.seed)
            head.out_ids.copy_(choose_out_ids(reply_mass(train_set, ref.tok_embeddings.weight.cpu()),
                                              cfg0.n_out, [smol.eos_token_id]))
            head.to(device).attach(ref)
        t_fit = time.perf_counter()
        fit(head, train_set, val, cfg0, log=lambda m: None, prepare=lambda bt: {k: v.to(device) for k, v in bt.items()})
        ev = evaluate(head)
        curve.append({"train_shards_per_rule": n, "reply_tokens": n_tok, "fit_seconds": round(time.perf_counter()
                                                                                            - t_fit, 1), **ev})
        print(json.dumps(curve[-1]), flush=True)
        if args.save_head is not None and n == sizes[-1]:
            # a warm-started head keeps the record of the head it started from (its config aside)
            lineage = None if args.init_head is None else {k: v for k, v in head_meta(Path(args.init_head)).items()
                                                           if k != "config"}
            save_head(head, {"train_config": asdict(cfg0), **HEAD_TEXT, "held_out": ev, "held_out_before": before,
                             "init_head": init_from, "init_meta": lineage, "reply_tokens_train": n_tok,
                             "data": "bench/eagle_scaling.py token shards, both rules"}, args.save_head)
    report = {"command": "python " + " ".join(sys.argv), "device": device, "dtype": args.dtype,
              "threads": torch.get_num_threads(), "val_shards": args.val_shards, "val_slots": curve[0]["slots"],
              "train_config": asdict(cfg0), "init_head": init_from, "held_out_before": before, "curve": curve,
              "seconds": round(time.perf_counter() - t0, 1)}
    print(f"{'tokens':>9} {'held out':<14} " + " ".join(f"T1 a{s + 1}" for s in range(args.eval_unroll)) + " "
          + " ".join(f"T0 a{s + 1}" for s in range(args.eval_unroll)))
    for c in ([{"reply_tokens": "before", **before}] if before else []) + curve:
        for name, ev in [(c["held_out_set"], c)] + [(k, c[k]) for k in vals if k in c]:
            print(f"{c['reply_tokens']:>9} {name:<14} " + " ".join(f"{a:5.3f}" for a in ev["alpha_t1_per_position"])
                  + " " + " ".join(f"{a:5.3f}" for a in ev["alpha_t0_per_position"]))
    if args.json is not None:
        write_report(args.json, report, "bench/eagle_scaling.py", args.force)


if __name__ == "__main__":
    main()
