"""Figures built as plain dicts, without Plotly's per-property validation, for figures rebuilt on a slider step.

Plotly validates every property as a figure is built, which costs a slider step more than the rest of its script
on /trees and /proof. ``PlainFigure`` takes the same calls as a ``go.Figure`` (``add_bar``,
``add_scatter``, ``add_heatmap``, ``update_layout``, ``update_xaxes``, ``add_vline``, ``add_hline``,
``add_annotation``, Plotly's magic underscores such as ``marker_color``) and writes them into dicts; ``figure()``
wraps the dicts in a go.Figure without validating them. Inside ``validating()`` the same calls replay on a real,
validating go.Figure instead: the tests build every figure both ways and require the same JSON, so a misspelt
property or a wrong translation of a call fails there, not on a student's screen.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import plotly.graph_objects as go

from ui.theme import fit_foot, register_template

# Plotly property names that hold an underscore themselves (plotly.basedatatypes' own list, the ones used here)
_UNDERSCORED = ("error_x", "error_y", "error_z", "paper_bgcolor", "plot_bgcolor")
_REPLAY = {"on": False}
# add_hline's annotation_position -> the label's (x, xanchor, yanchor), as Plotly places it
_HLINE_LABELS = {"top right": (1, "right", "bottom"), "bottom right": (1, "right", "top"),
                 "top left": (0, "left", "bottom"), "bottom left": (0, "left", "top")}


@contextlib.contextmanager
def validating() -> Iterator[None]:
    """Within this block, PlainFigure.figure() replays its calls on a validating go.Figure (for tests)."""
    before, _REPLAY["on"] = _REPLAY["on"], True
    try:
        yield
    finally:
        _REPLAY["on"] = before


def _unvalidated(data: list[dict], layout: dict) -> go.Figure:
    """A go.Figure wrapping plain trace and layout dicts on the app template, without Plotly's property validation."""
    register_template()
    return go.Figure({"data": data, "layout": fit_foot(layout, legend_entries(data))}, _validate=False)


def legend_entries(data: list[dict]) -> int:
    """How many traces show in the legend (those with a name, not hidden from it)."""
    return sum(1 for t in data if t.get("name") and t.get("showlegend", True))


def _path(key: str) -> list[str]:
    """Plotly's magic underscores: "marker_line_color" -> ["marker", "line", "color"]; "error_y_array" keeps
    "error_y" whole."""
    for name in _UNDERSCORED:
        if key == name or key.startswith(name + "_"):
            rest = key[len(name) + 1:]
            return [name, *(rest.split("_") if rest else [])]
    return key.split("_")


def _merge(into: dict, props: dict[str, Any]) -> dict:
    """Set props into `into` as Plotly's update does: magic underscores nest, dicts merge, None leaves a value unset,
    and a title given as a string is the title's text."""
    for key, value in props.items():
        if value is None:
            continue
        *head, last = _path(key)
        d = into
        for part in head:
            d = d.setdefault(part, {})
        if isinstance(value, dict) and isinstance(d.get(last), dict):
            _merge(d[last], value)
        elif isinstance(value, dict):
            d[last] = _merge({}, value)
        elif isinstance(value, str) and last == "title":
            d.setdefault(last, {})["text"] = value   # title="..." is {"text": ...} in Plotly's JSON
        else:
            d[last] = value
    return into


class PlainFigure:
    """go.Figure's building calls, recorded into plain dicts (see the module docstring)."""

    def __init__(self, **layout: Any) -> None:
        self.data: list[dict] = []
        self.layout: dict = _merge({}, layout)
        self.calls: list[tuple[str, tuple, dict]] = [("update_layout", (), layout)]

    @classmethod
    def of(cls, data: list[dict], layout: dict) -> PlainFigure:
        """The same figure from whole trace dicts (each with its "type") and a layout dict, Plotly's JSON form."""
        fig = cls(**layout)
        for trace in data:
            props = dict(trace)
            fig._trace(props.pop("type", "scatter"), props)
        return fig

    def _trace(self, kind: str, props: dict) -> PlainFigure:
        self.calls.append((f"add_{kind}", (), props))
        self.data.append(_merge({"type": kind}, props))
        return self

    def add_scatter(self, **props: Any) -> PlainFigure:
        """A scatter trace."""
        return self._trace("scatter", props)

    def add_bar(self, **props: Any) -> PlainFigure:
        """A bar trace."""
        return self._trace("bar", props)

    def add_heatmap(self, **props: Any) -> PlainFigure:
        """A heatmap trace."""
        return self._trace("heatmap", props)

    def update_layout(self, **props: Any) -> PlainFigure:
        """Layout properties, merged as go.Figure.update_layout merges them."""
        self.calls.append(("update_layout", (), props))
        _merge(self.layout, props)
        return self

    def update_xaxes(self, **props: Any) -> PlainFigure:
        """Properties of the x axis (one axis per figure here)."""
        self.calls.append(("update_xaxes", (), props))
        _merge(self.layout.setdefault("xaxis", {}), props)
        return self

    def update_yaxes(self, **props: Any) -> PlainFigure:
        """Properties of the y axis (one axis per figure here)."""
        self.calls.append(("update_yaxes", (), props))
        _merge(self.layout.setdefault("yaxis", {}), props)
        return self

    def add_annotation(self, **props: Any) -> PlainFigure:
        """A text annotation."""
        self.calls.append(("add_annotation", (), props))
        self.layout.setdefault("annotations", []).append(_merge({}, props))
        return self

    def add_vline(self, x: float, **props: Any) -> PlainFigure:
        """A vertical line across the plot at data x (Plotly's add_vline: a line shape from y 0 to 1 in paper)."""
        self.calls.append(("add_vline", (x,), props))
        shape = {"type": "line", "x0": x, "x1": x, "xref": "x", "y0": 0, "y1": 1, "yref": "y domain"}
        self.layout.setdefault("shapes", []).append(_merge(shape, props))
        return self

    def add_hline(self, y: float, **props: Any) -> PlainFigure:
        """A horizontal line across the plot at data y (Plotly's add_hline), with its label from annotation_text
        at annotation_position ("top right" by default, or bottom and/or left)."""
        self.calls.append(("add_hline", (y,), dict(props)))
        text = props.pop("annotation_text", None)
        where = props.pop("annotation_position", "top right")
        shape = {"type": "line", "x0": 0, "x1": 1, "xref": "x domain", "y0": y, "y1": y, "yref": "y"}
        self.layout.setdefault("shapes", []).append(_merge(shape, props))
        if text is not None:
            if where not in _HLINE_LABELS:
                raise ValueError(f"annotation_position {where!r}: only {', '.join(_HLINE_LABELS)} here")
            x, xanchor, yanchor = _HLINE_LABELS[where]
            self.layout.setdefault("annotations", []).append(
                {"showarrow": False, "text": text, "x": x, "xanchor": xanchor, "xref": "x domain", "y": y,
                 "yanchor": yanchor, "yref": "y"})
        return self

    def legend_entries(self) -> int:
        """How many traces show in the legend (those with a name, not hidden from it)."""
        return legend_entries(self.data)

    def figure(self) -> go.Figure:
        """The figure, unvalidated; inside validating(), the same calls replayed on a validating go.Figure."""
        if not _REPLAY["on"]:
            return _unvalidated(self.data, self.layout)
        register_template()
        fig = go.Figure()
        for name, args, props in self.calls:
            getattr(fig, name)(*args, **props)
        fitted = fit_foot(self.layout, self.legend_entries())
        if fitted is not self.layout:
            fig.update_layout({k: fitted[k] for k in ("margin", "height") if k in fitted})
        return fig

