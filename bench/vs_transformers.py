"""Our engine against Hugging Face transformers' generate, on the same SmolLM2-135M-Instruct weights.

One process, one CPU thread, the same chat prompts and the same number of new tokens for every run
(no early stop: both sides generate exactly --max-new-tokens, past an end-of-turn token if one comes).
Each repeat runs every configuration once, in one interleaved order, so a shared machine's load drift
hits all of them; the table quotes the median tokens/s over repeats (wall time of the whole call,
prefill included, summed over prompts) with the min..max spread, and our / HF ratios.

Rows (greedy rows also check that both sides emit the same tokens):
* plain: our autoregressive decoder vs ``generate(do_sample=False)`` (at T = 1: ``do_sample=True``);
* prompt lookup: our LookupDrafter (gamma = --lookup-gamma) vs ``generate(prompt_lookup_num_tokens=...)``;
* best draft: our feature-level draft (smollm2-eagle, gamma = --gamma) vs the best option transformers
  offers this model without a second checkpoint: prompt lookup (above) and self-speculative early exit
  (``assistant_early_exit``: the first --early-exit layers plus the model's head as the draft).
  (EAGLE itself is not in transformers; an assistant model would need a smaller SmolLM2 checkpoint,
  which is not available offline here.)

HF's model is built from our dequantised weights (gpu_demo.models.llama_hf.to_transformers); nothing is
downloaded.

    .venv/bin/python bench/vs_transformers.py --prompts 4 --max-new-tokens 64 --repeats 3 --json PATH
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path

import torch

from gpu_demo.decode import autoregressive, run, speculative
from gpu_demo.drafters import LookupDrafter
from gpu_demo.flags import CliParser, add_gamma, add_json, add_max_new_tokens, add_threads, parse
from gpu_demo.models.eagle import ASSETS, EagleDrafter, load_head
from gpu_demo.models.gguf import load_smollm2
from gpu_demo.models.llama_hf import to_transformers
from gpu_demo.models.smollm2 import SmolTokenizer
from gpu_demo.reports import write_report
from gpu_demo.sampler import SamplingConfig
from gpu_demo.training.eagle_data import BENCH_CHAT_PROMPTS

Runner = Callable[[list[int], int], list[int]]  # (prompt ids, seed) -> new ids


def ours(target, drafter, gamma: int, sampling: SamplingConfig, n_new: int) -> Runner:
    """Our decoder: autoregressive when drafter is None, else speculative with `gamma`."""
    def go(ids: list[int], seed: int) -> list[int]:
        if drafter is None:
            return run(autoregressive(target, ids, n_new, sampling, seed=seed, topk=0)).tokens
        return run(speculative(target, drafter, ids, n_new, gamma, sampling, seed=seed, topk=0)).tokens
    return go


def theirs(hf, sampling: SamplingConfig, n_new: int, **options) -> Runner:
    """transformers' generate with exactly n_new new tokens (no eos stop) and the given decoding options."""
    def go(ids: list[int], seed: int) -> list[int]:
        torch.manual_seed(seed)
        x = torch.tensor([ids])
        kw = {"do_sample": False} if sampling.greedy else {"do_sample": True, "temperature": sampling.temperature,
                                                          "top_k": 0, "top_p": 1.0}
        with torch.inference_mode():
            out = hf.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=n_new, min_new_tokens=0,
                              eos_token_id=None, pad_token_id=0, **kw, **options)
        return out[0, len(ids) :].tolist()
    return go


def time_run(runner: Runner, prompts: list[list[int]], seed: int) -> tuple[float, list[list[int]]]:
    """Seconds for all prompts (one call each) and the new ids of each."""
    t0, outs = time.perf_counter(), []
    for i, ids in enumerate(prompts):
        outs.append(runner(ids, seed + i))
    return time.perf_counter() - t0, outs


def first_difference(a: list[int], b: list[int]) -> int | None:
    """Index of the first differing token (or length mismatch); None when equal."""
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return None if len(a) == len(b) else min(len(a), len(b))


def build_configs(args, smol, hf, tok) -> dict[str, Runner]:
    """Every configuration, by name ('ours ...' / 'hf ...')."""
    target = smol.model
    n = args.max_new_tokens
    head = load_head(target, Path(args.eagle_dir), max_len=512)
    cfgs: dict[str, Runner] = {}
    for label, samp in (("greedy", SamplingConfig(0.0)), ("T=1", SamplingConfig(1.0))):
        cfgs[f"ours plain {label}"] = ours(target, None, 0, samp, n)
        cfgs[f"hf plain {label}"] = theirs(hf, samp, n)
        cfgs[f"ours lookup {label}"] = ours(target, LookupDrafter(target.vocab_size), args.lookup_gamma, samp, n)
        cfgs[f"hf lookup {label}"] = theirs(hf, samp, n, prompt_lookup_num_tokens=args.lookup_gamma)
        cfgs[f"ours eagle {label}"] = ours(target, EagleDrafter(target, head), args.gamma, samp, n)
        cfgs[f"hf early-exit {label}"] = theirs(hf, samp, n, assistant_early_exit=args.early_exit,
                                                num_assistant_tokens=args.gamma,
                                                num_assistant_tokens_schedule="constant")
    return cfgs


ROWS = (  # (row, ours, hf candidates): the HF column of "best draft" is its faster candidate
    ("plain", "ours plain", ("hf plain",)),
    ("prompt lookup", "ours lookup", ("hf lookup",)),
    ("best draft", "ours eagle", ("hf lookup", "hf early-exit")),
)


def main(argv: list[str] | None = None) -> dict:
    ap = CliParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=4, help="use the first N of the bench's chat prompts")
    add_max_new_tokens(ap, 64)
    ap.add_argument("--repeats", type=int, default=3)
    add_gamma(ap, "3", single=True)  # our feature draft's gamma (and HF early-exit's)
    ap.add_argument("--lookup-gamma", type=int, default=4)
    ap.add_argument("--early-exit", type=int, default=4, help="layers of the HF early-exit draft")
    add_threads(ap)
    ap.add_argument("--eagle-dir", default=str(ASSETS), help="folder holding smollm2_eagle.{json,safetensors}")
    add_json(ap)
    args = parse(ap, argv)
    import transformers

    smol = load_smollm2(max_len=512)
    tok = SmolTokenizer(smol.tokenizer, smol.chat_template, smol.eos_token_id)
    hf = to_transformers(smol.model)
    prompts = [tok.encode(tok.chat(p)) for p in BENCH_CHAT_PROMPTS[: args.prompts]]
    cfgs = build_configs(args, smol, hf, tok)
    for r in cfgs.values():  # warm-up: one short call each
        r(prompts[0][:8], 0)
    secs: dict[str, list[float]] = {k: [] for k in cfgs}
    outs: dict[str, list[list[int]]] = {}
    for rep in range(args.repeats):
        order = list(cfgs) if rep % 2 == 0 else list(reversed(cfgs))  # alternate the order: no fixed position
        for name in order:
            s, o = time_run(cfgs[name], prompts, seed=1000 * rep)
            secs[name].append(s)
            outs.setdefault(name, o)
            print(f"  repeat {rep + 1}/{args.repeats} {name}: {len(prompts) * args.max_new_tokens / s:.1f} tok/s",
                  flush=True)
    n_tok = len(prompts) * args.max_new_tokens
    tps = {k: [n_tok / s for s in v] for k, v in secs.items()}
    med = {k: statistics.median(v) for k, v in tps.items()}
    agree = {}
    for name in cfgs:
        if name.endswith("greedy") and name != "ours plain greedy":
            diffs = [first_difference(a, b) for a, b in zip(outs["ours plain greedy"], outs[name])]
            agree[name] = diffs
    table = []
    for label in ("greedy", "T=1"):
        for row, mine, cands in ROWS:
            o = f"{mine} {label}"
            best = max((f"{c} {label}" for c in cands), key=lambda k: med[k])
            table.append({"row": f"{row} ({label})", "ours": o, "hf": best, "ours_tok_s": med[o], "hf_tok_s": med[best],
                          "ratio": med[o] / med[best], "ours_spread": [min(tps[o]), max(tps[o])],
                          "hf_spread": [min(tps[best]), max(tps[best])]})
    print(f"\nSmolLM2-135M-Instruct, {len(prompts)} chat prompts x {args.max_new_tokens} new tokens, "
          f"{args.threads} thread(s), median of {args.repeats} interleaved repeats (min..max), "
          f"transformers {transformers.__version__}, torch {torch.__version__}")
    print(f"{'row':<22} {'ours':<18} {'tok/s':>14}  {'transformers':<20} {'tok/s':>14}  {'ours/HF':>7}")
    for t in table:
        lo, hi = t["ours_spread"]
        hlo, hhi = t["hf_spread"]
        print(f"{t['row']:<22} {t['ours']:<18} {t['ours_tok_s']:>5.1f} ({lo:.1f}..{hi:.1f})"
              f"  {t['hf']:<20} {t['hf_tok_s']:>5.1f} ({hlo:.1f}..{hhi:.1f})  {t['ratio']:>7.2f}")
    print("\nall tokens/s (median):", {k: round(v, 1) for k, v in med.items()})
    print("greedy agreement with our plain greedy output (None = identical, else first differing index):")
    for k, v in agree.items():
        print(f"  {k}: {v}")
    report = {"prompts": BENCH_CHAT_PROMPTS[: args.prompts], "max_new_tokens": args.max_new_tokens,
              "repeats": args.repeats, "threads": args.threads, "gamma": args.gamma, "lookup_gamma": args.lookup_gamma,
              "early_exit": args.early_exit, "tokens_per_s": tps, "median_tokens_per_s": med, "table": table,
              "greedy_first_difference": agree, "transformers": transformers.__version__, "torch": torch.__version__}
    if args.json:
        print(f"wrote {write_report(args.json, report, 'bench/vs_transformers.py', args.force)}")
    return report


if __name__ == "__main__":
    main()
