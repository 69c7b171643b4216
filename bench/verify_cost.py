"""Benchmark: what one SmolLM2 verify pass of T tokens costs, v(T) = t(T) / t(1), per linear kernel.

v is the cost side of speedup = E[N] / (gamma c + v): a verify pass scores T = gamma + 1 tokens. On a GPU
v stays near 1 until the batch fills the compute; on one CPU thread it climbs early, and how early depends
on the kernel: the BLAS that F.linear calls with the weights in either memory order
(gpu_demo.models.llama.Llama.set_weight_layout), or oneDNN on prepacked weights from 4 rows up
(Llama.pack_for_cpu, the app's setting on a CPU).
Kernels and token counts are interleaved in every repeat (kernel order reversed on odd repeats), each
timing is the mean of --calls forwards after a context of --context tokens, and the table prints the
median over repeats with its [min, max].

    .venv/bin/python bench/verify_cost.py --threads 1 --repeats 7 --json bench/verify_cost.json
    .venv/bin/python bench/verify_cost.py --weights float32,fp16,int8 --tokens 1,2,4,8 \
        --json bench/verify_cost_formats.json
"""

from __future__ import annotations

import os
import time

import torch

from gpu_demo.device import time_call
from gpu_demo.flags import CliParser, add_json, add_threads, gamma_list, parse
from gpu_demo.measure.bench import environment
from gpu_demo.reports import write_report
from specdec_core.repeats import check_repeats, race_order, spread

KERNELS = ("BLAS, contiguous W (out, in)", "BLAS, W^T contiguous (in, out)", "oneDNN packed from 4 rows (app)")


def use_kernel(model, name: str) -> None:
    """Put `model`'s linear maps on the kernel `name` (one of KERNELS, or a weight format of quant.FORMATS)."""
    from gpu_demo.models.quant import FORMATS

    if name in FORMATS:
        from gpu_demo.models.gguf import q4_1_state

        model.quantize_for_cpu(name, q4_1_state() if name == "int4" else None)  # float32: oneDNN-packed (app)
        return
    model.quantize_for_cpu("float32")
    model.pack_for_cpu(None)
    if name == KERNELS[2]:
        model.pack_for_cpu()
    else:
        model.set_weight_layout(name == KERNELS[1])


def measure(model, tokens: list[int], repeats: int, calls: int, context: int,
            kernels: tuple[str, ...] = KERNELS) -> dict[str, dict[int, list[float]]]:
    """Seconds per forward of T tokens after `context` cached tokens, per kernel and T, `repeats` interleaved values."""
    g = torch.Generator().manual_seed(0)
    prefix = torch.randint(0, model.vocab_size, (1, context), generator=g)  # (1, context)
    out: dict[str, dict[int, list[float]]] = {name: {t: [] for t in tokens} for name in kernels}
    with torch.inference_mode():
        model.reset(1)
        model.forward(prefix)
        for base_first in race_order(repeats):
            for name in kernels if base_first else kernels[::-1]:
                use_kernel(model, name)
                for t in tokens:
                    x = torch.randint(0, model.vocab_size, (1, t), generator=g)  # (1, T)

                    def step(x=x) -> None:
                        model.rollback(context)
                        model.forward(x)

                    out[name][t].append(sum(time_call(step, model.device, calls)) / calls)
    return out


def v_medians(report: dict) -> dict[str, dict[int, float]]:
    """v(T) = median over repeats of t(T) / t(1) per kernel or format, from this script's JSON report (pure)."""
    out = {}
    for name, per_t in report["seconds"].items():
        one = per_t[min(per_t, key=int)]
        out[name] = {int(t): spread([v / o for v, o in zip(vals, one)]).median for t, vals in per_t.items()}
    return out


def table(times: dict[str, dict[int, list[float]]]) -> str:
    """ms per pass and v(T) = t(T) / t(1) (median [min, max] over repeats) per kernel."""
    lines = []
    for name, per_t in times.items():
        lines.append(f"\n{name}\n{'T':>3} {'ms (min-max)':>20} {'v = t(T)/t(1)':>20}")
        one = per_t[min(per_t)]
        for t, vals in per_t.items():
            ms = spread([1e3 * v for v in vals])
            ratio = spread([v / o for v, o in zip(vals, one)])
            lines.append(f"{t:>3} {ms.median:>8.1f} ({ms.lo:.1f}-{ms.hi:.1f}) {ratio.median:>9.2f} "
                         f"({ratio.lo:.2f}-{ratio.hi:.2f})")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """CLI."""
    ap = CliParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=gamma_list, default=gamma_list("1,2,3,4,5,6,8,12,16"), help="T values")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--calls", type=int, default=3, help="forwards averaged per timing")
    ap.add_argument("--context", type=int, default=200, help="tokens already in the cache")
    add_threads(ap)
    ap.add_argument("--weights", default=None,
                    help="comma list of weight formats (float32,fp16,int8,int4) to compare instead of the kernels")
    add_json(ap)
    args = parse(ap, argv)
    check_repeats(args.repeats)
    if args.calls < 1 or not 1 <= args.context <= 1500:
        raise SystemExit("--calls must be >= 1 and --context in [1, 1500]")
    tokens = sorted(set(args.tokens) | {1})  # v is relative to T = 1
    from gpu_demo.models.gguf import load_smollm2

    model = load_smollm2(max_len=args.context + max(tokens) + 1).model
    t0 = time.perf_counter()
    kernels = tuple(w.strip() for w in args.weights.split(",")) if args.weights else KERNELS
    times = measure(model, tokens, args.repeats, args.calls, args.context, kernels)
    print(f"SmolLM2-135M verify pass, {args.threads} thread(s), context {args.context}, {args.repeats} repeats "
          f"x {args.calls} calls ({time.perf_counter() - t0:.0f} s)")
    print(table(times))
    if args.json:
        report = {"threads": args.threads, "load_average": os.getloadavg()[0],
                  "context": args.context, "repeats": args.repeats, "calls": args.calls,
                  "seconds": {name: {str(t): v for t, v in per_t.items()} for name, per_t in times.items()},
                  "environment": environment(model.device)}
        print(f"wrote {write_report(args.json, report, 'bench/verify_cost.py', args.force)}")


if __name__ == "__main__":
    main()
