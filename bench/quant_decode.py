"""Benchmark: plain greedy decoding of SmolLM2-135M per weight format on a CPU, and how far each format's law is
from float32's.

For each format (gpu_demo.models.quant.FORMATS) the target is loaded once and put on that format
(Llama.quantize_for_cpu, float32 = the app's oneDNN-packed float32). Every repeat decodes each of the first
--prompts BENCH_CHAT_PROMPTS (chat template) for --max-new-tokens, greedy, formats interleaved (order reversed on odd
repeats); tokens/s = new tokens / wall time of the whole generation (prefill included), median [min, max] over
repeats of the per-repeat total, with the load average beside it. The law check runs once, teacher-forced on the
float32 greedy continuation of each prompt: mean TV(p_float32, p_fmt) over its --max-new-tokens positions, the share of
positions whose argmax agrees, and whether the format's own greedy output equals float32's token for token.

    .venv/bin/python bench/quant_decode.py --threads 1 --repeats 3 --json bench/quant_decode.json
"""

from __future__ import annotations

import os
from dataclasses import asdict

import torch

from gpu_demo.decode import autoregressive, run
from gpu_demo.device import timed_once
from gpu_demo.flags import CliParser, add_json, add_max_new_tokens, add_threads, int_in, parse
from gpu_demo.measure.bench import environment
from gpu_demo.models.quant import FORMATS, quant_unavailable_reason
from gpu_demo.reports import write_report
from gpu_demo.sampler import SamplingConfig
from specdec_core.repeats import check_repeats, spread

GREEDY = SamplingConfig(temperature=0.0)


def load_formats(formats: list[str], max_len: int) -> dict:
    """format -> (SmolLM2 on that format, tokenizer adapter), each loaded once."""
    from gpu_demo.models.gguf import load_smollm2
    from gpu_demo.models.smollm2 import SmolTokenizer, prepare_target, target_weights

    out = {}
    for fmt in formats:
        smol = load_smollm2(max_len=max_len)
        got, words = target_weights(torch.device("cpu"), torch.float32, fmt)
        if got != fmt:
            raise SystemExit(f"{fmt} does not run here: {words}")
        prepare_target(smol, fmt, words)
        out[fmt] = (smol, SmolTokenizer(smol.tokenizer, smol.chat_template, smol.eos_token_id))
    return out


def decode_seconds(model, prompts: list[list[int]], new: int) -> float:
    """Wall seconds to decode `new` greedy tokens after each prompt, summed (no stop token: all `new` are made)."""
    return sum(timed_once(lambda ids=ids: run(autoregressive(model, ids, new, sampling=GREEDY, topk=0)),
                          model.device) for ids in prompts)


def law_gap(ref, model, prompts: list[list[int]], new: int) -> dict[str, float]:
    """Mean TV(p_ref, p_model) and argmax agreement over ref's greedy continuations; greedy-output equality."""
    tvs, agree, same = [], [], 0
    for ids in prompts:
        cont = run(autoregressive(ref, ids, new, sampling=GREEDY, topk=0)).tokens
        own = run(autoregressive(model, ids, new, sampling=GREEDY, topk=0)).tokens
        same += own == cont
        seq = torch.tensor([ids + cont[:-1]])  # (1, S): positions predicting each continuation token
        with torch.inference_mode():
            p = torch.softmax(ref.forward_train(seq)[0, len(ids) - 1:].double(), -1)  # (new, V)
            pm = torch.softmax(model.forward_train(seq)[0, len(ids) - 1:].double(), -1)  # (new, V)
        tvs.append(0.5 * (p - pm).abs().sum(-1))
        agree.append((p.argmax(-1) == pm.argmax(-1)).double())
    return {"mean_tv": float(torch.cat(tvs).mean()), "max_tv": float(torch.cat(tvs).max()),
            "argmax_agreement": float(torch.cat(agree).mean()), "greedy_outputs_equal": f"{same}/{len(prompts)}"}


def main(argv: list[str] | None = None) -> None:
    """CLI."""
    from gpu_demo.training.eagle_data import BENCH_CHAT_PROMPTS

    ap = CliParser(description=__doc__.splitlines()[0])
    ap.add_argument("--formats", default="float32,fp16,int8", help=f"comma list of {FORMATS}")
    ap.add_argument("--prompts", type=int_in(1, len(BENCH_CHAT_PROMPTS)), default=4)
    add_max_new_tokens(ap, 48, "--new")
    ap.add_argument("--repeats", type=int, default=3)
    add_threads(ap)
    add_json(ap)
    args = parse(ap, argv)
    args.new = args.max_new_tokens
    check_repeats(args.repeats)
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    bad = [f for f in formats if f not in FORMATS or quant_unavailable_reason(f)]
    if bad or not 1 <= args.new <= 512:
        ap.error(f"formats must run here and be among {FORMATS} (not {bad}); --max-new-tokens in [1, 512]")
    models = load_formats(formats, 512)
    tok = next(iter(models.values()))[1]
    prompts = [tok.encode(tok.chat(p)) for p in BENCH_CHAT_PROMPTS[: args.prompts]]
    secs: dict[str, list[float]] = {f: [] for f in formats}
    loads = []
    for r in range(args.repeats):
        loads.append(os.getloadavg()[0])
        for fmt in formats if r % 2 == 0 else formats[::-1]:
            secs[fmt].append(decode_seconds(models[fmt][0].model, prompts, args.new))
    n_tok = args.new * len(prompts)
    base = formats[0]
    print(f"SmolLM2-135M plain greedy decoding, {args.threads} thread(s), {len(prompts)} prompts x {args.new} "
          f"tokens, {args.repeats} interleaved repeats, load average {min(loads):.2f}-{max(loads):.2f}")
    print(f"{'format':<8} {'tok/s (min-max)':>22} {f'x {base}':>16} {'mean TV':>9} {'argmax':>7} {'greedy =':>9}")
    report = {}
    for fmt in formats:
        tps = spread([n_tok / s for s in secs[fmt]])
        ratio = spread([b / s for s, b in zip(secs[fmt], secs[base])])
        gap = law_gap(models[base][0].model, models[fmt][0].model, prompts, args.new)
        report[fmt] = {"tok_s": asdict(tps), "speed_vs_" + base: asdict(ratio),
                       "seconds": secs[fmt], **gap, "weights": models[fmt][0].weights}
        print(f"{fmt:<8} {tps.median:>8.1f} ({tps.lo:.1f}-{tps.hi:.1f}) {ratio.median:>8.2f} "
              f"({ratio.lo:.2f}-{ratio.hi:.2f}) {gap['mean_tv']:>9.4f} {gap['argmax_agreement']:>7.3f} "
              f"{gap['greedy_outputs_equal']:>9}")
    if args.json:
        out = {"threads": args.threads, "prompts": args.prompts, "new": args.new, "repeats": args.repeats,
               "load_average": loads, "formats": report, "environment": environment(torch.device("cpu"))}
        print(f"wrote {write_report(args.json, out, 'bench/quant_decode.py', args.force)}")


if __name__ == "__main__":
    main()
