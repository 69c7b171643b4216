"""How fast each page answers a control, in a real browser, against a minimal Streamlit app measured in the same run.

For every page: the warm open time (a new browser context on a warm server, until the app's script state is
notRunning with content drawn), the open drawn time (until no element waits for its lazily loaded code any more:
Plotly's, 4.7 MB, takes the floor about a second more; the page drawn and idle), both in a context with nothing
listening to it, the rerun time after one arrow-key step on each main slider (from the page's
keydown until the page's own websocket hands it the run's script_finished message, which returns the script
state to notRunning), and the drawn time of the same step (until the page, having received that message, has
drawn a frame and found idle time: what a person waits for before the charts show the new value). Each press
waits for an idle browser.

Step and drawn times are read on the page's own clock (performance.now(), by a script installed before the app
loads), not where Playwright's Python client hears of the frames: Chromium relays every websocket frame through
the DevTools protocol to Playwright's driver and on to Python, a delay a student's browser does not have, which
grows with the frames a step sends and with what the client does per frame (a driver that decoded every frame
saw script_finished up to 0.1 s after the page did). With this script's light handler the two clocks agree to
about 10 ms (the JSON keeps the relayed times, and the table their median). Most of a step's time after the
server has sent script_finished is the page itself, drawing the deltas that came before it (a server-side log:
sent 70-126 ms after the keydown on /proof's vocab step, handed to the page at 103-327 ms).
The floor is a minimal app of one slider and one Plotly chart, served the same way at the same time and measured
in turn with the pages, round by round (on a shared machine the load moves: so the ratio compares like with
like). Then N concurrent sessions open one page together and, once all are open, step a slider (p50/p95 of
their reruns; the opens together are reported apart).
Headless Debian Chromium through Playwright, as tests/conftest.py launches it; loopback only; bounded by
--repeats, --sessions and a per-wait timeout.

Every page with a slider is covered (Home has none): by default all of them; /interview opens its flashcards,
the part with its slider. /live's and /engines' sliders set a run's settings (nothing runs until a button).

Usage: .venv/bin/python bench/ui_latency.py [--pages algebra,roofline,proof,trees,live,engines,interview]
                                            [--repeats 5]
                                            [--sessions 8] [--concurrent-page algebra] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from harness.serving import CHROMIUM_ARGS, SETTLED_JS, STEP_PROBE_JS, streamlit_server, watch_runs

ROOT = Path(__file__).resolve().parents[1]

# page -> the main sliders a student moves first (setting names; the widget key is "<page>.<name>__slider")
CONTROLS = {
    "algebra": ["alpha", "gamma"],
    "roofline": ["alpha", "gamma"],
    "proof": ["vocab", "sseed"],
    "trees": ["vocab", "k"],
    "live": ["gamma", "temp"],
    "engines": ["gamma", "T"],
    "interview": ["card"],
}
# a page whose sliders live in one of its parts opens that part (the URL a shared link would carry)
PATHS = {"interview": "interview?part=Flashcards"}
MINIMAL_APP = '''import numpy as np
import plotly.graph_objects as go
import streamlit as st

x = st.slider("x", 0.0, 1.0, 0.5, 0.01, key="floor__slider")
t = np.linspace(0, 1, 101)
st.plotly_chart(go.Figure(go.Scatter(x=t, y=t ** (1 + 4 * x))), key="fig")
'''


# ---------------------------------------------------------------------------------------------- server ----
def rss_mb(pid: int) -> float:
    """Resident memory of a process, MB (Linux /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def load_average() -> str:
    """The 1/5/15-minute load averages, for the table's header."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# --------------------------------------------------------------------------------------------- browser ----
async def launch(pw):
    """Headless Debian Chromium, as tests/conftest.py launches it."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        raise SystemExit("chromium is not installed (apt-get install -y chromium)")
    return await pw.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)


async def settle(pg, timeout_ms: float, quiet_ms: int = 500) -> None:
    """Wait until the app is settled and stays so for quiet_ms (a follow-up rerun starts within it)."""
    for _ in range(20):
        await pg.wait_for_function(SETTLED_JS, timeout=timeout_ms)
        await pg.wait_for_timeout(quiet_ms)
        if await pg.evaluate(SETTLED_JS):
            return
    raise RuntimeError("the app kept rerunning")


async def open_time(browser, url: str, timeout_ms: float) -> tuple[float, object]:
    """Seconds from navigation to the first settled state in a new context that the step probe and
    watch_runs listen to (for the steps that follow); returns (seconds, (context, page))."""
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1000})
    await ctx.add_init_script(STEP_PROBE_JS)
    pg = await ctx.new_page()
    pg.finished = watch_runs(pg)
    start = time.perf_counter()
    await pg.goto(url)
    await pg.wait_for_selector('[data-testid="stApp"][data-test-connection-state="CONNECTED"]', timeout=timeout_ms)
    await pg.wait_for_function(SETTLED_JS, timeout=timeout_ms)
    seconds = time.perf_counter() - start
    await settle(pg, timeout_ms)
    return seconds, (ctx, pg)


# every element's component is loaded and drawn: Streamlit shows a skeleton in an element's place until its
# lazily loaded code (the slider's, Plotly's) has arrived and run; Plotly draws inside React's commit
NO_SKELETON_JS = """() =>
  document.querySelector('[data-testid="stSkeleton"], [data-testid="stAppSkeleton"]') === null"""


async def open_view(browser, url: str, timeout_ms: float) -> tuple[float, float]:
    """(seconds to the first settled state, seconds until every element is drawn and the page is idle) from
    navigation, in a new context with nothing listening: no init script, no websocket watcher. Playwright's
    client hears of every websocket frame of a watched page (watch_runs), decoding each one on this 2-core
    machine's CPU while the page renders: it cost an open of /trees 0.08 s (1.52x the floor against 1.39x,
    6 alternating opens each), and a student's browser pays nothing of the kind."""
    ctx = await browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        pg = await ctx.new_page()
        start = time.perf_counter()
        await pg.goto(url)
        await pg.wait_for_function(SETTLED_JS, timeout=timeout_ms, polling="raf")
        settled = time.perf_counter() - start
        await pg.wait_for_function(NO_SKELETON_JS, timeout=timeout_ms, polling="raf")
        await pg.evaluate(IDLE_JS)
        return settled, time.perf_counter() - start
    finally:
        await ctx.close()


async def away_from_bound(thumb, key: str) -> str:
    """The arrow key that moves the slider: a step left at its minimum (or right at its maximum) moves nothing,
    starts no run and would only time out (a fresh session opens every slider at its default, sseed at 0)."""
    now, lo, hi = await thumb.evaluate(  # an <input type=range> (Streamlit's slider) or an ARIA slider
        "e => e.type === 'range' ? [e.value, e.min, e.max] : "
        "['aria-valuenow', 'aria-valuemin', 'aria-valuemax'].map(a => e.getAttribute(a))")
    try:
        now_f, lo_f, hi_f = float(now), float(lo), float(hi)
    except (TypeError, ValueError):
        return key   # no values to read: keep the requested direction
    if key == "ArrowLeft" and now_f <= lo_f:
        return "ArrowRight"
    if key == "ArrowRight" and now_f >= hi_f:
        return "ArrowLeft"
    return key


# resolves once the browser's main thread has drawn a frame and then found idle time: everything the app sent
# so far is rendered (Plotly draws synchronously inside React's commit, KaTeX and the data grids likewise)
IDLE_JS = """() => new Promise(r => requestAnimationFrame(
  () => requestIdleCallback(() => r(true), {timeout: 30000})))"""


async def step_time(pg, slider_key: str, key: str, timeout_ms: float) -> tuple[float, str, float, float]:
    """(seconds from one arrow-key press on the slider to the end of the last run it starts, that run's
    script_finished status: a fragment rerun or a full one, seconds until the page had drawn the result, seconds
    until Playwright's client heard of that run's end), the first three on the page's own clock (STEP_PROBE_JS).

    The press waits for an idle browser, so a step never shares the CPU with the previous step's drawing."""
    css = f'.st-key-{slider_key.replace(".", "-")}'
    thumb = pg.locator(f'{css} [role="slider"], {css} input[type="range"]').first
    await thumb.focus(timeout=timeout_ms)
    key = await away_from_bound(thumb, key)
    await pg.evaluate(IDLE_JS)
    seen = len(pg.finished)
    keys, fins = await pg.evaluate("() => [window.__stepProbe.key.length, window.__stepProbe.fin.length]")
    t0 = time.perf_counter()
    await pg.keyboard.press(key)
    deadline = t0 + timeout_ms / 1000
    while len(pg.finished) == seen:
        if time.perf_counter() > deadline:
            raise TimeoutError(f"no rerun ended within {timeout_ms / 1000:.0f} s of a step on {slider_key}")
        await asyncio.sleep(0.01)
    await settle(pg, timeout_ms, quiet_ms=300)   # a follow-up rerun (URL write-back, a queued step) counts too
    end, status = pg.finished[-1]
    probe = await pg.wait_for_function(
        f"""() => {{ const p = window.__stepProbe;
             return p.key.length > {keys} && p.fin.length > {fins} && p.drawn[p.drawn.length - 1] !== null
                    && [p.key[{keys}], p.fin[p.fin.length - 1], p.drawn[p.drawn.length - 1]]; }}""",
        timeout=timeout_ms)
    pressed, finished, drawn = await probe.json_value()
    return (finished - pressed) / 1000, status, (drawn - pressed) / 1000, end - t0


async def slider_range(pg, slider_key: str, timeout_ms: float) -> tuple[float, float, float, float] | None:
    """(value, min, max, step) of a Streamlit slider's <input type=range>; None where it has none."""
    css = f'.st-key-{slider_key.replace(".", "-")}'
    thumb = pg.locator(f'{css} input[type="range"]').first
    try:
        got = await thumb.evaluate("e => [e.value, e.min, e.max, e.step]", timeout=timeout_ms)
        return tuple(float(x) for x in got)
    except Exception:  # no range input (an ARIA slider): keep the default start
        return None


def fresh_start(rng: tuple[float, float, float, float] | None, i: int) -> float | None:
    """Round i's start value: 2 i steps from the default, wrapped inside the range. A step from it lands on a
    value no earlier round opened or stepped to, so st.cache_data on the server cannot answer it from a
    previous round (a student moving a slider meets new values too)."""
    if rng is None or i == 0:
        return None
    value, lo, hi, step = rng
    n = int(round((hi - lo) / step)) if step > 0 else 0
    if n < 2:
        return None
    k = (int(round((value - lo) / step)) + 2 * i) % (n + 1)
    return lo + k * step


async def page_samples(browser, url: str, path: str, sliders: list[str], rounds: range, timeout_ms: float,
                       into: dict | None = None) -> dict:
    """Open `path` twice per round (round i at fresh_start values, through the URL the sliders are bound to):
    once unwatched for the open times (open_view), then watched, to step each slider once to the right (left at
    the top bound); appends to `into`: open times, step times, drawn times, run kinds."""
    into = into or {"open": [], "open_drawn": [], "open_watched": [], "steps": {s: [] for s in sliders},
                    "kinds": {s: [] for s in sliders}, "drawn": {s: [] for s in sliders},
                    "relayed": {s: [] for s in sliders}, "ranges": {}}
    for i in rounds:
        query = []
        for s in sliders:
            start = fresh_start(into["ranges"].get(s), i)
            if start is not None:
                name = s.split(".", 1)[-1].removesuffix("__slider")
                query.append(f"{name}={int(start) if float(start).is_integer() else round(start, 6)}")
        view = f"{url}/{path}" + (("&" if "?" in path else "?") + "&".join(query) if query else "")
        settled, drawn_open = await open_view(browser, view, timeout_ms)
        into["open"].append(settled)
        into["open_drawn"].append(drawn_open)
        watched, (ctx, pg) = await open_time(browser, view, timeout_ms)     # the steps' page
        into["open_watched"].append(watched)
        for s in sliders:
            if s not in into["ranges"]:
                into["ranges"][s] = await slider_range(pg, s, timeout_ms)
            dt, status, drawn, relayed = await step_time(pg, s, "ArrowRight", timeout_ms)
            into["steps"][s].append(dt)
            into["drawn"][s].append(drawn)
            into["relayed"][s].append(relayed)
            into["kinds"][s].append("fragment" if status == "FINISHED_FRAGMENT_RUN_SUCCESSFULLY" else "full")
        await ctx.close()
    return into


def page_row(samples: dict) -> dict:
    """Median/min/max of the open time and of each slider's step time on one page."""
    steps, kinds = samples["steps"], samples["kinds"]
    all_steps = [x for v in steps.values() for x in v]
    return {"open": summary(samples["open"]), "open_drawn": summary(samples["open_drawn"]),
            "open_watched": summary(samples["open_watched"]), "step": summary(all_steps),
            "drawn": summary([x for v in samples["drawn"].values() for x in v]),
            "relayed": summary([x for v in samples["relayed"].values() for x in v]),
            "by_control": {s: {**summary(v), "runs": runs(kinds[s])} for s, v in steps.items()}}


async def concurrent(browser, url: str, path: str, slider: str, sessions: int, steps: int,
                     timeout_ms: float) -> dict:
    """`sessions` contexts open `path` together, then, once all are open, step one slider `steps` times each.

    The steps wait for every open: the browser runs on the server's CPUs here, and a step taken while seven other
    tabs still draw their first page times those tabs' drawing (a student's browser is on the student's machine).
    The opens are timed too, together, and reported apart."""
    barrier = asyncio.Barrier(sessions)

    async def one(i: int) -> tuple[float | None, list[float], str | None]:
        try:
            t_open, (ctx, pg) = await open_time(browser, f"{url}/{path}", timeout_ms)
        except Exception as exc:  # a page that failed to open is counted, not fatal
            await barrier.abort()
            return None, [], f"{type(exc).__name__}: {str(exc)[:80]}"
        out = []
        try:
            await barrier.wait()
            for j in range(steps):
                dt, _, _, _ = await step_time(pg, slider, "ArrowRight" if j % 2 == 0 else "ArrowLeft", timeout_ms)
                out.append(dt)
        except Exception as exc:
            return t_open, out, f"{type(exc).__name__}: {str(exc)[:80]}"
        finally:
            await ctx.close()
        return t_open, out, None

    results = await asyncio.gather(*(one(i) for i in range(sessions)))
    reruns = [x for _, r, _ in results for x in r]
    opens = [t for t, _, _ in results if t is not None]
    return {"sessions": sessions, "steps": steps, "page": path, "slider": slider, **percentiles(reruns),
            "open": {**percentiles(opens), "max": max(opens, default=float("nan"))},
            "by_session": [r for _, r, _ in results],
            "failed": [e for _, _, e in results if e]}


# ------------------------------------------------------------------------------------------- numbers ----
def summary(xs: list[float]) -> dict:
    """Median, min, max and count of a list of seconds."""
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}


def runs(kinds: list[str]) -> str:
    """How the steps' last runs ended, e.g. "5 fragment" or "3 full, 2 fragment"."""
    return ", ".join(f"{kinds.count(k)} {k}" for k in sorted(set(kinds)))


def percentiles(xs: list[float]) -> dict:
    """p50 and p95 (nearest rank) of a list of seconds; NaN when empty."""
    if not xs:
        return {"p50": float("nan"), "p95": float("nan"), "n": 0}
    s = sorted(xs)
    return {"p50": statistics.median(s), "p95": s[min(len(s) - 1, int(round(0.95 * len(s) + 0.5)) - 1)], "n": len(s)}


def table(rows: dict, floor: dict) -> str:
    """The printed table: open and step medians (min-max) and their ratio to the floor."""
    lines = ["| page | open s (min-max) | x floor | open drawn s (min-max) | x floor | step s (min-max) | x floor "
             "| drawn s (min-max) | x floor | relayed step s | x floor |", "|---" * 11 + "|"]

    def cell(r: dict, f: dict, what: str, digits: int) -> str:
        x = r[what]
        return (f"{x['median']:.2f} ({x['min']:.2f}-{x['max']:.2f}) | "
                f"{x['median'] / f[what]['median']:.{digits}f}")

    for name, r in {"minimal app": floor, **rows}.items():
        lines.append(f"| {name} | {cell(r, floor, 'open', 2)} | {cell(r, floor, 'open_drawn', 2)} | "
                     f"{cell(r, floor, 'step', 1)} | {cell(r, floor, 'drawn', 1)} | "
                     f"{r['relayed']['median']:.2f} | {r['relayed']['median'] / floor['relayed']['median']:.1f} |")
    lines.append("\nopen in the steps' watched context (x floor, the same way): " + ", ".join(
        f"{name} {r['open_watched']['median'] / floor['open_watched']['median']:.2f}" for name, r in rows.items()))
    lines += ["", "| page | control | step s (min-max) | x floor | reruns |", "|---|---|---|---|---|"]
    for name, r in rows.items():
        for control, c in r["by_control"].items():
            lines.append(f"| {name} | {control.split('.')[-1].removesuffix('__slider')} | {c['median']:.2f} "
                         f"({c['min']:.2f}-{c['max']:.2f}) | {c['median'] / floor['step']['median']:.1f} | "
                         f"{c['runs']} |")
    return "\n".join(lines)


async def run(args) -> dict:
    from playwright.async_api import async_playwright

    pages = [p for p in args.pages.split(",") if p]
    tmp = Path(tempfile.mkdtemp(prefix="ui_latency_"))
    (tmp / "floor.py").write_text(MINIMAL_APP)
    timeout_ms = args.timeout * 1000
    out = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
           "load_before": load_average(), "repeats": args.repeats}
    try:
        async with async_playwright() as pw:
            browser = await launch(pw)
            # both servers at once, measured round by round (the floor, then each page), so that a shared
            # machine's changing load falls on the floor and the pages alike and their ratio means something
            with streamlit_server(tmp / "floor.py", tmp / "floor.log") as (floor_url, _), \
                    streamlit_server(ROOT / "app.py", tmp / "app.log") as (url, proc):
                await (await open_time(browser, floor_url, timeout_ms))[1][0].close()  # warm the server
                for p in pages:
                    await (await open_time(browser, f"{url}/{PATHS.get(p, p)}", timeout_ms))[1][0].close()  # warm
                floor, samples, failed = None, {}, {}
                for i in range(args.repeats):
                    floor = await page_samples(browser, floor_url, "", ["floor__slider"], range(i, i + 1),
                                               timeout_ms, floor)
                    for p in pages:
                        if p in failed:
                            continue
                        sliders = [f"{p}.{c}__slider" for c in CONTROLS[p]]
                        try:
                            samples[p] = await page_samples(browser, url, PATHS.get(p, p), sliders, range(i, i + 1),
                                                            timeout_ms, samples.get(p))
                        except Exception as exc:  # one page's failure is reported; the others are still measured
                            failed[p] = f"{type(exc).__name__}: {str(exc)[:160]}"
                            print(f"/{p}: FAILED {failed[p]}", flush=True)
                    print(f"round {i + 1}/{args.repeats} done (load {load_average()})", flush=True)
                out["floor"] = page_row(floor)
                rows = {f"/{p}": page_row(v) for p, v in samples.items() if p not in failed}
                out["pages"] = rows
                if args.sessions > 0:
                    cp = args.concurrent_page
                    out["concurrent"] = await concurrent(browser, url, PATHS.get(cp, cp),
                                                         f"{cp}.{CONTROLS[cp][0]}__slider", args.sessions,
                                                         args.steps, timeout_ms)
                out["server_rss_mb"] = rss_mb(proc.pid)
            await browser.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out["load_after"] = load_average()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", default=",".join(CONTROLS), help="comma-separated, from " + ", ".join(CONTROLS))
    ap.add_argument("--repeats", type=int, default=5, help="opens per page (each steps every main slider once)")
    ap.add_argument("--sessions", type=int, default=8, help="concurrent sessions (0: skip)")
    ap.add_argument("--steps", type=int, default=5, help="slider steps per concurrent session")
    ap.add_argument("--concurrent-page", default="algebra", choices=list(CONTROLS))
    ap.add_argument("--timeout", type=float, default=120, help="seconds any one wait may take")
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--force", action="store_true", help="replace an existing --json file that is not our report")
    args = ap.parse_args()
    if not 1 <= args.repeats <= 50 or not 0 <= args.sessions <= 32 or not 1 <= args.steps <= 20:
        raise SystemExit("--repeats 1..50, --sessions 0..32, --steps 1..20")
    if args.json:
        from gpu_demo.reports import RefusedPath, check_report_path
        try:
            check_report_path(args.json, args.force)
        except RefusedPath as exc:
            raise SystemExit(f"ui_latency: {exc}") from None
    out = asyncio.run(run(args))
    print(f"\nload average before {out['load_before']}, after {out['load_after']}; {out['cpus']} CPUs")
    print(table(out["pages"], out["floor"]))
    if "concurrent" in out:
        c = out["concurrent"]
        print(f"\n{c['sessions']} concurrent sessions on /{c['page']}, {c['steps']} steps each: rerun p50 "
              f"{c['p50']:.2f} s, p95 {c['p95']:.2f} s over {c['n']} (after all {c['sessions']} had opened; their "
              f"opens together: p50 {c['open']['p50']:.2f} s, slowest {c['open']['max']:.2f} s); failed: "
              f"{len(c['failed'])}; server RSS {out['server_rss_mb']:.0f} MB")
    if args.json:
        from gpu_demo.reports import write_report
        print(f"wrote {write_report(args.json, out, 'bench/ui_latency.py', args.force)}")


if __name__ == "__main__":
    main()
