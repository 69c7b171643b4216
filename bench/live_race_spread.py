"""How steady is the live page's race? Its median of R interleaved repeats against single runs, on this machine.

Drives the live page's own runner (gpu_demo.live.runner.run_race, the same code path and events as the page) on a
pair loaded and warmed up as the page loads it. Per round of the experiment: one race with R repeats, then
R single runs (R = 1, the settings' seed: what pressing Run on the old page gave), so drift hits both. Prints
the spread (max - min and the standard deviation, as shares of the median) of the measured and predicted
speedup, c, v and tokens/s across the single runs and across the races' medians; "shrink" is the single
runs' relative standard deviation over the race medians'.

    .venv/bin/python bench/live_race_spread.py                     # page defaults: 100 tokens, gamma 4, T = 1
    .venv/bin/python bench/live_race_spread.py --max-new-tokens 200 --races 6 --json artifacts/live_race_spread.json
    .venv/bin/python bench/live_race_spread.py --quick --races 2 --json bench/live_quick_demo.json   # the quick demo

--quick runs the page's quick demo as its button sets it (pair, preset, greedy, gamma, tokens, repeats).
"""

from __future__ import annotations

import dataclasses
import statistics
import sys

from gpu_demo import pairs
from gpu_demo.flags import CliParser, add_device, add_gamma, add_json, add_max_new_tokens, parse
from gpu_demo.live import runner
from gpu_demo.live.prompts import PRESETS, preset_text
from gpu_demo.live.queue import TurnQueue
from gpu_demo.reports import write_report
from specdec_core.repeats import spread, summarise_repeats
from ui.live import panel
from ui.live.controls import quick_pair, quick_settings

QUANTITIES = ("measured_speedup", "predicted_speedup", "c", "v", "spec_tokens_per_s")
SUMMARY = {"measured_speedup": "measured", "predicted_speedup": "predicted", "c": "c", "v": "v",
           "spec_tokens_per_s": "spec_tokens_per_s"}


def race(sp: runner.SharedPair, s: runner.Settings) -> runner.RunRecord:
    """One race as the page runs it (no redraws)."""
    rec = runner.RunRecord(s, sp.device, runner.validate(sp, s))
    return runner.run_race(sp, rec, lambda _: None, lambda _: None, lambda _: None)


def row(name: str, values: list[float]) -> dict:
    """min, max, median, (max - min) / median and the sample standard deviation / median of values."""
    sp = spread(values)
    sd = statistics.stdev(values) / sp.median if len(values) > 1 else float("nan")
    return {"what": name, "n": sp.n, "median": sp.median, "min": sp.lo, "max": sp.hi, "relative": sp.relative(),
            "rel_sd": sd}


def main(argv: list[str] | None = None) -> int:
    ap = CliParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pair", default="builtin")
    add_device(ap)
    add_max_new_tokens(ap, 100, "--max-new")
    add_gamma(ap, "4", single=True)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--races", type=int, default=6)
    ap.add_argument("--preset", choices=tuple(PRESETS), default="open-ended")
    ap.add_argument("--greedy", action="store_true", help="temperature 0 (default T = 1)")
    ap.add_argument("--quick", action="store_true", help="the quick demo's pair and settings (overrides the rest)")
    add_json(ap)
    args = parse(ap, argv)
    if args.quick:
        args.pair = quick_pair(args.device) or "builtin"
        q = quick_settings(args.pair)
        args.preset, args.greedy, args.gamma, args.max_new_tokens, args.repeats = (
            q["preset"], q["greedy"], q["gamma"], q["maxnew"], q["repeats"])
    pair = pairs.load_pair(args.pair, args.device)
    pairs.warm_up(pair)
    sp = runner.SharedPair(args.pair, args.device, pair, None, 0.0, TurnQueue())
    prompt = preset_text(args.preset, pairs.PAIRS[args.pair].chat)
    s = runner.Settings(pair=args.pair, device=args.device, prompt=prompt, gamma=args.gamma, greedy=args.greedy,
                    temperature=1.0, top_k=0, top_p=1.0, draft_apart=False, d_temperature=1.0, d_top_k=0,
                    d_top_p=1.0, max_new=args.max_new_tokens, seed=0, repeats=args.repeats)
    races, singles = [], []
    for _ in range(args.races):
        rec = race(sp, s)
        races.append(summarise_repeats(panel.race_runs(rec)))
        for _ in range(args.repeats):
            singles.append(panel.measure_record(race(sp, dataclasses.replace(s, repeats=1))))
    rows = []
    for q in QUANTITIES:  # shrink: relative standard deviation of single runs over that of race medians
        single = row(f"{q}, single runs", [getattr(m, q) for m in singles])
        med = row(f"{q}, race medians", [getattr(r, SUMMARY[q]).median for r in races])
        med["shrink"] = single["rel_sd"] / med["rel_sd"] if med["rel_sd"] > 0 else float("inf")
        rows += [single, med]
    per_race = [{"measured": dataclasses.asdict(r.measured), "predicted": dataclasses.asdict(r.predicted),
                 "ratio": dataclasses.asdict(r.ratio), "rounds_min": r.rounds.lo, "c": dataclasses.asdict(r.c),
                 "v": dataclasses.asdict(r.v)} for r in races]
    print(f"pair {args.pair} on {args.device}, batch 1, preset {args.preset}, up to {args.max_new_tokens} tokens, "
          f"gamma {args.gamma}, {'greedy' if args.greedy else 'T = 1'}, "
          f"{args.races} races of {args.repeats} interleaved repeats and {len(singles)} single runs")
    for i, r in enumerate(races, 1):
        print(
            f"race {i}: measured {panel.fmt_spread(r.measured, 2, 'x')}, "
            f"predicted {panel.fmt_spread(r.predicted, 2, 'x')}"
            f", c {panel.fmt_spread(r.c, 3)}, v {panel.fmt_spread(r.v, 2)}, measured/predicted "
            f"{panel.fmt_spread(r.ratio, 2)}, shortest repeat {r.rounds.lo:.0f} rounds"
        )
    print(f"{'':36} {'n':>2} {'median':>8} {'min':>8} {'max':>8} {'(max-min)/med':>14} {'sd/med':>7} {'shrink':>7}")
    for r in rows:
        shrink = f"{r['shrink']:.1f}x" if "shrink" in r else ""
        print(
            f"{r['what']:36} {r['n']:>2} {r['median']:>8.3f} {r['min']:>8.3f} {r['max']:>8.3f} "
            f"{r['relative']:>14.0%} {r['rel_sd']:>7.0%} {shrink:>7}"
        )
    print(f"single runs' measured speedups: {', '.join(f'{m.measured_speedup:.2f}' for m in singles)}")
    if args.json:
        report = {
            "args": vars(args),
            "rows": rows,
            "races": per_race,
            "singles": [m.measured_speedup for m in singles],
            "median_single": statistics.median(m.measured_speedup for m in singles),
        }
        print(f"wrote {write_report(args.json, report, 'bench/live_race_spread.py', args.force)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
