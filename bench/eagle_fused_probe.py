"""Probe: does EAGLE-3's fused input (low, mid and top-layer features) raise the draft's alpha at equal data and steps?

The committed head reads the target's top feature f (after its final norm). EAGLE-3 (Li et al., 2025) feeds the
draft a learned fusion of a low, a middle and the top layer's states instead. This probe trains two heads on the
same subset of the cached self-distillation replies (gpu_demo.training.eagle.reply_set; nothing is sampled), with
the same seed, batches, loss, steps and schedule, and reports held-out loss and alpha at T = 1 per draft position:

    top:    slot input [e(x_j); f_{j-1}]                                    (the committed design)
    fused:  slot input [e(x_j); W [rms(h^lo_{j-1}); rms(h^mid_{j-1}); f_{j-1}]]  W (C, 3C) learned, started at
            [0, 0, I] so it starts as the top head; later draft positions read the head's own g in both

Inner states come from Llama.trunk's taps on a cache-free pass over each reply (rms: divided by their RMS, no
weight). The held-out replies are the training run's own held-out tail. Not part of `make test`.

    .venv/bin/python bench/eagle_fused_probe.py --train 640 --steps 400 --threads 2 --json bench/eagle_fused_probe.json
"""

from __future__ import annotations

import time
from dataclasses import replace

import torch
from torch import nn

from gpu_demo.flags import CliParser, add_json, add_threads, parse
from gpu_demo.models.eagle import EagleConfig, EagleHead
from gpu_demo.reports import write_report
from gpu_demo.training.eagle import (
    EagleTrainConfig,
    choose_out_ids,
    fit,
    init_head,
    reply_mass,
    reply_set,
)
from gpu_demo.training.eagle_data import Sample


def rms(x: torch.Tensor) -> torch.Tensor:
    """x / RMS(x) over the last dim (no weight): (..., C)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


def with_inner_features(target, samples: list[Sample], layers: tuple[int, int]) -> list[Sample]:
    """Each sample with feats (L-1, 3C) = [rms(h^lo); rms(h^mid); f] (float16), f as stored."""
    out = []
    with torch.inference_mode():
        for s in samples:
            taps = dict.fromkeys(layers)
            top = target.trunk(target.tok_embeddings(s.ids[:-1].view(1, -1)), taps)  # (1, L-1, C)
            check = target.norm(top)[0].half()
            if not torch.allclose(check.float(), s.feats.float(), atol=5e-2, rtol=1e-2):
                raise RuntimeError("the recomputed top feature differs from the cached one: stale cache?")
            inner = [rms(taps[i][0]).half() for i in layers]  # (L-1, C) each
            out.append(replace(s, feats=torch.cat([*inner, s.feats], dim=-1)))  # (L-1, 3C)
    return out


def fused_batch(bt: dict[str, torch.Tensor], fuse: nn.Linear | None, C: int) -> dict[str, torch.Tensor]:
    """Batch tensors whose feats are [lo; mid; f] (B, n, 3C) -> the head's inputs (B, n, C) and f_next (B, n, C)."""
    f3 = bt["feats"]
    return {**bt, "feats": fuse(f3) if fuse is not None else f3[..., 2 * C:], "f_next": bt["f_next"][..., 2 * C:]}


def train_variant(name: str, target, train: list[Sample], val: list[Sample], cfg: EagleTrainConfig,
                  out_ids: torch.Tensor) -> list[dict]:
    """Train one head (fused or top) from the seed with gpu_demo.training.eagle.fit; its evaluation history."""
    C = target.cfg.dim
    torch.manual_seed(cfg.seed)
    head = EagleHead(EagleConfig.for_target(target.cfg, cfg.hidden_dim, cfg.n_out), max_len=target.cfg.max_seq_len)
    init_head(head, cfg.seed)
    head.out_ids.copy_(out_ids)
    head.attach(target)
    fuse = None
    if name == "fused":
        fuse = nn.Linear(3 * C, C, bias=False)
        with torch.no_grad():
            fuse.weight.zero_()
            fuse.weight[:, 2 * C:] = torch.eye(C)  # starts as the top head
    extra = list(fuse.parameters()) if fuse is not None else []
    return fit(head, train, val, cfg, lambda msg: print(f"{name:>5} {msg}"), extra=extra,
               prepare=lambda bt: fused_batch(bt, fuse, C))


def main(argv: list[str] | None = None) -> dict:
    """CLI."""
    ap = CliParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", type=int, default=640, help="training replies (the first N of the cached set)")
    ap.add_argument("--val", type=int, default=0, help="held-out replies used (0: the whole held-out tail)")
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--layers", default="2,14", help="the low and middle layers tapped (0-based, of 30)")
    add_threads(ap)
    add_json(ap)
    args = parse(ap, argv)
    layers = tuple(int(x) for x in args.layers.split(","))
    if len(layers) != 2 or not all(0 <= i < 29 for i in layers) or args.train < 8 or args.steps < 1:
        raise SystemExit("--layers needs two layers in [0, 28]; --train >= 8; --steps >= 1")
    from gpu_demo.models.gguf import load_smollm2

    base = EagleTrainConfig()
    cfg = replace(base, steps=args.steps, eval_every=max(1, args.steps // 4))
    samples = reply_set(base, log=print)  # the cached replies of the committed run
    n_val = max(1, int(len(samples) * base.val_fraction))
    train, val = samples[: min(args.train, len(samples) - n_val)], samples[-n_val:][: args.val or None]
    smol = load_smollm2(max_len=64)
    target = smol.model
    t0 = time.perf_counter()
    train, val = with_inner_features(target, train, layers), with_inner_features(target, val, layers)
    feat_s = time.perf_counter() - t0
    C = target.cfg.dim
    top_only = [replace(s, feats=s.feats[:, 2 * C:]) for s in train]
    out_ids = choose_out_ids(reply_mass(top_only, target.tok_embeddings.weight), cfg.n_out, [smol.eos_token_id])
    n_tok = sum(s.ids.numel() - s.prompt_len for s in train)
    print(f"{len(train)} train replies ({n_tok} reply tokens), {len(val)} held-out; inner features of layers {layers} "
          f"in {feat_s:.0f} s; {cfg.steps} steps, batch {cfg.batch}, {args.threads} threads")
    hist = {name: train_variant(name, target, train, val, cfg, out_ids) for name in ("top", "fused")}
    print(f"\n{'step':>5} {'top: loss':>10} {'alpha_1':>8} {'alpha_2':>8}   {'fused: loss':>11} {'alpha_1':>8} "
          f"{'alpha_2':>8}")
    for a, b in zip(hist["top"], hist["fused"]):
        aa, ab = a["val_alpha_t1_per_position"], b["val_alpha_t1_per_position"]
        print(f"{a['step']:>5} {a['val_loss']:>10.4f} {aa[0]:>8.4f} {aa[1]:>8.4f}   "
              f"{b['val_loss']:>11.4f} {ab[0]:>8.4f} {ab[1]:>8.4f}")
    report = {"layers": layers, "train_replies": len(train), "train_reply_tokens": n_tok, "held_out": len(val),
              "steps": cfg.steps, "batch": cfg.batch, "threads": args.threads, "feature_seconds": round(feat_s, 1),
              "history": hist}
    if args.json:
        print(f"wrote {write_report(args.json, report, 'bench/eagle_fused_probe.py', args.force)}")
    return report


if __name__ == "__main__":
    main()
