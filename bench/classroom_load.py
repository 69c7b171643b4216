"""A classroom on one server: N browser sessions move the algebra page's slider, and 4 press Run on /live at once.

Part 1, for each N in --sessions (default 4, 8, 16): N Playwright contexts open /algebra together and each steps
the alpha slider 5 times; prints p50/p95 of the reruns (from the key press to the server's script_finished
message, bench/ui_latency.py's clock), the pages that failed to open or stalled, and the server's RSS after.
Part 2: --live sessions (default 4) each run the built-in pair on /live with its own seed, first alone (the solo
text), then all pressing Run at once: each session's queue wait (click until its first token is on screen), its
total time, and whether its text equals its solo run (one shared model, used under a lock, must not mix them).
Loopback only; every wait is bounded by --timeout-s, and the whole run by the counts given.

Usage: .venv/bin/python bench/classroom_load.py [--sessions 4,8,16] [--live 4] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import ui_latency  # bench/ui_latency.py: the server, the browser and the rerun clock

from gpu_demo.reports import RefusedPath, check_report_path, write_report

LIVE_QUERY = "pair=builtin&maxnew=40&gamma=3&repeats=1&seed={seed}"
TOKENS = ".live-tokens"


async def live_run(browser, url: str, seed: int, start: asyncio.Event | None, timeout_ms: float) -> dict:
    """Open /live with this seed, wait for `start` (if any), press Run; time to the first token and to the end."""
    _, (ctx, pg) = await ui_latency.open_time(browser, f"{url}/live?{LIVE_QUERY.format(seed=seed)}", timeout_ms)
    try:
        if start is not None:
            await start.wait()
        t0 = time.perf_counter()
        await pg.locator(".st-key-run_btn button").first.click()
        await pg.locator(TOKENS).first.wait_for(timeout=timeout_ms)
        first = time.perf_counter() - t0
        await pg.get_by_text("Predicted", exact=False).first.wait_for(timeout=timeout_ms)
        await ui_latency.settle(pg, timeout_ms)
        text = await pg.locator(TOKENS).first.inner_text()
        return {"seed": seed, "queue_wait_s": first, "total_s": time.perf_counter() - t0, "text": text}
    finally:
        await ctx.close()


async def live_part(browser, url: str, n: int, timeout_ms: float) -> dict:
    """Solo runs, then n sessions pressing Run at once; each one's wait and whether its text is its solo text."""
    solo = {s: (await live_run(browser, url, s, None, timeout_ms))["text"] for s in range(1, n + 1)}
    start = asyncio.Event()
    tasks = [asyncio.create_task(live_run(browser, url, s, start, timeout_ms)) for s in range(1, n + 1)]
    await asyncio.sleep(min(30.0, n * 8.0))  # let every page open, then ring the bell for all at once
    start.set()
    done = await asyncio.gather(*tasks, return_exceptions=True)
    rows = []
    for s, r in zip(range(1, n + 1), done):
        if isinstance(r, BaseException):
            rows.append({"seed": s, "error": f"{type(r).__name__}: {str(r)[:100]}"})
        else:
            rows.append({k: v for k, v in r.items() if k != "text"} | {"same_as_solo": r["text"] == solo[s]})
    return {"sessions": n, "rows": rows}


def print_tables(report: dict) -> None:
    """The algebra table, then the live table."""
    print(f"load average at start: {report['load_start']}; at end: {report['load_end']}")
    print(f"{'sessions':>8} {'reruns':>7} {'p50 s':>7} {'p95 s':>7} {'failed':>7} {'RSS MB':>7}")
    for r in report["algebra"]:
        print(f"{r['sessions']:>8} {r['n']:>7} {r['p50']:>7.2f} {r['p95']:>7.2f} {len(r['failed']):>7} "
              f"{r['rss_mb']:>7.0f}")
    live = report.get("live")
    if live:
        print(f"\n/live, {live['sessions']} sessions pressing Run at once (built-in pair, 40 tokens each):")
        print(f"{'seed':>5} {'queue wait s':>13} {'total s':>8} {'text = solo':>12}")
        for r in live["rows"]:
            if "error" in r:
                print(f"{r['seed']:>5} {r['error']}")
            else:
                print(f"{r['seed']:>5} {r['queue_wait_s']:>13.2f} {r['total_s']:>8.2f} {str(r['same_as_solo']):>12}")


async def run(args) -> dict:
    from playwright.async_api import async_playwright

    report: dict = {"load_start": ui_latency.load_average(), "algebra": []}
    with tempfile.TemporaryDirectory() as tmp, \
            ui_latency.streamlit_server(ui_latency.ROOT / "app.py", Path(tmp) / "app.log") as (url, proc):
        async with async_playwright() as pw:
            browser = await ui_latency.launch(pw)
            timeout_ms = args.timeout_s * 1000
            await ui_latency.open_time(browser, f"{url}/algebra", timeout_ms)  # warm the server once
            for n in args.sessions:
                r = await ui_latency.concurrent(browser, url, "algebra", "algebra.alpha__slider", n, 5, timeout_ms)
                report["algebra"].append(r | {"rss_mb": ui_latency.rss_mb(proc.pid)})
            if args.live:
                report["live"] = await live_part(browser, url, args.live, timeout_ms)
            report["rss_mb_end"] = ui_latency.rss_mb(proc.pid)
            await browser.close()
    report["load_end"] = ui_latency.load_average()
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=lambda s: [int(x) for x in s.split(",") if x], default=[4, 8, 16])
    ap.add_argument("--live", type=int, default=4, help="sessions pressing Run on /live at once (0: skip)")
    ap.add_argument("--timeout-s", type=float, default=180.0, help="the longest any one wait may take")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--force", action="store_true", help="replace an existing --json file that is not our report")
    args = ap.parse_args()
    if any(n < 1 or n > 32 for n in args.sessions) or not 0 <= args.live <= 8:
        sys.exit("classroom_load: sessions from 1 to 32, live from 0 to 8")
    try:
        if args.json:
            check_report_path(args.json, args.force)
    except RefusedPath as exc:
        sys.exit(f"classroom_load: {exc}")
    report = asyncio.run(run(args))
    print_tables(report)
    if args.json:
        print(f"wrote {write_report(args.json, report, 'bench/classroom_load.py', args.force)}")


if __name__ == "__main__":
    main()
