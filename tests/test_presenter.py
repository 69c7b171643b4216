"""Presenter mode (ui/presenter.py): ?present=1 turns it on app-wide, every chart gets projector sizes, the CSS is
on every page, bad URL text gets one line, the sidebar toggle writes the URL, and the pages we own reorder."""

from __future__ import annotations

import json

import plotly.graph_objects as go
import pytest
from plotly.subplots import make_subplots

from ui import presenter
from ui.theme import PRESENTER_PX, presenter_spec

PAGES = ["views/home.py", "views/algebra.py", "views/roofline.py", "views/proof.py", "views/trees.py",
         "views/live.py", "views/engines.py", "views/interview.py"]
CHART_PAGES = ["views/algebra.py", "views/roofline.py", "views/proof.py", "views/trees.py"]
CSS_MARK = "font-size: 1.35rem"       # a rule of presenter.css()


def _css_on(at) -> bool:
    return any(CSS_MARK in m.value for m in at.sidebar.markdown)


def _tick_sizes(at) -> list:
    """Each chart's x and y tick-label size as sent to the browser (None: left to the theme)."""
    out = []
    for c in at.get("plotly_chart"):
        layout = json.loads(c.proto.spec)["layout"]
        out += [layout.get(a, {}).get("tickfont", {}).get("size") for a in ("xaxis", "yaxis")]
    return out


# ------------------------------------------------------------------------------ the figure sizes ----
def test_presenter_spec_sizes_every_axis_and_leaves_the_input_alone():
    fig = make_subplots(rows=1, cols=2)
    fig.add_trace(go.Heatmap(z=[[1, 2], [3, 4]], text=[["a", "b"], ["c", "d"]], texttemplate="%{text}"), 1, 1)
    fig.add_trace(go.Bar(x=[1, 2], y=[3, 4], text=["x", "y"]), 1, 2)
    fig.add_annotation(text="you are here", x=1, y=1)
    fig.update_layout(title=dict(text="t", subtitle=dict(text="s")))
    before = fig.to_dict()
    spec = presenter_spec(fig)
    assert fig.to_dict() == before                                     # a copy: cached figures stay as built
    lay = spec["layout"]
    for axis in ("xaxis", "yaxis", "xaxis2", "yaxis2"):
        assert lay[axis]["tickfont"]["size"] == PRESENTER_PX["tick"] and lay[axis]["automargin"] is True
        assert lay[axis]["title"]["font"]["size"] == PRESENTER_PX["axis_title"]
    assert lay["font"]["size"] == PRESENTER_PX["font"] and lay["title"]["font"]["size"] == PRESENTER_PX["title"]
    assert lay["title"]["subtitle"]["font"]["size"] == PRESENTER_PX["legend"]
    assert lay["annotations"][0]["font"]["size"] == PRESENTER_PX["legend"]
    assert spec["data"][0]["colorbar"]["tickfont"]["size"] == PRESENTER_PX["tick"]
    assert spec["data"][1]["textfont"]["size"] == PRESENTER_PX["legend"]
    assert "colorbar" not in spec["data"][1]                          # a bar has no colorbar of its own
    go.Figure(spec)                                                    # still a valid figure
    assert presenter_spec(spec) == spec                                # idempotent
    assert presenter_spec(before) == spec                              # a dict works as well as a Figure


def test_on_is_false_outside_a_run():
    assert presenter.on() is False


# ---------------------------------------------------------------------------------- every page ----
@pytest.mark.parametrize("page", PAGES)
def test_every_page_gets_the_css_with_present_and_not_without(app_test, page):
    at = app_test(page, present="1")
    assert not at.exception, [e.value for e in at.exception]
    assert _css_on(at) and at.query_params["present"] == "1"
    assert next(t for t in at.toggle if t.label == "Presenter mode").value is True
    off = app_test(page)
    assert not off.exception and not _css_on(off)


@pytest.mark.parametrize("page", CHART_PAGES)
def test_every_chart_gets_projector_tick_labels(app_test, page):
    on = _tick_sizes(app_test(page, present="1"))
    off = _tick_sizes(app_test(page))
    assert on and set(on) == {PRESENTER_PX["tick"]}, on
    assert len(off) == len(on) and PRESENTER_PX["tick"] not in off, off     # negative control


# ------------------------------------------------------------------------------------ the switch ----
def test_switch_survives_a_page_change(app_test):
    at = app_test(None, present="1")
    at.query_params.clear()                  # what st.navigation does to the address when another page opens
    at.switch_page("views/roofline.py").run()
    assert not at.exception
    assert at.query_params["present"] == "1" and _css_on(at)
    assert set(_tick_sizes(at)) == {PRESENTER_PX["tick"]}


def test_toggle_writes_the_url_and_turns_off(app_test):
    at = app_test("views/proof.py")
    assert "present" not in at.query_params and not _css_on(at)
    toggle = next(t for t in at.toggle if t.label == "Presenter mode")
    toggle.set_value(True).run()
    assert at.query_params["present"] == presenter.URL_ON and _css_on(at)
    assert set(_tick_sizes(at)) == {PRESENTER_PX["tick"]}
    next(t for t in at.toggle if t.label == "Presenter mode").set_value(False).run()
    assert "present" not in at.query_params and not _css_on(at)
    assert PRESENTER_PX["tick"] not in _tick_sizes(at)


@pytest.mark.parametrize("raw", ["banana", "1e999", "<b>x</b>"])
def test_bad_url_text_gets_one_line_and_changes_nothing(app_test, raw):
    at = app_test("views/algebra.py", present=raw)
    assert not at.exception
    lines = [w.value for w in at.warning if "present=" in w.value]
    assert len(lines) == 1 and "presenter mode stays off" in lines[0] and "<b>" not in lines[0], lines
    assert not _css_on(at)


@pytest.mark.parametrize("raw", ["true", "yes", "on"])
def test_the_usual_spellings_of_true_turn_it_on(app_test, raw):
    at = app_test("views/trees.py", present=raw)
    assert not at.exception and _css_on(at)


# ----------------------------------------------------------------- key figure first, settings folded ----
def _order(node) -> list:
    """Leaf elements of a block, in the order drawn."""
    children = getattr(node, "children", None)
    if not children:
        return [node]
    return [leaf for i in sorted(children) for leaf in _order(children[i])]


def test_home_puts_the_worked_case_first_and_folds_the_links(app_test):
    def first(at, kind):
        return next(i for i, e in enumerate(_order(at.main)) if e.type == kind)

    on, off = app_test(None, present="1"), app_test(None)
    assert first(on, "metric") < first(on, "markdown")                # the numbers before the paragraph
    assert first(off, "markdown") < first(off, "metric")              # and the other way round without it
    assert [e.label for e in on.expander] == ["Explore: the tour and every page"]
    assert not [e for e in off.expander if e.label.startswith("Explore")]


def test_engines_folds_its_settings(app_test):
    pytest.importorskip("xllamacpp")
    on, off = app_test("views/engines.py", present="1"), app_test("views/engines.py")
    assert not on.exception and not off.exception
    assert "Settings: speculative mode, draft length, workload" in [e.label for e in on.expander]
    assert not [e for e in off.expander if e.label.startswith("Settings")]
    assert {s.label for s in on.slider} == {s.label for s in off.slider}     # the controls still run


@pytest.mark.parametrize("page", ["views/algebra.py", "views/roofline.py"])
def test_chart_pages_put_their_key_figure_before_the_formulas(app_test, page):
    """Presenter mode: the key figure comes before the first formula (below it otherwise); the same widgets run."""
    def first(at, kind):
        return next(i for i, e in enumerate(_order(at.main)) if e.type == kind)

    on, off = app_test(page, present="1"), app_test(page)
    assert not on.exception and not off.exception
    assert first(on, "plotly_chart") < first(on, "latex")
    assert first(off, "latex") < first(off, "plotly_chart")
    assert "About this page" in [e.label for e in on.expander]
    assert "About this page" not in [e.label for e in off.expander]
    assert {s.label for s in on.slider} == {s.label for s in off.slider}


@pytest.mark.parametrize("page", ["views/proof.py", "views/trees.py"])
def test_chart_pages_fold_their_opening_prose(app_test, page):
    on, off = app_test(page, present="1"), app_test(page)
    assert not on.exception and not off.exception
    assert "About this page" in [e.label for e in on.expander]
    assert "About this page" not in [e.label for e in off.expander]


# ------------------------------------------------------------------- one explicit chart call ----
def test_pages_draw_charts_only_through_show():
    """No hidden patch: pages call presenter.show, never plotly_chart themselves, and Streamlit's own method is
    left as Streamlit wrote it (the app replaces no library function)."""
    import ast
    from pathlib import Path

    from streamlit.delta_generator import DeltaGenerator

    root = Path(__file__).resolve().parents[1]
    files = [root / "app.py", *(root / "views").glob("*.py"), *(root / "ui").rglob("*.py")]
    direct = [str(f.relative_to(root)) for f in files if f.name != "presenter.py"
              for n in ast.walk(ast.parse(f.read_text()))
              if isinstance(n, ast.Attribute) and n.attr == "plotly_chart"]
    assert not direct, direct
    from streamlit.elements.plotly_chart import PlotlyMixin

    assert DeltaGenerator.plotly_chart is PlotlyMixin.plotly_chart
