"""Micro-benchmark: one SmolLM2 linear map on one CPU thread, per weight kernel, at 1 row and at 2-8 rows (verify).

Kernels: float32 F.linear (BLAS), float32 oneDNN-packed (gpu_demo.models.packed), torch's weight-only int8
per-channel (_weight_int8pack_mm) and int4 group 32 (_weight_int4pack_mm_for_cpu), fbgemm's fp16 weights and
dynamic int8, and ONNX Runtime's int8 and Q4_1 blocks of 32 (gpu_demo.models.ort_blocks), on SmolLM2-135M's
shapes (random weights: the time does not depend on the values). Kernels are interleaved in every repeat; each
timing is the mean of --calls products; the table is the median [min, max] over repeats, and the time per row
count summed over one decoder layer's seven maps plus the head.

    .venv/bin/python bench/quant_kernels.py --threads 1 --repeats 5 --json /tmp/quant_kernels.json
"""

from __future__ import annotations

import os

import torch
import torch.nn.functional as F

from gpu_demo.device import time_call
from gpu_demo.flags import CliParser, add_json, add_threads, parse
from gpu_demo.measure.bench import environment
from gpu_demo.models.packed import pack_weight, packed_linear, packing_available
from gpu_demo.models.quant import (
    fbgemm_int8_linear,
    fbgemm_int8_pack,
    int4_from_float,
    int4_from_min_scale,
    int4_linear,
    int8_from_float,
    int8_weight_only_linear,
    pack,
    run,
)
from gpu_demo.reports import write_report
from specdec_core.repeats import check_repeats, spread

SHAPES = {"q/o 576x576": (576, 576, 2), "k/v 192x576": (192, 576, 2), "gate/up 1536x576": (1536, 576, 2),
          "down 576x1536": (576, 1536, 1), "head 49152x576": (49152, 576, 1)}  # (out, in, count per layer)
KERNELS = ("float32 BLAS", "float32 oneDNN packed", "torch int8 weight-only", "torch int4 group 32", "fbgemm fp16",
           "fbgemm int8 dynamic", "ORT int8 blocks", "ORT int4 Q4_1 blocks")


def kernel_fns(w: torch.Tensor) -> dict:
    """name -> f(x) computing x W^T on that kernel's copy of W (out, in)."""
    fns = {"float32 BLAS": lambda x: F.linear(x, w)}
    if packing_available():
        pw = pack_weight(w, torch.float32, 4)
        fns["float32 oneDNN packed"] = lambda x: packed_linear(x, pw)
    q8, s8 = int8_from_float(w)
    fns["torch int8 weight-only"] = lambda x: int8_weight_only_linear(x, q8, s8)
    t4 = int4_from_min_scale(*int4_from_float(w))
    fns["torch int4 group 32"] = lambda x: int4_linear(x, *t4)
    f8 = fbgemm_int8_pack(w)
    fns["fbgemm int8 dynamic"] = lambda x: fbgemm_int8_linear(x, f8)
    for name, fmt in (("fbgemm fp16", "fp16"), ("ORT int8 blocks", "int8"), ("ORT int4 Q4_1 blocks", "int4")):
        packed = pack(fmt, w)
        fns[name] = lambda x, fmt=fmt, packed=packed: run(fmt, x, packed)
    return fns


def measure(rows: list[int], repeats: int, calls: int) -> dict[str, dict[str, dict[int, list[float]]]]:
    """Seconds per product, shape -> kernel -> rows -> repeats."""
    g = torch.Generator().manual_seed(0)
    out: dict = {}
    for shape, (n, k, _) in SHAPES.items():
        fns = kernel_fns(torch.randn(n, k, generator=g) * 0.02)
        out[shape] = {name: {m: [] for m in rows} for name in fns}
        xs = {m: torch.randn(m, k, generator=g) for m in rows}  # (M, K)
        with torch.inference_mode():
            for r in range(repeats):
                for name in (list(fns) if r % 2 == 0 else list(fns)[::-1]):
                    for m in rows:
                        def product(f=fns[name], x=xs[m]) -> None:
                            f(x)

                        product()  # warm
                        out[shape][name][m].append(sum(time_call(product, torch.device("cpu"), calls)) / calls)
    return out


def layer_total(times: dict, name: str, m: int, r: int) -> float:
    """Seconds of repeat r for one decoder layer's seven maps plus the head, at m rows, on kernel `name`."""
    return sum(cnt * times[s][name][m][r] for s, (_, _, cnt) in SHAPES.items())


def table(times: dict, rows: list[int], repeats: int) -> str:
    """Microseconds per product (median [min-max]) per shape, kernel and rows."""
    lines = [f"{'shape':<18} {'kernel':<22} " + " ".join(f"{f'M={m} us':>16}" for m in rows)]
    for shape, per_k in times.items():
        for name, per_m in per_k.items():
            cells = []
            for m in rows:
                sp = spread([1e6 * v for v in per_m[m]])
                cells.append(f"{sp.median:>7.0f} ({sp.lo:.0f}-{sp.hi:.0f})")
            lines.append(f"{shape:<18} {name:<22} " + " ".join(f"{c:>16}" for c in cells))
    lines.append("\none layer + head, ratio to float32 BLAS at the same rows (median over repeats)")
    for name in times["head 49152x576"]:
        ratios = [spread([layer_total(times, name, m, r) / layer_total(times, KERNELS[0], m, r)
                          for r in range(repeats)]).median for m in rows]
        lines.append(f"{name:<22} " + " ".join(f"M={m}: {x:.2f}" for m, x in zip(rows, ratios)))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """CLI."""
    ap = CliParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1,2,4,8")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--calls", type=int, default=20)
    add_threads(ap)
    add_json(ap)
    args = parse(ap, argv)
    check_repeats(args.repeats)
    rows = sorted({int(r) for r in args.rows.split(",")})
    load = os.getloadavg()
    times = measure(rows, args.repeats, args.calls)
    print(f"{args.threads} thread(s), {args.repeats} repeats x {args.calls} calls, load average {load[0]:.2f} "
          f"at start, {os.getloadavg()[0]:.2f} at end")
    print(table(times, rows, args.repeats))
    if args.json:
        seconds = {s: {k: {str(m): v for m, v in pm.items()} for k, pm in pk.items()} for s, pk in times.items()}
        out = {"threads": args.threads, "repeats": args.repeats, "calls": args.calls, "seconds": seconds,
               "load_average": [load[0], os.getloadavg()[0]], "environment": environment(torch.device("cpu"))}
        print(f"wrote {write_report(args.json, out, 'bench/quant_kernels.py', args.force)}")


if __name__ == "__main__":
    main()
