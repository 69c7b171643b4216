"""Reproducible training of the built-in character-level pair on Jane Austen's novels.

``python -m gpu_demo train`` trains the target and then the draft from a fixed seed (same seed, same
steps, same thread count -> same weights on the same machine), shows a progress bar, and writes
``assets/<name>.safetensors`` + ``assets/<name>.json`` (config, vocabulary, seed, steps, the training
log's final losses and the held-out loss in nats/char).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F

from gpu_demo.models.char import (
    CharConfig,
    CharTokenizer,
    CharTransformer,
    ExpertSumLM,
    WindowConfig,
    WindowMLP,
    load_char_model,
    save_char_model,
)
from gpu_demo.training.corpus import ASSETS, load_books, train_val_split
from gpu_demo.training.distill import distill
from gpu_demo.training.loop import Progress, fit, lr_cosine


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation schedule: AdamW, linear warm-up then cosine decay to lr_min."""

    steps: int
    batch_size: int
    seq_len: int
    lr: float = 2e-3
    lr_min: float = 1e-4
    warmup: int = 100
    weight_decay: float = 0.1
    eval_every: int = 200
    eval_batches: int = 8
    long_frac: float = 0.0  # the last long_frac of steps use windows of long_len (batch scaled to keep tokens/step)
    long_len: int = 512
    distill_steps: int = 0  # then this many steps on a teacher's soft labels (the preset names the teacher)
    distill_lr: float = 1e-3
    distill_ce_weight: float = 0.1  # loss = TV(p, q) + distill_ce_weight * H(p, q)


# The built-in pair. Sizes are chosen so that the target's step cost dwarfs the draft's on a 2-core CPU
# (c <= 0.1) while the draft still tracks the target closely (alpha >= 0.75 at temperature 1).
PRESETS: dict[str, tuple[dict, TrainConfig]] = {
    "target": (
        dict(n_layer=4, n_head=4, d_model=256, max_seq_len=512, expert="expert"),
        TrainConfig(steps=400, batch_size=8, seq_len=256, lr=2e-3, long_frac=0.1, eval_every=100, eval_batches=2),
    ),
    "expert": (  # the target's local expert (frozen inside the target); trained first
        dict(kind="window", window=24, d_emb=24, d_hidden=512, max_seq_len=512),
        TrainConfig(steps=2000, batch_size=32, seq_len=128, lr=3e-3, warmup=100, eval_every=500),
    ),
    "draft": (  # a smaller window MLP sharing no weights with the target: trained on the text, then
        # distilled on the target's laws (DistillSpec-style), which raises alpha = 1 - TV(p, q)
        dict(kind="window", window=16, d_emb=16, d_hidden=256, max_seq_len=512, teacher="target"),
        TrainConfig(steps=3000, batch_size=32, seq_len=128, lr=4e-3, warmup=100, eval_every=500,
                    distill_steps=2000, distill_lr=1e-3),
    ),
}


TRAIN_ORDER = ["expert", "target", "draft"]


def build_model(vocab_size: int, arch: dict) -> CharTransformer | WindowMLP:
    """A fresh model from a preset's architecture dict (kind 'transformer' by default, or 'window')."""
    arch = dict(arch)
    if arch.pop("kind", "transformer") == "window":
        return WindowMLP(WindowConfig(vocab_size=vocab_size, **arch))
    return CharTransformer(CharConfig(vocab_size=vocab_size, **arch))


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up to cfg.lr over cfg.warmup steps, then cosine decay to cfg.lr_min at cfg.steps."""
    return lr_cosine(step, cfg.steps, cfg.lr, cfg.lr_min, cfg.warmup)


def batch_shape(step: int, cfg: TrainConfig) -> tuple[int, int]:
    """(B, L) at this step: (batch_size, seq_len), then (batch_size * seq_len // long_len, long_len) at the end.

    The short windows train fast; the final long phase trains the position embeddings up to long_len.
    """
    if step >= round(cfg.steps * (1 - cfg.long_frac)):
        return max(1, cfg.batch_size * cfg.seq_len // cfg.long_len), cfg.long_len
    return cfg.batch_size, cfg.seq_len


def random_batch(data: torch.Tensor, shape: tuple[int, int], gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(x, y) of shape (B, L): random windows of the text and the same windows shifted by one."""
    B, L = shape
    starts = torch.randint(0, data.numel() - L - 1, (B,), generator=gen)
    offs = torch.arange(L + 1)
    win = data[starts[:, None] + offs[None, :]]  # (B, L+1)
    return win[:, :-1], win[:, 1:]


@torch.no_grad()
def held_out_loss(
    model: CharTransformer | WindowMLP | ExpertSumLM, data: torch.Tensor, seq_len: int, max_chars: int | None = None
) -> float:
    """Mean cross-entropy in nats/char over consecutive non-overlapping windows of the held-out text."""
    model.eval()
    n = data.numel() - 1 if max_chars is None else min(data.numel() - 1, max_chars)
    n_win = n // seq_len
    x = data[: n_win * seq_len].view(n_win, seq_len)
    y = data[1 : n_win * seq_len + 1].view(n_win, seq_len)
    total, count = 0.0, 0
    for i in range(0, n_win, 32):
        logits = model.forward_train(x[i : i + 32])  # (b, L, V)
        total += F.cross_entropy(logits.flatten(0, 1), y[i : i + 32].flatten(), reduction="sum").item()
        count += y[i : i + 32].numel()
    model.train()
    if isinstance(model, ExpertSumLM):
        model.expert.eval()
    return total / count


def train_one(
    name: str,
    vocab: CharTokenizer,
    train_ids: torch.Tensor,
    val_ids: torch.Tensor,
    seed: int,
    out_dir: Path = ASSETS,
    steps: int | None = None,
    checkpoint_dir: Path | None = None,
    stop_after: int | None = None,
    distill_steps: int | None = None,
) -> dict:
    """Train preset `name` from `seed`, save weights + metadata, return the metadata.

    ``steps`` replaces the preset's schedule length; ``stop_after`` keeps the preset's schedule but stops
    after that many steps (reproduces a run that was cut short; its metadata says so). A preset with a
    ``teacher`` then runs ``distill_steps`` (default: the preset's) of distillation on that saved model.
    """
    arch, tcfg, expert_name, teacher_name = _schedule(name, out_dir, steps, distill_steps)
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model, trained = _build(vocab, arch, expert_name, out_dir)
    opt = _optimizer(trained, tcfg)
    log: list[dict] = []
    t0 = time.perf_counter()
    n_run = tcfg.steps if stop_after is None else min(stop_after, tcfg.steps)

    def loss_at(step: int) -> torch.Tensor:
        x, y = random_batch(train_ids, batch_shape(step, tcfg), gen)  # (B, L), (B, L)
        return F.cross_entropy(model.forward_train(x).flatten(0, 1), y.flatten())

    def evaluate(pr: Progress) -> dict:
        val = held_out_loss(model, val_ids, tcfg.seq_len, max_chars=tcfg.eval_batches * 32 * tcfg.seq_len)
        entry = {"step": pr.step, "train_loss_ema": round(pr.loss_ema, 4), "val_loss_sample": round(val, 4),
                 "elapsed_s": round(pr.elapsed_s, 1)}
        log.append(entry)
        if pr.step < n_run and checkpoint_dir is not None:  # a partial model, overwritten at the end
            save_char_model(trained, checkpoint_dir, f"{name}.partial",
                            {"name": name, "vocab": vocab.chars, "partial_step": pr.step, "log": log,
                             "expert": expert_name})
        return entry

    fitted = fit(trained.parameters(), opt, loss_at, n_run, lambda step: lr_at(step, tcfg), evaluate,
                 eval_due=lambda step: (step + 1) % tcfg.eval_every == 0,
                 desc=f"train {name} ({model.num_params() / 1e6:.2f}M params)")
    final_val = held_out_loss(model, val_ids, tcfg.seq_len)
    distilled = None
    if teacher_name and tcfg.distill_steps and n_run == tcfg.steps:
        distilled = _distill_phase(trained, teacher_name, vocab, train_ids, val_ids, tcfg, gen, out_dir, name)
        distilled["held_out_nats_per_char_before"] = round(final_val, 4)
        final_val = held_out_loss(model, val_ids, tcfg.seq_len)
    meta = {
        "name": name, "vocab": vocab.chars, "seed": seed, "train": asdict(tcfg), "steps_run": n_run,
        "stopped_early": n_run < tcfg.steps, "params": model.num_params(),
        "held_out_nats_per_char": round(final_val, 4), "expert": expert_name,
        "final_train_loss_ema": round(fitted.loss_ema, 4), "log": log,
        "train_seconds": round(time.perf_counter() - t0, 1), "threads": torch.get_num_threads(),
        "corpus": "assets/austen.txt.xz (see assets/CORPUS.md); held out: the last 5% of each novel",
        "distill": distilled,
    }
    model.eval()
    save_char_model(trained, out_dir, name, meta)  # an expert's weights stay in its own file
    print(f"[{name}] held-out loss {final_val:.4f} nats/char; saved to {out_dir / name}.safetensors")
    return meta


def _schedule(name: str, out_dir: Path, steps: int | None,
              distill_steps: int | None) -> tuple[dict, TrainConfig, str | None, str | None]:
    """Preset `name` with the overrides: (architecture, schedule, expert name, teacher name); the teacher must exist."""
    arch, tcfg = PRESETS[name]
    arch = dict(arch)
    expert_name = arch.pop("expert", None)
    teacher_name = arch.pop("teacher", None)
    if steps is not None:
        tcfg = TrainConfig(**{**asdict(tcfg), "steps": steps})
    if distill_steps is not None:
        tcfg = TrainConfig(**{**asdict(tcfg), "distill_steps": distill_steps})
    if teacher_name and tcfg.distill_steps and not (out_dir / f"{teacher_name}.json").exists():
        raise ValueError(
            f"{name!r} is distilled on {teacher_name!r}, which is not in {out_dir}: train it first "
            f"(python -m gpu_demo train --which {teacher_name}) or copy it there"
        )
    return arch, tcfg, expert_name, teacher_name


def _build(vocab: CharTokenizer, arch: dict, expert_name: str | None, out_dir: Path) -> tuple:
    """(model the loss reads, module trained): the same model, or a residual over the frozen expert (the draft)."""
    trained = build_model(len(vocab.chars), arch)
    if expert_name is None:
        return trained, trained
    expert, emeta = load_char_model(out_dir, expert_name)
    if emeta["vocab"] != vocab.chars:
        raise ValueError(f"expert {expert_name!r} was trained with another alphabet")
    torch.nn.init.zeros_(trained.head.weight)  # start exactly at the expert's law
    model = ExpertSumLM(trained, expert)
    model.expert.requires_grad_(False)
    return model, trained


def _optimizer(trained: torch.nn.Module, tcfg: TrainConfig) -> torch.optim.AdamW:
    """AdamW with weight decay on matrices only (not on norms and biases)."""
    decay = [p for p in trained.parameters() if p.dim() >= 2]
    no_decay = [p for p in trained.parameters() if p.dim() < 2]
    return torch.optim.AdamW(
        [{"params": decay, "weight_decay": tcfg.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
        lr=tcfg.lr,
        betas=(0.9, 0.99),
    )


def _distill_phase(
    student: CharTransformer | WindowMLP,
    teacher_name: str,
    vocab: CharTokenizer,
    train_ids: torch.Tensor,
    val_ids: torch.Tensor,
    tcfg: TrainConfig,
    gen: torch.Generator,
    out_dir: Path,
    name: str,
) -> dict:
    """Second phase: distil `student` on the saved teacher's laws (gpu_demo.distill); returns its metadata."""
    teacher, tmeta = load_char_model(out_dir, teacher_name)
    if tmeta["vocab"] != vocab.chars:
        raise ValueError(f"teacher {teacher_name!r} was trained with another alphabet")
    teacher.requires_grad_(False)
    val_windows = random_batch(val_ids, (16, tcfg.seq_len), torch.Generator().manual_seed(0))[0]  # (16, L)
    log = distill(
        student,
        teacher,
        lambda step: random_batch(train_ids, (tcfg.batch_size, tcfg.seq_len), gen)[0],
        tcfg.distill_steps,
        tcfg.distill_lr,
        tcfg.distill_ce_weight,
        val_windows,
        desc=f"distil {name}",
    )
    return {
        "teacher": teacher_name,
        "steps": tcfg.distill_steps,
        "lr": tcfg.distill_lr,
        "ce_weight": tcfg.distill_ce_weight,
        "loss": "TV(p, q) + ce_weight * H(p, q) at T = 1",
        "held_out_alpha_t1_before": log[0]["held_out_alpha_t1"],
        "held_out_alpha_t1": log[-1]["held_out_alpha_t1"],
        "log": log,
    }


def main(
    which: list[str],
    seed: int = 1234,
    out_dir: Path = ASSETS,
    steps: int | None = None,
    threads: int | None = None,
    stop_after: int | None = None,
    checkpoint_dir: Path | None = None,
    distill_steps: int | None = None,
) -> None:
    """Train the requested presets ('target', 'draft') in order."""
    if threads:
        torch.set_num_threads(threads)
    books = load_books()
    train_text, val_text = train_val_split(books)
    vocab = CharTokenizer.from_text(train_text + val_text)
    train_ids = torch.tensor(vocab.encode(train_text), dtype=torch.long)  # (N,)
    val_ids = torch.tensor(vocab.encode(val_text), dtype=torch.long)  # (M,)
    for name in sorted(which, key=TRAIN_ORDER.index):  # the target builds on the trained expert
        train_one(
            name,
            vocab,
            train_ids,
            val_ids,
            seed + list(PRESETS).index(name),
            out_dir,
            steps,
            checkpoint_dir,
            stop_after,
            distill_steps,
        )
