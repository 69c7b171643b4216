"""Our engine against llama.cpp's own server (embedded, xllamacpp) on the same SmolLM2-135M-Instruct and prompts.

One CPU thread each, the same chat prompts as token ids (our tokenizer, sent to llama.cpp's /completion as ids), the
same number of new tokens (no early stop). Each repeat runs every configuration once, in an order that reverses
on odd repeats; the table quotes the median tokens/s (wall time of the whole call, prefill included, summed over
prompts) with the min..max spread, and ours / llama.cpp ratios. Rows:
* plain: our autoregressive decoder vs llama.cpp with no speculation;
* best speculative: our best pair (the feature-level draft, smollm2-eagle, at --gamma) vs llama.cpp's faster of an
  n-gram lookup and the same model as its own draft (its only drafts without a second checkpoint).
Greedy agreement: for each configuration, the first token index where it departs from our plain greedy output.

Weights: our target comes from the standard loader (gpu_demo.models.smollm2.shared_target: the GGUF's weights on the
CPU's default format CPU_WEIGHTS, int4 = the file's own Q4_1 blocks on ONNX Runtime's MatMulNBits with activations
rounded to int8 per block of 32, and the Q8_0 head as int8 blocks, with [wq; wk; wv] and [w1; w3] fused; --weights
or $SPECDEC_CPU_WEIGHTS picks another); llama.cpp computes with the same blocks and also rounds the activations to
8 bits per block, but in its own kernels and order, so its logits differ from ours in the last bits and greedy
texts agree up to the first near-tie, then part.

    .venv/bin/python bench/vs_llamacpp.py --prompts 4 --max-new-tokens 64 --repeats 3 --json /tmp/vs_llamacpp.json

--also-weights int8,int4 adds our plain decoder on those formats to the same interleaved run (one row each).
"""

from __future__ import annotations

import inspect
import json
import statistics
import time

import torch
from vs_transformers import Runner, first_difference, ours  # bench/: one home for our runner and the diff

from engines.client import COMPLETION_CAP, Endpoint
from engines.embedded import EmbeddedServer, Mode
from gpu_demo.flags import CliParser, add_gamma, add_json, add_max_new_tokens, add_temperature, parse
from gpu_demo.models.eagle import ASSETS, EagleDrafter, load_head
from gpu_demo.models.smollm2 import SmolTokenizer, shared_target
from gpu_demo.reports import write_report
from gpu_demo.sampler import SamplingConfig
from gpu_demo.training.eagle_data import BENCH_CHAT_PROMPTS


def llamacpp(server: EmbeddedServer, temperature: float, n_new: int) -> Runner:
    """llama.cpp's /completion on token ids: exactly n_new tokens, plain temperature sampling (no top-k/p/min-p)."""
    e = Endpoint(server.url, embedded=True)

    def go(ids: list[int], seed: int) -> list[int]:
        body = {"prompt": ids, "n_predict": n_new, "temperature": temperature, "top_k": 0, "top_p": 1.0,
                "min_p": 0.0, "ignore_eos": True, "return_tokens": True, "cache_prompt": False, "seed": seed}
        _, text = e.request("/completion", body, timeout=600, cap=COMPLETION_CAP)
        return list(json.loads(text)["tokens"])
    return go


def load_target(weights: str | None, max_len: int):
    """Our SmolLM2 through the standard loader; --weights only where the loader takes a weight format."""
    if weights is None:
        return shared_target(torch.device("cpu"), torch.float32, max_len)
    if "weights" not in inspect.signature(shared_target).parameters:
        raise SystemExit("error: this loader has no weight-format option yet (shared_target takes no 'weights').")
    return shared_target(torch.device("cpu"), torch.float32, max_len, weights=weights)


def main(argv: list[str] | None = None) -> dict:
    ap = CliParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=4, help="use the first N of the bench's chat prompts")
    add_max_new_tokens(ap, 64)
    ap.add_argument("--repeats", type=int, default=3)
    add_gamma(ap, "2", single=True)  # our feature draft's gamma
    ap.add_argument("--llama-gamma", type=int, default=4, help="llama.cpp's draft length (n-gram and self-draft)")
    add_temperature(ap, 0.0)
    ap.add_argument("--weights", default=None, help="our target's weight format, if the loader offers one")
    ap.add_argument("--also-weights", default="",
                    help="comma list of more weight formats for our plain decoder, each its own row in the same run")
    add_json(ap)
    args = parse(ap, argv)  # a refused --json exits 2 here, before any work
    torch.set_num_threads(1)  # one CPU thread each, as llama.cpp's server runs (no --threads: the comparison's terms)
    smol = load_target(args.weights, 512)
    tok = SmolTokenizer(smol.tokenizer, smol.chat_template, smol.eos_token_id)
    prompts = [tok.encode(tok.chat(p)) for p in BENCH_CHAT_PROMPTS[: args.prompts]]
    samp, n = SamplingConfig(args.temperature), args.max_new_tokens
    target = smol.model
    head = load_head(target, ASSETS, max_len=512)
    servers = {k: EmbeddedServer(Mode(k, args.llama_gamma)) for k in ("none", "ngram", "self")}
    also = [f.strip() for f in args.also_weights.split(",") if f.strip()]
    cfgs: dict[str, Runner] = {
        "ours plain": ours(target, None, 0, samp, n),
        **{f"ours plain {fmt}": ours(load_target(fmt, 512).model, None, 0, samp, n) for fmt in also},
        f"ours eagle g={args.gamma}": ours(target, EagleDrafter(target, head), args.gamma, samp, n),
        "llama.cpp plain": llamacpp(servers["none"], args.temperature, n),
        f"llama.cpp ngram g={args.llama_gamma}": llamacpp(servers["ngram"], args.temperature, n),
        f"llama.cpp self-draft g={args.llama_gamma}": llamacpp(servers["self"], args.temperature, n),
    }
    for r in cfgs.values():  # warm-up: one short call each
        r(prompts[0][:8], 0)
    secs: dict[str, list[float]] = {k: [] for k in cfgs}
    outs: dict[str, list[list[int]]] = {}
    for rep in range(args.repeats):
        for name in (list(cfgs) if rep % 2 == 0 else list(reversed(cfgs))):
            t0, o = time.perf_counter(), [cfgs[name](ids, 1000 * rep + i) for i, ids in enumerate(prompts)]
            secs[name].append(time.perf_counter() - t0)
            outs.setdefault(name, o)
            rate = len(prompts) * n / secs[name][-1]
            print(f"  repeat {rep + 1}/{args.repeats} {name}: {rate:.1f} tok/s", flush=True)
    for s in servers.values():
        s.stop()
    n_tok = len(prompts) * n
    tps = {k: [n_tok / s for s in v] for k, v in secs.items()}
    med = {k: statistics.median(v) for k, v in tps.items()}
    spec_l = max((k for k in cfgs if k.startswith("llama.cpp ") and "plain" not in k), key=lambda k: med[k])
    rows = [("plain", "ours plain", "llama.cpp plain"),
            *((f"plain, {fmt}", f"ours plain {fmt}", "llama.cpp plain") for fmt in also),
            ("best speculative", f"ours eagle g={args.gamma}", spec_l)]
    table = [{"row": r, "ours": o, "llama.cpp": t, "ours_tok_s": med[o], "llama_tok_s": med[t],
              "ratio": med[o] / med[t], "ours_spread": [min(tps[o]), max(tps[o])],
              "llama_spread": [min(tps[t]), max(tps[t])]} for r, o, t in rows]
    base = outs["ours plain"]
    agree = {k: [first_difference(a, b) for a, b in zip(base, outs[k])] for k in cfgs if k != "ours plain"}
    print(f"\nSmolLM2-135M-Instruct, {len(prompts)} chat prompts x {n} new tokens, T = {args.temperature:g}, 1 thread "
          f"each, median of {args.repeats} interleaved repeats (min..max)")
    print(f"{'row':<18} {'ours':<16} {'tok/s':>16}  {'llama.cpp':<26} {'tok/s':>16}  {'ours/llama':>10}")
    for t in table:
        (lo, hi), (llo, lhi) = t["ours_spread"], t["llama_spread"]
        print(f"{t['row']:<18} {t['ours']:<16} {t['ours_tok_s']:>6.1f} ({lo:.1f}..{hi:.1f})  {t['llama.cpp']:<26} "
              f"{t['llama_tok_s']:>6.1f} ({llo:.1f}..{lhi:.1f})  {t['ratio']:>10.2f}")
    print("\nall tokens/s (median):", {k: round(v, 1) for k, v in med.items()})
    if args.temperature == 0:
        print("greedy agreement with our plain greedy output (None = identical, else first differing index):")
        for k, v in agree.items():
            print(f"  {k}: {v}")
        for fmt in also:
            print(f"  llama.cpp plain against ours plain {fmt}: "
                  f"{[first_difference(a, b) for a, b in zip(outs[f'ours plain {fmt}'], outs['llama.cpp plain'])]}")
    report = {"prompts": BENCH_CHAT_PROMPTS[: args.prompts], "max_new_tokens": n, "repeats": args.repeats,
              "temperature": args.temperature, "gamma": args.gamma, "llama_gamma": args.llama_gamma,
              "tokens_per_s": tps, "median_tokens_per_s": med, "table": table, "first_difference": agree}
    if args.json:
        print(f"wrote {write_report(args.json, report, 'bench/vs_llamacpp.py', args.force)}")
    return report


if __name__ == "__main__":
    main()
