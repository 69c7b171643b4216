"""What a figure looks like on the wire to the browser: drawn once per mount, not twice.

Streamlit 1.67's chart component hands every new chart to ``Plotly.react`` twice as it mounts (once as the spec
arrives, again once its width is measured, each time with fresh copies of the spec). Plotly only skips the second
full plot when nothing in the copy compares as changed, and three things in a plain figure always do:

- ``layout.template``, compared by identity (a fresh copy is a change: a full replot);
- numpy arrays, which Plotly 6 sends as base64 typed arrays and plotly.js compares by identity too;
- with no ``layout.datarevision``, every data array is taken as new (Plotly.react's immutable mode).

So the spec sent carries the template's values written into the figure (as Plotly applies a template: the
figure's own values win), plain lists, and a datarevision that is a hash of the data, and it is drawn without
Streamlit's theme (which adds a template back; the app's look is the app template's, see ui.theme).

Within ``charts_last()`` (the pages' fragments) a chart keeps its place as an empty container and is sent when the
block ends. A page draws the charts a run sends as they arrive (each takes the browser tens of ms), so a chart sent
early in a run makes the browser draw while the server still works on the rest: on two cores the two then share the
CPU, and the page hears of the run's end only once that drawing is done. Sent last, the charts arrive together with
the run's end. The container keeps the previous chart on screen until the new one replaces it, as before.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import plotly.graph_objects as go
from plotly.utils import PlotlyJSONEncoder

from ui.theme import AXIS_KEY

# trace types drawn on x/y axes: the template's xaxis/yaxis apply to the axes they create
_CARTESIAN = {"bar", "box", "candlestick", "contour", "funnel", "heatmap", "histogram", "histogram2d",
              "histogram2dcontour", "image", "ohlc", "scatter", "scattergl", "violin", "waterfall"}
# template layout containers for subplot kinds: written only where the figure has that subplot
_SUBPLOTS = ("coloraxis", "geo", "map", "mapbox", "polar", "scene", "smith", "ternary")


def _under(defaults: Any, own: Any) -> Any:
    """`own` with `defaults` filled in beneath it, recursively: a value the figure sets always wins."""
    if not isinstance(own, dict) or not isinstance(defaults, dict):
        return copy.deepcopy(own)
    out = copy.deepcopy(defaults)
    for key, value in own.items():
        out[key] = _under(out.get(key), value) if key in out else copy.deepcopy(value)
    return out


def _plain(value: Any) -> Any:
    """numpy arrays, numpy scalars and Plotly's base64 typed arrays ({dtype, bdata[, shape]}, what a figure's
    to_dict() holds for an array) as lists and Python numbers, recursively."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        if set(value) in ({"dtype", "bdata"}, {"dtype", "bdata", "shape"}):
            arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
            shape = tuple(int(n) for n in str(value.get("shape", arr.size)).split(","))
            return arr.reshape(shape).tolist()
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def bake_template(spec: dict) -> dict:
    """A figure dict with its layout.template applied and removed: the template's layout values beneath the
    layout's (its xaxis/yaxis beneath every axis, annotationdefaults/shapedefaults beneath each item), and its
    per-type trace defaults beneath each trace, cycling as Plotly cycles them. Renders as the templated figure."""
    layout = dict(spec.get("layout") or {})
    template = layout.pop("template", None) or {}
    data = [dict(t) for t in spec.get("data") or []]
    t_layout = template.get("layout") or {}
    t_data = template.get("data") or {}
    kinds = {t.get("type", "scatter") for t in data}
    axes = {k for k in layout if AXIS_KEY.match(k)} | ({"xaxis", "yaxis"} if kinds & _CARTESIAN or not data else set())
    for key, default in t_layout.items():
        if key in ("xaxis", "yaxis"):
            for name in sorted(a for a in axes if a.startswith(key[0])):
                layout[name] = _under(default, layout.get(name, {}))
        elif key in ("annotationdefaults", "shapedefaults"):
            items = key.removesuffix("defaults") + "s"
            if layout.get(items):
                layout[items] = [_under(default, item) for item in layout[items]]
        elif key in _SUBPLOTS:
            if key in layout:
                layout[key] = _under(default, layout[key])
        else:
            layout[key] = _under(default, layout[key]) if key in layout else copy.deepcopy(default)
    seen: dict[str, int] = {}
    for i, trace in enumerate(data):
        kind = trace.get("type", "scatter")
        defaults = t_data.get(kind) or []
        if defaults:
            n = seen.get(kind, 0)
            seen[kind] = n + 1
            data[i] = _under(defaults[n % len(defaults)], trace)
    return {**spec, "data": data, "layout": layout}


def data_revision(data: list) -> str:
    """A short hash of the traces: equal for equal data, so a redraw of the same figure is not a new dataset."""
    text = json.dumps(data, cls=PlotlyJSONEncoder, sort_keys=True, separators=(",", ":"))
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def wire_spec(figure_or_data) -> dict:
    """The figure (a go.Figure or its dict) as sent: template baked in, plain lists, layout.datarevision set."""
    spec = figure_or_data.to_dict() if hasattr(figure_or_data, "to_dict") else figure_or_data
    spec = _plain(bake_template(spec))
    spec["layout"]["datarevision"] = data_revision(spec["data"])
    return spec


class WireFigure(go.Figure):
    """A finished wire spec that st.plotly_chart sends as it is, and that reads as a figure where asked.

    st.plotly_chart takes a go.Figure's to_dict() without validating it again, then serialises that dict
    unvalidated; a dict handed to it directly is rebuilt as a go.Figure, which puts the default template back.
    So this Figure is not initialised as one (no copy of the spec into Plotly's objects on the way out):
    to_dict() is all Streamlit calls on it, and .data, .layout build an unvalidated go.Figure on first use."""

    def __init__(self, spec: dict) -> None:  # deliberately not BaseFigure.__init__ (see above)
        self._wire = spec
        self._built: go.Figure | None = None

    @property
    def spec(self) -> dict:
        """The wire spec itself (not a copy: do not edit)."""
        return self._wire

    def to_dict(self) -> dict:
        """The wire spec with fresh trace dicts: plotly.io.to_json pops each trace's uid, and nothing else edits."""
        return {**self._wire, "data": [dict(t) for t in self._wire["data"]]}

    def to_plotly_json(self) -> dict:
        """A deep copy of the wire spec."""
        return copy.deepcopy(self._wire)

    def _figure(self) -> go.Figure:
        if self._built is None:
            self._built = go.Figure(copy.deepcopy(self._wire), _validate=False)
        return self._built

    @property
    def data(self):
        """The traces, as a go.Figure built from the spec has them."""
        return self._figure().data

    @property
    def layout(self):
        """The layout, as a go.Figure built from the spec has it."""
        return self._figure().layout


_PENDING = threading.local()            # per script thread: the charts a charts_last() block holds back


@contextlib.contextmanager
def charts_last() -> Iterator[None]:
    """Hold back the charts sent within (see defer) and send them, in order, when the outermost block ends; a
    block inside another (a fragment inside a fragment's run) joins it. Also a decorator."""
    if getattr(_PENDING, "queue", None) is not None:
        yield
        return
    _PENDING.queue = []
    try:
        yield
    finally:
        queue, _PENDING.queue = _PENDING.queue, None
        for send in queue:
            send()


def holding() -> bool:
    """Whether a charts_last() block is open on this thread."""
    return getattr(_PENDING, "queue", None) is not None


def defer(send: Callable[[], object]) -> None:
    """Queue `send` for the end of the open charts_last() block (check holding() first)."""
    _PENDING.queue.append(send)
