"""Benchmark: the SmolLM2 EAGLE-style head's draft steps on each CPU draft kernel (fp16 fbgemm, bf16 oneDNN, float32).

On fp16 the head's batch-1 step runs in few Python calls (gpu_demo.models.llama_step.head_step); a second fp16 row
times the general forward on fp16 copies too, so the ratio of the two is the step's saving, measured in one run.

One draft step of the live loop: the head's layer over one slot, its |S|-row head and a draw from q. Each timing is
`--steps` draft steps right after a target verify pass of 3 tokens, which evicts the head's weights from the caches as
the live loop does. Kernels are interleaved in every repeat (order reversed on odd repeats); the table prints the
median ms per draft step with its [min, max] over repeats, and the ratio to the fastest kernel's median.

    .venv/bin/python bench/draft_kernels.py --repeats 9 --steps 6 --json bench/draft_kernels.json
"""

from __future__ import annotations

import os
import time

import torch

from gpu_demo.flags import CliParser, add_json, add_temperature, add_threads, parse
from gpu_demo.measure.bench import environment
from gpu_demo.models.quant import DRAFT_ENV, DRAFT_KERNELS
from gpu_demo.reports import write_report
from gpu_demo.sampler import SamplingConfig
from specdec_core.repeats import check_repeats, race_order, spread


def heads(target) -> dict[str, object]:
    """The committed head loaded once per kernel this CPU runs (DRAFT_ENV picks it), keyed by the path in words."""
    from gpu_demo.models.eagle import load_head

    out, before = {}, os.environ.get(DRAFT_ENV)
    try:
        for kind in DRAFT_KERNELS:
            os.environ[DRAFT_ENV] = kind
            head = load_head(target, max_len=512)
            head.pack_for_cpu()
            if head.kernel.startswith(kind.replace("fp16", "fp16 weights")) and head.kernel not in out:
                out[head.kernel] = head
                if kind == "fp16":
                    general = load_head(target, max_len=512)
                    general.pack_for_cpu(lean=False)
                    out[head.kernel + ", general forward"] = general
    finally:
        os.environ.pop(DRAFT_ENV) if before is None else os.environ.__setitem__(DRAFT_ENV, before)
    return out


def measure(target, kernels: dict, repeats: int, steps: int, sampling: SamplingConfig) -> dict[str, list[float]]:
    """Seconds per draft step, `repeats` interleaved values per kernel."""
    g = torch.Generator().manual_seed(0)
    names = list(kernels)
    out = {n: [] for n in names}
    with torch.inference_mode():
        target.reset(1)
        target.forward(torch.randint(0, target.vocab_size, (1, 200), generator=g))
        base = target.cache_len
        feats = torch.randn(1, 200, target.cfg.dim, generator=g)  # (1, 200, C)
        toks = torch.randint(0, target.vocab_size, (1, 200), generator=g)  # (1, 200)
        for head in kernels.values():
            head.reset(1)
            head(feats, toks)
        for first in race_order(repeats):
            for name in names if first else names[::-1]:
                head = kernels[name]
                target.rollback(base)
                target.forward(toks[:, :3])  # a verify pass: the head's weights leave the caches
                head.rollback(200)
                t0 = time.perf_counter()
                gvec, x = feats[:, -1:], toks[:, -1:]  # (1, 1, C), (1, 1)
                for _ in range(steps):
                    gvec = head(gvec, x)  # (1, 1, C)
                    x, _q = head.draw(gvec[0, 0], sampling, g)
                    x = x.view(1, 1)
                out[name].append((time.perf_counter() - t0) / steps)
    return out


def table(times: dict[str, list[float]]) -> str:
    """ms per draft step, median [min, max], and the ratio of medians to the fastest kernel."""
    meds = {n: spread([1e3 * t for t in v]) for n, v in times.items()}
    best = min(m.median for m in meds.values())
    lines = [f"{'kernel':<70} {'ms / draft step (min-max)':>26} {'x fastest':>10}"]
    for n, m in meds.items():
        lines.append(f"{n[:70]:<70} {m.median:>9.2f} ({m.lo:.2f}-{m.hi:.2f}) {m.median / best:>14.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    """CLI."""
    ap = CliParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--steps", type=int, default=3, help="draft steps per timing (gamma)")
    add_temperature(ap)
    add_threads(ap)
    add_json(ap)
    args = parse(ap, argv)
    try:
        check_repeats(args.repeats)
    except ValueError as exc:
        ap.error(str(exc))
    if args.steps < 1:
        ap.error("--steps must be at least 1")
    from gpu_demo.models.smollm2 import shared_target

    target = shared_target(torch.device("cpu"), torch.float32, 512).model
    kernels = heads(target)
    times = measure(target, kernels, args.repeats, args.steps, SamplingConfig(args.temperature))
    print(f"SmolLM2 EAGLE head, draft step after a 3-token verify pass, {args.threads} thread(s), target "
          f"{target.weight_format}, {args.repeats} repeats x {args.steps} steps")
    print(table(times))
    report = {"threads": args.threads, "repeats": args.repeats, "steps": args.steps, "load_average":
              os.getloadavg()[0], "target_weights": target.weight_format,
              "seconds_per_step": times, "environment": environment(target.device)}
    if args.json:
        print(f"wrote {write_report(args.json, report, 'bench/draft_kernels.py', args.force)}")
    return report


if __name__ == "__main__":
    main()
