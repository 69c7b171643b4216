"""Presenter mode at a projector's 1280x720: screenshots of pages with and without ?present=1, and what fits.

For each page and mode: a viewport screenshot (what a class sees before anyone scrolls) under
artifacts/presenter/<page>-<off|on>.png, and a table of computed sizes and of what lies above the fold: the body
text and first tick label (px), the title, how many charts and metrics are wholly visible, and the top of the first
chart. Headless Debian Chromium as tests/conftest.py launches it, on a `streamlit run` of this checkout.

Usage: .venv/bin/python bench/presenter_shots.py [--pages algebra,roofline,trees] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

import ui_latency  # bench/ui_latency.py: the browser and the settle wait

from harness.serving import streamlit_server  # the one server starter

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "artifacts" / "presenter"
PAGES = ["", "algebra", "roofline", "proof", "trees", "live", "engines", "interview"]
VIEW = {"width": 1280, "height": 720}
STYLE_JS = "() => [...document.querySelectorAll('style')].some(s => s.textContent.includes('1.35rem'))"
MEASURE_JS = """() => {
  const H = window.innerHeight, main = '[data-testid="stMain"] ';
  const px = e => e ? parseFloat(getComputedStyle(e).fontSize) : null;
  const skip = '[data-testid="stMetricLabel"], [data-testid="stWidgetLabel"], [data-testid="stCaptionContainer"]';
  const body = [...document.querySelectorAll(main + '[data-testid="stMarkdownContainer"] p')]
    .find(e => !e.closest(skip) && e.textContent.trim().length > 40);
  const within = sel => [...document.querySelectorAll(main + sel)].filter(e => {
    const r = e.getBoundingClientRect(); return r.height > 0 && r.top >= 0 && r.bottom <= H; }).length;
  const chart = document.querySelector(main + '.js-plotly-plot');
  return {
    body_px: px(body), tick_px: px(document.querySelector(main + '.js-plotly-plot .xtick text')),
    h1_px: px(document.querySelector(main + 'h1')),
    charts_visible: within('.js-plotly-plot'), charts: document.querySelectorAll(main + '.js-plotly-plot').length,
    metrics_visible: within('[data-testid="stMetric"]'),
    first_chart_top: chart ? Math.round(chart.getBoundingClientRect().top) : null,
    sidebar_open: document.querySelector('[data-testid="stSidebar"]')?.getAttribute('data-collapsed') === 'false',
  };
}"""


async def shot(browser, url: str, path: str, on: bool, timeout_ms: float) -> dict:
    """Open one page in a fresh context at 1280x720, wait for it (and its style), measure, screenshot."""
    ctx = await browser.new_context(viewport=VIEW)
    pg = await ctx.new_page()
    try:
        await pg.goto(f"{url}/{path}" + ("?present=1" if on else ""))
        await pg.wait_for_selector('[data-testid="stApp"][data-test-connection-state="CONNECTED"]', timeout=timeout_ms)
        await ui_latency.settle(pg, timeout_ms)
        if on:
            await pg.wait_for_function(STYLE_JS, timeout=timeout_ms)
        await pg.wait_for_timeout(1500)                  # Plotly draws its charts after the script run settles
        row = await pg.evaluate(MEASURE_JS)
        name = f"{path or 'home'}-{'on' if on else 'off'}"
        await pg.screenshot(path=str(OUT / f"{name}.png"))
        return {"page": path or "home", "mode": "presenter" if on else "normal", **row, "png": f"{name}.png"}
    finally:
        await ctx.close()


def table(rows: list[dict]) -> str:
    """The rows as a fixed-width table."""
    cols = ["page", "mode", "body_px", "tick_px", "h1_px", "charts_visible", "charts", "metrics_visible",
            "first_chart_top", "sidebar_open"]
    head = " ".join(f"{c:>15}" for c in cols)
    return "\n".join([head] + [" ".join(f"{str(r.get(c)):>15}" for c in cols) for r in rows])


async def run(pages: list[str], timeout_ms: float) -> list[dict]:
    from playwright.async_api import async_playwright

    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, \
            streamlit_server(ROOT / "app.py", Path(tmp) / "streamlit.log") as (url, _):
        async with async_playwright() as pw:
            browser = await ui_latency.launch(pw)
            try:
                return [await shot(browser, url, p, on, timeout_ms) for p in pages for on in (False, True)]
            finally:
                await browser.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", default="algebra,roofline,trees",
                    help="comma-separated, from " + ", ".join(p or "home" for p in PAGES))
    ap.add_argument("--timeout", type=float, default=120, help="seconds any one wait may take")
    ap.add_argument("--json", type=Path, help="write the table here")
    ap.add_argument("--force", action="store_true", help="replace an existing --json file that is not our report")
    args = ap.parse_args()
    pages = ["" if p == "home" else p for p in args.pages.split(",")]
    bad = [p for p in pages if p not in PAGES]
    if bad:
        raise SystemExit(f"presenter_shots: unknown page(s) {', '.join(bad)}")
    if args.json:
        from gpu_demo.reports import RefusedPath, check_report_path
        try:
            check_report_path(args.json, args.force)
        except RefusedPath as exc:
            raise SystemExit(f"presenter_shots: {exc}") from None
    rows = asyncio.run(run(pages, args.timeout * 1000))
    print(f"1280x720, screenshots in {OUT.relative_to(ROOT)}/")
    print(table(rows))
    if args.json:
        from gpu_demo.reports import write_report
        print(f"wrote {write_report(args.json, {'rows': rows}, 'bench/presenter_shots.py', args.force)}")


if __name__ == "__main__":
    main()
