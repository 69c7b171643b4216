"""Benchmark: the "measure it here" probe, measured vs the roofline model, on this machine.

Prints the seed's roofline numbers (model), then runs the probe ``--runs`` times and prints, per token
count, the median over runs of each run's median time, next to the model built from the median
measured ceilings. ``--json`` writes everything; ``--html`` writes the Plotly figure (self-contained,
works offline); ``--png`` screenshots that HTML in headless Chromium (kaleido is not installed).

    .venv/bin/python bench/roofline_probe_bench.py --shape "Llama-3.2-1B, 1 layer" --runs 3 \
        --json artifacts/roofline_probe.json --html artifacts/roofline_probe.html --png artifacts/roofline_probe.png
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np

from gpu_demo.flags import CliParser, add_device, add_json, add_threads, parse
from gpu_demo.reports import RefusedPath, check_output_file, write_report

ROOT = Path(__file__).resolve().parents[1]

from gpu_demo.measure.probe import PROBE_SHAPES, ProbeResult, probe, run_to_end  # noqa: E402
from specdec_core import roofline  # noqa: E402
from specdec_core.steptime import fit_knee, knee_tokens, linear_stack_time  # noqa: E402


def seed_table() -> str:
    """Ridge and gamma-3 crossover per preset and mode (roofline model, not a measurement)."""
    rows = [f"{'hardware':<15} {'mode':<6} {'ridge':>6} {'B* (gamma 3)':>13}"]
    for name, hw in roofline.HARDWARE.items():
        for mode in roofline.MODES:
            if hw.supports(mode):
                rows.append(
                    f"{name:<15} {mode:<6} {roofline.ridge(hw, mode):>6.0f} "
                    f"{roofline.crossover_batch(hw, 3, mode):>13.1f}"
                )
            else:
                rows.append(f"{name:<15} {mode:<6} {'not supported by this hardware':>21}")
    return "\n".join(rows)


def combine(runs: list[ProbeResult]) -> ProbeResult:
    """Per T, the median over the runs that reached it of their medians; spread spans those runs' IQRs."""
    tokens = sorted({t for r in runs for t in r.tokens})
    per_t = {
        t: [(r.measured_s[i], r.spread_s[i], r.n_samples[i]) for r in runs for i, tt in enumerate(r.tokens) if tt == t]
        for t in tokens
    }
    meas = [float(np.median([m for m, _, _ in per_t[t]])) for t in tokens]
    spread = [(min(s[0] for _, s, _ in per_t[t]), max(s[1] for _, s, _ in per_t[t])) for t in tokens]
    peak = float(np.median([r.peak_flops for r in runs]))
    bw = float(np.median([r.bandwidth for r in runs]))
    r0 = runs[0]
    act = r0.shape.act_elems_per_token * r0.weight_bytes
    model = linear_stack_time(r0.n_weights, tokens, r0.weight_bytes, peak, bw, act)
    knee, _ = fit_knee(tokens, meas)
    return replace(
        r0,
        tokens=tokens,
        measured_s=meas,
        spread_s=spread,
        n_samples=[sum(n for _, _, n in per_t[t]) for t in tokens],
        model_s=[float(x) for x in model],
        peak_flops=peak,
        bandwidth=bw,
        knee_measured=knee,
        knee_model=knee_tokens(peak, bw, r0.weight_bytes),
        knee_reached=knee < max(tokens),
        elapsed_s=sum(r.elapsed_s for r in runs),
    )


def html_to_png(html: Path, png: Path) -> bool:
    """Screenshot the figure in an HTML file with headless Chromium via Playwright; False if unavailable."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        print("no chromium: PNG skipped (the HTML has the figure)")
        return False
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, headless=True, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": 1000, "height": 600})
        page.goto(html.resolve().as_uri())
        page.wait_for_selector(".plotly-graph-div .main-svg")
        page.locator(".plotly-graph-div").first.screenshot(path=str(png))
        browser.close()
    return True


def main() -> None:
    ap = CliParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", choices=list(PROBE_SHAPES), default="Llama-3.2-1B, 1 layer")
    add_device(ap)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=512)
    ap.add_argument("--budget", type=float, default=None, help="seconds per run, about (default: the shape's)")
    add_threads(ap, default=None)  # a throughput probe: torch's own thread count unless told
    add_json(ap)
    ap.add_argument("--html", type=Path)
    ap.add_argument("--png", type=Path)
    args = parse(ap)
    try:  # the figure paths go through the same guard as --json, before any work
        for flag, path in (("--html", args.html), ("--png", args.png)):
            if path is not None:
                check_output_file(path, args.force, flag)
        if args.png is not None and args.html is None:
            check_output_file(args.png.with_suffix(".html"), args.force, "--png")
    except RefusedPath as exc:
        ap.error(str(exc))

    print("Roofline model, not a measurement (datasheet dense peaks):")
    print(seed_table(), "\n")
    runs = []
    for i in range(args.runs):
        res = run_to_end(
            probe(PROBE_SHAPES[args.shape], args.device, args.max_tokens, args.budget, threads=args.threads)
        )
        print(
            f"run {i + 1}/{args.runs}: {res.elapsed_s:.1f} s, matmul {res.peak_flops / 1e9:.1f} GFLOP/s, "
            f"copy {res.bandwidth / 1e9:.1f} GB/s, T up to {max(res.tokens)}"
        )
        runs.append(res)
    res = combine(runs)
    print(
        f"\nmeasured on {res.device}, {res.dtype}, {res.shape.name} ({res.n_weights / 1e6:.1f}M weights); "
        f"per T the median over the runs that reached it"
    )
    print(f"ceilings (median): matmul {res.peak_flops / 1e9:.1f} GFLOP/s, copy {res.bandwidth / 1e9:.1f} GB/s")
    print(f"{'T':>6} {'passes':>6} {'measured ms':>12} {'IQR span ms':>17} {'model ms':>10} {'meas/model':>11}")
    for t, n, m, (lo, hi), p in zip(res.tokens, res.n_samples, res.measured_s, res.spread_s, res.model_s):
        print(f"{t:>6} {n:>6} {m * 1e3:>12.3f} {lo * 1e3:>8.3f}-{hi * 1e3:<8.3f} {p * 1e3:>10.3f} {m / p:>11.2f}")
    seen = "inside" if res.knee_reached else "beyond"
    print(f"knee: measured {res.knee_measured:.1f} tokens ({seen} the range), model {res.knee_model:.1f} tokens")

    if args.json:
        report = {"combined": res.to_dict(), "runs": [r.to_dict() for r in runs]}
        print(f"wrote {write_report(args.json, report, 'bench/roofline_probe_bench.py', args.force)}")
    if args.html or args.png:
        from ui.roofline.figures import probe_figure

        html = args.html or args.png.with_suffix(".html")
        html.parent.mkdir(parents=True, exist_ok=True)
        fig = probe_figure(res)
        fig.update_layout(width=960, height=540)
        fig.write_html(html, include_plotlyjs=True, full_html=True)
        print(f"wrote {html}")
        if args.png and html_to_png(html, args.png):
            print(f"wrote {args.png}")


if __name__ == "__main__":
    main()
