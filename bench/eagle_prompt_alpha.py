"""Benchmark: the committed EAGLE-style head's acceptance on the live bench's own chat prompts, teacher-forced.

The live bench (bench/live_smollm2_eagle.py) measures alpha on the first --max-new-tokens of replies to the first
--prompts of BENCH_CHAT_PROMPTS; the head's held-out alpha (gpu_demo/assets/smollm2_eagle.json) is measured on other
prompts. This samples the target's own replies (T = 1, --replies per prompt, seeded) to those same chat prompts,
re-reads them teacher-forced in float32 and reports alpha per draft position at both rules (T = 1: sum over S of
min(p, q); T = 0: argmax agreement), over whole replies and over the first --first reply tokens: what the live
bench's position-1 acceptance should be if the live loop loses nothing, so a gap between the two is the prompts'.

    .venv/bin/python bench/eagle_prompt_alpha.py --replies 6 --max-new 192 --json bench/eagle_prompt_alpha.json
"""

from __future__ import annotations

import time

import torch

from gpu_demo.flags import CliParser, add_json, add_threads, parse
from gpu_demo.measure.bench import environment
from gpu_demo.reports import write_report
from gpu_demo.training.eagle import EagleTrainConfig
from gpu_demo.training.eagle_data import BENCH_CHAT_PROMPTS, Sample, sample_replies


def first_tokens(samples: list[Sample], n: int) -> list[Sample]:
    """Each sample cut to its prompt and its first n reply tokens (features and log Z cut alike)."""
    return [Sample(s.ids[: s.prompt_len + n], s.feats[: s.prompt_len + n - 1], s.logz[: s.prompt_len + n - 1],
                   s.prompt_len) for s in samples]


def main(argv: list[str] | None = None) -> dict:
    """CLI."""
    ap = CliParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=8, help="the first N of BENCH_CHAT_PROMPTS (the live bench's 8)")
    ap.add_argument("--replies", type=int, default=6, help="sampled replies per prompt")
    ap.add_argument("--max-new", type=int, default=192, help="reply tokens at most")
    ap.add_argument("--first", type=int, default=64, help="also report the first N reply tokens (the live bench's)")
    ap.add_argument("--unroll", type=int, default=4, help="draft positions")
    ap.add_argument("--seed", type=int, default=7)
    add_threads(ap, 2)
    add_json(ap)
    args = parse(ap, argv)
    if not 1 <= args.prompts <= len(BENCH_CHAT_PROMPTS) or min(args.replies, args.max_new, args.first, args.unroll) < 1:
        ap.error(f"--prompts must be in 1..{len(BENCH_CHAT_PROMPTS)}; --replies, --max-new, --first, --unroll >= 1")
    from gpu_demo.models.eagle import head_meta, load_head
    from gpu_demo.models.gguf import load_smollm2
    from gpu_demo.models.smollm2 import SmolTokenizer
    from gpu_demo.training.eagle_scale import alpha_both_rules, features_for

    smol = load_smollm2(max_len=400 + args.max_new)
    target, tok = smol.model, SmolTokenizer(smol.tokenizer, smol.chat_template, smol.eos_token_id)
    head = load_head(target, max_len=target.max_seq_len)
    encoded = [tok.encode(tok.chat(p)) for p in BENCH_CHAT_PROMPTS[: args.prompts]]
    gen = torch.Generator().manual_seed(args.seed)
    t0 = time.perf_counter()
    samples = [s for _ in range(args.replies) for s in sample_replies(target, encoded, args.max_new,
                                                                         smol.eos_token_id, gen)]
    full = features_for(target, [(s.ids, s.prompt_len) for s in samples])
    cfg = EagleTrainConfig(unroll=args.unroll, max_len=target.max_seq_len)
    emb = target.tok_embeddings.weight
    sets = {"whole replies": full, f"first {args.first} reply tokens": first_tokens(full, args.first)}
    alphas = {name: alpha_both_rules(head, emb, val, cfg) for name, val in sets.items()}
    meta = head_meta()
    print(f"committed head ({meta.get('reply_tokens_train', '?')} training reply tokens), {len(samples)} replies to "
          f"{args.prompts} bench prompts, {time.perf_counter() - t0:.0f} s")
    print(f"{'slots':<24} {'n':>6}  {'alpha T = 1 per position':<30} {'alpha T = 0 per position':<30}")
    for name, a in alphas.items():
        t1 = " ".join(f"{x:.3f}" for x in a["alpha_t1_per_position"])
        t0_ = " ".join(f"{x:.3f}" for x in a["alpha_t0_per_position"])
        print(f"{name:<24} {a['slots']:>6}  {t1:<30} {t0_:<30}")
    report = {"prompts": list(BENCH_CHAT_PROMPTS[: args.prompts]), "replies_per_prompt": args.replies,
              "max_new": args.max_new, "seed": args.seed, "reply_tokens": sum(s.ids.numel() - s.prompt_len
                                                                              for s in samples),
              "alpha": alphas, "head": {k: meta[k] for k in ("held_out", "reply_tokens_train") if k in meta},
              "environment": environment(target.device)}
    if args.json:
        print(f"wrote {write_report(args.json, report, 'bench/eagle_prompt_alpha.py', args.force)}")
    return report


if __name__ == "__main__":
    main()
