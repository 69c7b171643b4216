"""ui.chart_wire: the spec a chart is sent as carries no template, no base64 arrays and a data revision; Streamlit
sends it as it is; every chart of the app goes out that way, without Streamlit's chart theme."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io
import plotly.tools
import pytest
from plotly.subplots import make_subplots

from ui.chart_wire import WireFigure, _plain, bake_template, charts_last, data_revision, defer, holding, wire_spec
from ui.proof import figures as proof_figures
from ui.theme import register_template


def _typed(a: np.ndarray) -> dict:
    """Plotly's base64 typed-array spec of an array, as a figure's to_dict() holds it."""
    from _plotly_utils.utils import to_typed_array_spec
    return to_typed_array_spec(a)


def _has_typed_array(x) -> bool:
    if isinstance(x, dict):
        return "bdata" in x or any(_has_typed_array(v) for v in x.values())
    if isinstance(x, list):
        return any(_has_typed_array(v) for v in x)
    return False


def test_plain_turns_typed_arrays_and_numpy_into_lists() -> None:
    z = np.arange(6, dtype=np.int64).reshape(2, 3)
    y = np.array([0.1, 1 / 3, 2.5e-300])
    spec = {"y": _typed(y), "z": _typed(z), "n": np.float32(0.5), "k": [np.int64(3), "a"], "raw": np.array([1, 2])}
    assert set(spec["y"]) == {"dtype", "bdata"} and spec["z"]["shape"] == "2, 3"   # what plotly produces
    out = _plain(spec)
    assert out == {"y": y.tolist(), "z": [[0, 1, 2], [3, 4, 5]], "n": 0.5, "k": [3, "a"], "raw": [1, 2]}
    assert out["y"][1] == 1 / 3                                  # bit-exact, not rounded through text
    assert _plain({"dtype": "f8", "bdata": "x", "extra": 1}) == {"dtype": "f8", "bdata": "x", "extra": 1}


def test_wire_spec_has_no_template_no_typed_arrays_and_a_data_revision() -> None:
    register_template()
    p, q = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.3, 0.5])
    heat = go.Figure(go.Heatmap(z=np.arange(12.0).reshape(3, 4)))
    subs = make_subplots(rows=1, cols=2)
    subs.add_scatter(x=np.arange(3), y=np.arange(3.0), row=1, col=2)
    for fig in (proof_figures.pq_figure(p, q), heat, subs):
        before = fig.to_dict()
        assert "template" in before["layout"] and _has_typed_array(before["data"])     # the plain figure has both
        spec = wire_spec(fig)
        assert "template" not in spec["layout"] and not _has_typed_array(spec)
        assert spec["layout"]["datarevision"] == data_revision(spec["data"])
    spec = wire_spec(subs)                                       # the template's axis style on both subplots
    assert spec["layout"]["xaxis2"]["gridcolor"] == spec["layout"]["xaxis"]["gridcolor"] == "#e6eaf1"


def test_baking_keeps_the_figures_own_values_over_the_templates() -> None:
    spec = {"data": [{"type": "bar", "y": [1], "marker": {"color": "red"}}, {"type": "bar", "y": [2]}],
            "layout": {"font": {"size": 30}, "annotations": [{"text": "a"}, {"text": "b", "arrowcolor": "blue"}],
                       "template": {"layout": {"font": {"size": 12, "color": "grey"}, "polar": {"bgcolor": "x"},
                                               "annotationdefaults": {"arrowcolor": "green"}},
                                    "data": {"bar": [{"marker": {"color": "one", "line": {"width": 2}}},
                                                     {"marker": {"color": "two"}}]}}}}
    out = bake_template(spec)
    assert out["layout"]["font"] == {"size": 30, "color": "grey"}
    assert "polar" not in out["layout"]                          # no polar subplot in the figure: none added
    assert [a.get("arrowcolor") for a in out["layout"]["annotations"]] == ["green", "blue"]
    assert out["data"][0]["marker"] == {"color": "red", "line": {"width": 2}}
    assert out["data"][1]["marker"] == {"color": "two"}          # trace defaults cycle per type, as Plotly's do
    assert "template" in spec["layout"]                          # the input is left alone


def test_data_revision_follows_the_data_only() -> None:
    a = [{"type": "bar", "y": [0.1, 0.2]}]
    assert data_revision(a) == data_revision(json.loads(json.dumps(a)))
    assert data_revision(a) != data_revision([{"type": "bar", "y": [0.1, 0.2000001]}])


def test_streamlit_sends_the_wire_spec_as_it_is() -> None:
    """st.plotly_chart's own steps (plotly.tools, then plotly.io.to_json unvalidated) keep WireFigure's dict; a
    plain dict would be rebuilt as a go.Figure and get the default template back."""
    register_template()
    spec = wire_spec(proof_figures.pq_figure(np.array([0.6, 0.4]), np.array([0.5, 0.5])))
    sent = json.loads(plotly.io.to_json(plotly.tools.return_figure_from_figure_or_data(WireFigure(spec), True),
                                        validate=False))
    assert sent == json.loads(json.dumps(spec))
    rebuilt = json.loads(plotly.io.to_json(plotly.tools.return_figure_from_figure_or_data(spec, True),
                                           validate=False))
    assert "template" in rebuilt["layout"]                       # why WireFigure exists
    sent_traces = WireFigure(spec).to_dict()["data"]
    sent_traces[0].pop("name")                                   # what plotly.io.to_json does to a trace's uid
    assert "name" in spec["data"][0]


@pytest.mark.parametrize("page", ["views/algebra.py", "views/roofline.py", "views/proof.py", "views/trees.py"])
def test_every_chart_goes_out_as_a_wire_spec_without_streamlits_theme(app_test, page) -> None:
    at = app_test(page)
    charts = at.get("plotly_chart")
    assert charts
    for el in charts:
        spec = json.loads(el.proto.spec)
        assert el.proto.theme == "", page
        assert "template" not in spec["layout"] and not _has_typed_array(spec), page
        assert spec["layout"]["datarevision"] == data_revision(spec["data"]), page
        assert spec["layout"]["font"]["family"] == '"Source Sans", sans-serif'      # the app template, baked



def test_charts_last_sends_in_order_when_the_outermost_block_ends() -> None:
    sent: list[int] = []
    assert not holding()
    with charts_last():
        defer(lambda: sent.append(1))
        with charts_last():                                     # a fragment inside a fragment's run joins it
            defer(lambda: sent.append(2))
        assert sent == [] and holding()
        defer(lambda: sent.append(3))
    assert sent == [1, 2, 3] and not holding()
    with pytest.raises(RuntimeError), charts_last():            # st.stop() and errors still send what was held
        defer(lambda: sent.append(4))
        raise RuntimeError("stop")
    assert sent[-1] == 4 and not holding()
