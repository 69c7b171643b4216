"""Self-distillation token data at scale: the target's own replies, batched, stored as uint16 shards that extend.

Shard k of rule r (``t1`` samples at T = 1, ``greedy`` takes the argmax) holds the replies to prompts
k*n .. k*n+n-1 of one fixed, seeded prompt pool: below OPEN_FIRST the templated pool (chat, explanation, lists,
code, rewriting of corpus passages), from OPEN_FIRST on the open everyday questions of
gpu_demo.training.open_prompts; each pool keeps its last items for held-out shards. So a later run adds shards
instead of starting over, and two runs with the same shard ids write the same tokens (T = 1 draws from a
generator seeded by (rule, k)). Only token ids are kept (uint16, 2 bytes a token);
the features are recomputed at training time in the precision the target then runs in.
"""

from __future__ import annotations

import json
import random
import time
import zlib
from pathlib import Path

import numpy as np
import torch

from gpu_demo.models.llama import Llama
from gpu_demo.training.eagle_data import PASSAGE_TASKS, TASKS, TOPICS, padded_step, passages
from gpu_demo.training.open_prompts import open_pool

RULES = ("t1", "greedy")

CODE_TASKS = (
    "Write a Python function that {c}.",
    "Explain, step by step, how you would write code that {c}.",
    "Write a short JavaScript function that {c}, with a comment on each line.",
    "What is a common bug when writing code that {c}, and how do you avoid it?",
)

CODE_JOBS = (
    "reverses a string", "counts the vowels in a sentence", "checks whether a number is prime",
    "finds the largest number in a list", "sorts a list of names alphabetically", "computes a factorial",
    "removes duplicates from a list", "converts Celsius to Fahrenheit", "reads a text file and counts its lines",
    "checks whether a word is a palindrome", "merges two sorted lists", "returns the n-th Fibonacci number",
    "splits a sentence into words", "computes the average of a list of numbers", "finds the most common letter",
    "validates an email address", "flattens a nested list", "counts word frequencies in a text",
    "rounds prices to two decimals", "formats a date as year-month-day",
)

REWRITE_TASKS = (
    "Rewrite this passage as a bulleted list of its main points:\n\n{p}",
    "Rewrite this passage more formally:\n\n{p}",
    "Shorten this passage to one sentence:\n\n{p}",
)

POOL_SEED = 20240  # the prompt pool's order; fixed so shard k always means the same prompts
HELD_OUT = 320  # the pool's last items, used only by held-out shards
HELD_OUT_FIRST = 90000  # shard ids from here on are held out
OPEN_FIRST = 30000  # training shards of the open pool: OPEN_FIRST .. HELD_OUT_FIRST - 1
OPEN_HELD_OUT = 64  # the open pool's last items, used only by its held-out shards
OPEN_HELD_OUT_FIRST = 95000  # held-out shards of the open pool


def prompt_pool() -> list[str]:
    """The fixed pool of non-passage prompts: TASKS x TOPICS and CODE_TASKS x CODE_JOBS, shuffled once."""
    pool = [t.format(t=x) for t in TASKS for x in TOPICS] + [t.format(c=c) for t in CODE_TASKS for c in CODE_JOBS]
    random.Random(POOL_SEED).shuffle(pool)
    return pool


def cycle_index(k: int, n: int, i: int, n_pool: int, first: int, held_first: int, held: int) -> int:
    """Item of prompt i in shard k of a pool of n_pool items: training shards (first <= k < held_first) cycle through
    all but the last `held` items, held-out shards (k >= held_first) through those last items only."""
    if k >= held_first:
        return n_pool - held + ((k - held_first) * n + i) % held
    return ((k - first) * n + i) % (n_pool - held)


def pool_index(k: int, n: int, i: int, n_pool: int) -> int:
    """Templated-pool item of prompt i in shard k (cycle_index: held-out shards from HELD_OUT_FIRST, the last
    HELD_OUT items), so no held-out prompt is ever trained on."""
    return cycle_index(k, n, i, n_pool, 0, HELD_OUT_FIRST, HELD_OUT)


def shard_prompts(k: int, n: int, passage_share: float = 0.15, pool: list[str] | None = None) -> list[str]:
    """Shard k's n user messages: in the templated pool's range, pool items (pool_index) and a share of passage
    tasks over corpus passages; in the open pool's range (k >= OPEN_FIRST, open_shard_prompts), open questions only."""
    if OPEN_FIRST <= k < HELD_OUT_FIRST or k >= OPEN_HELD_OUT_FIRST:
        return open_shard_prompts(k, n)
    pool = pool if pool is not None else prompt_pool()
    n_pass = int(round(n * passage_share))
    texts = [pool[pool_index(k, n, i, len(pool))] for i in range(n - n_pass)]
    rng = random.Random(POOL_SEED + k)
    texts += [rng.choice(PASSAGE_TASKS + REWRITE_TASKS).format(p=p) for p in passages(n_pass, POOL_SEED + k)]
    return texts


def open_index(k: int, n: int, i: int, n_pool: int) -> int:
    """Open-pool item of prompt i in shard k (cycle_index: training shards from OPEN_FIRST, held-out shards from
    OPEN_HELD_OUT_FIRST on its last OPEN_HELD_OUT items)."""
    return cycle_index(k, n, i, n_pool, OPEN_FIRST, OPEN_HELD_OUT_FIRST, OPEN_HELD_OUT)


def pool_slot(k: int, n: int, i: int, n_pool: int, n_open: int) -> tuple[str, int]:
    """(pool, item) that prompt i of shard k is drawn from: ("open", open_index) or ("templated", pool_index);
    n_pool and n_open are the two pools' sizes. Passage prompts are drawn apart (their seed is the shard's)."""
    if OPEN_FIRST <= k < HELD_OUT_FIRST or k >= OPEN_HELD_OUT_FIRST:
        return "open", open_index(k, n, i, n_open)
    return "templated", pool_index(k, n, i, n_pool)


def open_shard_prompts(k: int, n: int) -> list[str]:
    """Shard k's n open questions (k in the open pool's training or held-out range)."""
    pool = open_pool()
    return [pool[open_index(k, n, i, len(pool))] for i in range(n)]


def rule_seed(rule: str, k: int) -> int:
    """The sampling seed of shard k under rule: a stable hash of both."""
    return zlib.crc32(f"{rule}:{k}".encode())


@torch.inference_mode()
def generate_ids(model: Llama, prompts: list[list[int]], max_new: int, stop: int, greedy: bool,
                 generator: torch.Generator) -> list[tuple[np.ndarray, int]]:
    """The target's replies to a left-padded batch: (prompt + reply ids as uint16, prompt length) per prompt."""
    B, L = len(prompts), max(len(p) for p in prompts)
    pads = [L - len(p) for p in prompts]
    ids = torch.zeros(B, L, dtype=torch.long, device=model.device)
    keep = torch.zeros(B, L + max_new, dtype=torch.bool, device=model.device)
    for b, p in enumerate(prompts):
        ids[b, pads[b]:] = torch.tensor(p, device=model.device)
        keep[b, pads[b]:] = True
    model.reset(B)
    _, logits = padded_step(model, ids, keep)
    toks, done = [ids], torch.zeros(B, dtype=torch.bool, device=model.device)
    for step in range(max_new):
        last = logits[:, -1].float()
        nxt = last.argmax(-1) if greedy else torch.multinomial(
            torch.softmax(last, -1).cpu(), 1, generator=generator).view(B).to(last.device)
        toks.append(nxt.view(B, 1))
        done |= nxt == stop
        if bool(done.all()) or step == max_new - 1:
            break
        _, logits = padded_step(model, nxt.view(B, 1), keep)
    seqs = torch.cat(toks, 1).cpu()
    out = []
    for b, p in enumerate(prompts):
        seq = seqs[b, pads[b]:]
        hit = (seq[len(p):] == stop).nonzero()
        end = len(p) + (int(hit[0]) + 1 if hit.numel() else seq.numel() - len(p))
        out.append((seq[:end].numpy().astype(np.uint16), len(p)))
    return out


def shard_path(folder: Path, rule: str, k: int) -> Path:
    """Where shard k of rule lives."""
    return Path(folder) / f"{rule}-{k:05d}.npz"


def write_shard(path: Path, rows: list[tuple[np.ndarray, int]], meta: dict) -> None:
    """rows -> one .npz: flat uint16 ids, int32 lengths and prompt lengths, and the meta as JSON text."""
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, ids=np.concatenate([r[0] for r in rows]), lens=np.array([len(r[0]) for r in rows], np.int32),
             prompt_lens=np.array([r[1] for r in rows], np.int32), meta=np.array(json.dumps(meta)))
    tmp.replace(path)


def load_shards(folder: Path, rules: tuple[str, ...] = RULES) -> list[tuple[torch.Tensor, int, str, int]]:
    """Every stored reply in folder: (ids as int64, prompt length, rule, shard id), shards in order."""
    out = []
    for path in sorted(Path(folder).glob("*-*.npz")):
        rule, _, k = path.stem.partition("-")
        if rule not in rules or not k.isdigit():
            continue
        with np.load(path) as z:
            ids, lens, plens = z["ids"], z["lens"], z["prompt_lens"]
        for a, n, p in zip(np.cumsum(np.r_[0, lens[:-1]]), lens, plens):
            out.append((torch.from_numpy(ids[a:a + n].astype(np.int64)), int(p), rule, int(k)))
    return out


def extend(model: Llama, encode, folder: Path, rule: str, shards: range, per_shard: int, batch: int,
           max_new: int, stop: int, log=print) -> dict:
    """Write the missing shards of rule among `shards` (existing ones are kept); progress and ETA per shard."""
    assert rule in RULES and model.vocab_size <= 2**16
    Path(folder).mkdir(parents=True, exist_ok=True)
    todo = [k for k in shards if not shard_path(folder, rule, k).is_file()]
    log(f"{rule}: {len(shards) - len(todo)} of {len(shards)} shards present, {len(todo)} to generate")
    pool, t0, n_tok = prompt_pool(), time.perf_counter(), 0
    for i, k in enumerate(todo):
        encoded = [encode(t) for t in shard_prompts(k, per_shard, pool=pool)]
        order = sorted(range(len(encoded)), key=lambda j: len(encoded[j]))  # similar lengths: little padding
        gen = torch.Generator().manual_seed(rule_seed(rule, k))
        rows: list = [None] * len(encoded)
        for a in range(0, len(order), batch):
            idx = order[a:a + batch]
            for j, r in zip(idx, generate_ids(model, [encoded[j] for j in idx], max_new, stop, rule == "greedy",
                                              gen)):
                rows[j] = r
        n_tok += sum(len(r[0]) - r[1] for r in rows)
        write_shard(shard_path(folder, rule, k), rows, {"rule": rule, "shard": k, "per_shard": per_shard,
                                                        "max_new": max_new, "pool_seed": POOL_SEED})
        dt = time.perf_counter() - t0
        log(f"  {rule} shard {k} ({i + 1}/{len(todo)}): {n_tok} reply tokens, {n_tok / dt:.0f} tok/s, "
            f"ETA {dt / (i + 1) * (len(todo) - i - 1):.0f} s")
    return {"rule": rule, "shards_written": len(todo), "reply_tokens": n_tok,
            "seconds": round(time.perf_counter() - t0, 1)}


def main(argv: list[str] | None = None) -> None:
    """CLI: extend a self-distillation token set (never inside the shipped packages)."""
    from gpu_demo.flags import CliParser, add_device, add_threads, int_in, parse, path_text
    from gpu_demo.models.gguf import load_smollm2
    from gpu_demo.models.smollm2 import SmolTokenizer

    ap = CliParser(prog="python -m gpu_demo.training.selfdistill", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=path_text, required=True, help="folder of shards (e.g. artifacts/selfdistill)")
    ap.add_argument("--rule", choices=RULES + ("both",), default="both")
    ap.add_argument("--shards", type=int_in(1, 100000), default=8, help="shards 0..N-1 (existing ones kept)")
    ap.add_argument("--first", type=int_in(0, 100000), default=0, help="first shard id")
    ap.add_argument("--per-shard", type=int_in(1, 4096), default=64, help="prompts per shard")
    ap.add_argument("--batch", type=int_in(1, 1024), default=32)
    ap.add_argument("--max-new", type=int_in(1, 2048), default=160)
    ap.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default="float32")
    add_device(ap, default="cpu")
    add_threads(ap)
    args = parse(ap, argv)
    device = "cuda" if args.device == "auto" and torch.cuda.is_available() else args.device
    device = "cpu" if device == "auto" else device
    smol = load_smollm2(device=device, dtype=getattr(torch, args.dtype), max_len=512 + args.max_new)
    tok = SmolTokenizer(smol.tokenizer, smol.chat_template, smol.eos_token_id)
    shards = range(args.first, args.first + args.shards)
    for rule in (RULES if args.rule == "both" else (args.rule,)):
        print(json.dumps(extend(smol.model, lambda t: tok.encode(tok.chat(t)), args.out, rule, shards,
                                args.per_shard, args.batch, args.max_new, smol.eos_token_id)))


if __name__ == "__main__":
    main()
