"""Real browser: a chart sent as ui.chart_wire's spec renders exactly as the templated figure it came from, and
Plotly draws it once as it mounts, where a chart sent the usual way is drawn twice."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import plotly
import plotly.io
import pytest
from browser_helpers import nudge_slider, open_page, wait_for_app

from harness.serving import streamlit_server
from ui import chart_wire, figure_cache, presenter

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"   # the plotly package's own copy

# a figure's full layout and traces once Plotly has applied defaults and the template: what it draws from
FULL_JS = """async spec => {
  const gd = document.getElementById('g'); Plotly.purge(gd);
  await Plotly.newPlot(gd, spec.data, spec.layout, {});
  const clean = o => { if (ArrayBuffer.isView(o)) return Array.from(o);
    if (o === null || typeof o !== 'object') return o; if (Array.isArray(o)) return o.map(clean);
    const r = {}; for (const k of Object.keys(o).sort()) {
      if (k[0] === '_' || typeof o[k] === 'function' || ['template', 'datarevision', 'uid'].includes(k)) continue;
      r[k] = clean(o[k]); } return r; };
  return JSON.stringify({layout: clean(gd._fullLayout), data: gd._fullData.map(clean)});
}"""

# per chart: how many distinct calcdata arrays its plots produced (Plotly.react that replots computes a new one;
# one that finds nothing changed keeps it) and how many plot events it had
PLOTS_JS = """
window.__plots = [];
new MutationObserver(ms => { for (const m of ms) { const gd = m.target;
  if (!(gd instanceof Element) || !gd.classList.contains('js-plotly-plot') || gd.__rec) continue;
  const box = gd.closest('[class*="st-key-"]'); const rec = {key: box ? box.className : '', calc: [], plots: 0};
  gd.__rec = rec; window.__plots.push(rec);
  gd.on('plotly_afterplot', () => { rec.plots++; if (!rec.calc.includes(gd.calcdata)) rec.calc.push(gd.calcdata); });
} }).observe(document, {subtree: true, attributes: true, attributeFilter: ['class']});
"""
ORDER_JS = """() => [...document.querySelectorAll('.st-key-usual, .st-key-wired, [data-testid="stMarkdown"]')]
  .map(e => e.className.match(/st-key-(\\w+)/)?.[1] ?? 'text')"""
DRAWS_JS = "() => window.__plots.map(r => [r.key.match(/st-key-(\\S+)/)?.[1] ?? '', r.calc.length, r.plots])"


def _diff(a, b, path: str = "") -> list[str]:
    """Where two JSON values differ, as paths (the first few)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in _diff(a.get(k, "<absent>"), b.get(k, "<absent>"),
                                                                    f"{path}.{k}")][:8]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _diff(x, y, f"{path}[{i}]")][:8]
    return [] if a == b else [f"{path}: {str(a)[:60]} != {str(b)[:60]}"]


def _pairs(app_test, monkeypatch) -> list[tuple[dict, dict]]:
    """(figure as Plotly would get it with its template, the wire spec sent) for every chart of the main pages."""
    seen: list[tuple[dict, dict]] = []

    def record(fig):
        spec = chart_wire.wire_spec(fig)
        seen.append((json.loads(plotly.io.to_json(fig, validate=False)), json.loads(json.dumps(spec))))
        return spec

    monkeypatch.setattr(presenter, "wire_spec", record)           # figures sent as they are built
    monkeypatch.setattr(figure_cache, "wire_spec", record)        # figures cached as their wire spec
    figure_cache._figure_dict.clear()
    for page in ("views/algebra.py", "views/roofline.py", "views/proof.py", "views/trees.py"):
        app_test(page)
    return seen


def test_the_wire_spec_renders_as_the_templated_figure(browser, app_test, monkeypatch):
    pairs = _pairs(app_test, monkeypatch)
    assert len(pairs) >= 15
    pg = browser.new_page(viewport={"width": 900, "height": 700})
    try:
        pg.set_content("<div id='g' style='width:600px;height:450px'></div>")
        pg.add_script_tag(path=str(PLOTLY_JS))
        for templated, wired in pairs:
            drawn = [json.loads(pg.evaluate(FULL_JS, s)) for s in (wired, templated)]
            assert not _diff(*drawn), (templated["layout"].get("title"), _diff(*drawn))
        # negative control: the same bake without the template's trace defaults (a bar's white outline) differs
        templated = next(t for t, _ in pairs if t["data"][0].get("type") == "bar")
        no_trace_defaults = json.loads(json.dumps(templated))
        no_trace_defaults["layout"]["template"].pop("data")
        wrong = chart_wire.wire_spec(no_trace_defaults)
        assert _diff(json.loads(pg.evaluate(FULL_JS, wrong)), json.loads(pg.evaluate(FULL_JS, templated)))
    finally:
        pg.close()


def test_a_chart_is_drawn_once_and_sent_last_the_usual_way_twice_and_in_place(browser, tmp_path):
    """The app's chart call (ui.presenter.show) against Streamlit's own st.plotly_chart, in one small app: the app's
    chart is drawn once as it mounts, and inside charts_last() it is sent after the text below it, in its place."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    app = tmp_path / "two_charts.py"
    app.write_text(textwrap.dedent("""
        import numpy as np
        import plotly.graph_objects as go
        import streamlit as st
        from ui import presenter
        from ui.chart_wire import charts_last
        from ui.theme import register_template

        register_template()
        k = st.slider("k", 1, 9, 3, key="k")
        fig = go.Figure(go.Bar(y=np.arange(1.0, k + 1)))
        st.plotly_chart(fig, key="usual")                                   # Streamlit's own
        with charts_last():
            presenter.show(fig, key="wired")
            st.markdown("text after the chart")
    """))
    frames: list[bytes] = []
    with streamlit_server(app, tmp_path / "two_charts.log") as (url, _):
        ctx = browser.new_context(viewport={"width": 1200, "height": 900})
        try:
            pg = ctx.new_page()
            pg.add_init_script(PLOTS_JS)
            pg.on("websocket", lambda ws: ws.on(
                "framereceived", lambda f: frames.append(bytes(f)) if isinstance(f, (bytes, bytearray)) else None))
            open_page(pg, url)
            nudge_slider(pg, "k")                                # both charts mount again with new data
            wait_for_app(pg)
            draws = pg.evaluate(DRAWS_JS)
            order = pg.evaluate(ORDER_JS)
        finally:
            ctx.close()
    wired = [d for d in draws if d[0] == "wired"]
    usual = [d for d in draws if d[0] == "usual"]
    assert len(wired) == len(usual) == 2, draws
    assert all(calcs == 1 for _, calcs, _ in wired), draws
    assert all(calcs == 2 for _, calcs, _ in usual), draws     # the detector sees a second draw where there is one
    sent = []                                                    # each run's elements in the order they were sent
    for f in frames:
        msg = ForwardMsg.FromString(f)
        if msg.WhichOneof("type") == "delta" and msg.delta.WhichOneof("type") == "new_element":
            el = msg.delta.new_element
            kind = el.WhichOneof("type")
            sent.append(el.plotly_chart.id.rsplit("-", 1)[-1] if kind == "plotly_chart" else kind)
    runs = [sent[i:i + 4] for i in range(0, len(sent), 4)]
    assert len(runs) == 2 and all(r == ["slider", "usual", "markdown", "wired"] for r in runs), sent
    assert order == ["usual", "wired", "text"], order            # on screen the held chart is where it was called


def test_the_apps_charts_are_drawn_once_after_a_step(page, streamlit_url):
    page.context.add_init_script(PLOTS_JS)
    open_page(page, streamlit_url, "proof")
    page.wait_for_function("() => window.__plots.length >= 5")            # the charts mount after the run ends
    wait_for_app(page)
    before = len(page.evaluate(DRAWS_JS))
    nudge_slider(page, "proof-vocab__slider")
    page.wait_for_function(f"() => window.__plots.length >= {before + 5}")   # the step remounts what it changed
    wait_for_app(page)
    draws = page.evaluate(DRAWS_JS)
    assert all(calcs == 1 and plots >= 1 for _, calcs, plots in draws), draws
