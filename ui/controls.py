"""Widgets bound to URL query params, page by page, so that any view can be shared by its address.

Each page owns its settings. ``page_scope(page)`` is called once per run before the page renders (app.py
does it); from then on a control named ``alpha`` has the widget key ``"<page>.alpha"`` (``widget_key("alpha")``),
while the URL keeps the short name: ``/algebra?alpha=0.8``. A page never reads or writes another page's
keys or parameters, so the interview's text ``seed`` and the live page's number ``seed`` cannot meet.

The binding is ours, not Streamlit's ``bind="query-params"`` (whose widget key is the parameter name):

- URL -> value: a parameter is read when it differs from the text this page last applied or wrote (on every
  page visit, on a shared link, on an in-app link to the same page), parsed once by the control's ``Spec``
  into a valid value or refused with a message that names what was refused and what is used instead.
  +-inf, NaN and 1e999 are refused here, before any widget sees them.
- value -> URL: after the widget, a value other than the default is written back under the short name, and a
  default value is removed, so the address always reproduces the view.
- A value of the wrong type or out of range from any source (URL, a callback's ``set_value``, state left in
  the session) is refused with a message, never passed to a widget.
- Values persist per page for the session (Streamlit drops a widget's state when its page is left), so
  hopping to another page and back keeps each page's settings.

The widget functions take ``key``: the setting's short name, which is also its URL parameter. Callbacks use
``get_value(name)`` and ``set_value(name, value)`` instead of st.session_state[name]; tests address a widget
by ``widget_key(name, page)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import streamlit as st

from ui.safe_text import md

Number = TypeVar("Number", int, float)

SCOPE = "_controls.page"          # the page this run renders
STORE = "_controls.values"        # {page: {name: value}}: each control's value, kept when the page is left
SEEN = "_controls.seen"           # {page: {name: url text}}: what this visit last applied from or wrote to the URL
REFUSED = "_controls.refused"     # {page: {name: (message, value in use)}}: shown until the value changes
SPECS = "_controls.specs"         # {page: {name: Spec}}: for set_value's check
TEXT_LIMIT = 2000                 # characters of a free-text setting


# ----------------------------------------------------------------------------------------- parsing ----
def _num(x: float) -> str:
    """A bound or a value in a message."""
    return f"{x:g}" if isinstance(x, float) else str(x)


@dataclass(frozen=True)
class Spec:
    """What a control accepts: kind int | float | bool | choice | text, a default, and its limits."""

    kind: str
    default: Any
    lo: float | None = None
    hi: float | None = None
    options: tuple[str, ...] = ()
    max_len: int = TEXT_LIMIT

    def allowed(self) -> str:
        """The allowed values, in words."""
        if self.kind in ("int", "float"):
            whole = "a whole number" if self.kind == "int" else "a number"
            return f"{whole} from {_num(self.lo)} to {_num(self.hi)}"
        if self.kind == "bool":
            return "true or false"
        if self.kind == "choice":
            shown = ", ".join(self.options[:8]) + (", ..." if len(self.options) > 8 else "")
            return f"one of: {shown}"
        return f"text of at most {self.max_len} characters"

    def parse(self, raw: str) -> Any:
        """URL text -> a valid value; ValueError (a short reason) otherwise. Never returns inf or NaN."""
        if self.kind in ("int", "float"):
            try:
                x = float(raw.strip())
            except ValueError:
                raise ValueError("is not a number") from None
            if not math.isfinite(x):
                raise ValueError("is not a finite number")
            if self.kind == "int":
                if not x.is_integer():
                    raise ValueError("is not a whole number")
                return self.check(int(x))
            return self.check(x)
        if self.kind == "bool":
            word = raw.strip().lower()
            if word in ("true", "1", "yes", "on"):
                return True
            if word in ("false", "0", "no", "off"):
                return False
            raise ValueError("is not true or false")
        return self.check(raw)

    def check(self, value: Any) -> Any:
        """A value from any source -> the same value in its proper type; ValueError (a short reason) otherwise."""
        if self.kind in ("int", "float"):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError("is not a number")
            if not math.isfinite(value):
                raise ValueError("is not a finite number")
            if self.kind == "int" and not float(value).is_integer():
                raise ValueError("is not a whole number")
            if not self.lo <= value <= self.hi:
                raise ValueError("is outside the allowed range")
            return int(value) if self.kind == "int" else float(value)
        if self.kind == "bool":
            if not isinstance(value, bool):
                raise ValueError("is not true or false")
            return value
        if not isinstance(value, str):
            raise ValueError("is not text")
        if self.kind == "choice" and value not in self.options:
            raise ValueError("is not one of the choices")
        if len(value) > self.max_len:
            raise ValueError(f"is {len(value):,} characters long")
        return value

    def to_url(self, value: Any) -> str:
        """The URL text of a valid value (floats in their shortest exact form)."""
        if self.kind == "bool":
            return "true" if value else "false"
        if self.kind == "float":
            return repr(float(value))
        return str(value)

    def show(self, value: Any) -> str:
        """A value in use, for a message (Markdown-safe)."""
        if self.kind == "text":
            return f'"{md(value)}"' if value else "empty"
        if self.kind == "choice":
            return md(value)
        return self.to_url(value) if self.kind != "float" else f"{value:g}"


# ------------------------------------------------------------------------------------------- scope ----
def _page() -> str:
    page = st.session_state.get(SCOPE)
    if page is None:
        raise RuntimeError("ui.controls: call page_scope(page) before the page's controls (app.py does it)")
    return page


def _table(name: str) -> dict:
    """This page's slice of one of the session-wide tables (STORE, SEEN, REFUSED, SPECS)."""
    tables = st.session_state.setdefault(name, {})
    return tables.setdefault(_page(), {})


def page_scope(page: str) -> None:
    """Declare the page this run renders (once per run, before its controls). Entering a page (a first
    load, or arriving from another page) starts a new visit: the URL is read afresh."""
    if not page or "." in page:
        raise ValueError(f"a page scope is a non-empty name without dots, got {page!r}")
    if st.session_state.get(SCOPE) != page:
        for name in (SEEN, REFUSED):
            st.session_state.setdefault(name, {})[page] = {}
    st.session_state[SCOPE] = page


def widget_key(name: str, page: str | None = None) -> str:
    """The widget key of control ``name`` on ``page`` (default: the current page): ``"<page>.<name>"``."""
    return f"{page or _page()}.{name}"


def get_value(name: str, default: Any = None) -> Any:
    """The current value of this page's control ``name`` (also inside its callbacks), or ``default``."""
    k = widget_key(name)
    if k in st.session_state:
        return st.session_state[k]
    return _table(STORE).get(name, default)


def set_value(name: str, value: Any) -> bool:
    """Set this page's control ``name`` (from a callback, or before the widget is drawn in this run).

    The value is checked against the control's Spec; a wrong type or range is refused with a message on the
    page and nothing changes. Returns whether the value was set.
    """
    spec = _table(SPECS).get(name)
    if spec is not None:
        try:
            value = spec.check(value)
        except ValueError as exc:
            _refuse(name, spec, f"The value {md(repr(value))} for {name} {exc}", get_value(name, spec.default))
            return False
    _table(STORE)[name] = value
    st.session_state[widget_key(name)] = value
    return True


def _refuse(name: str, spec: Spec, what: str, used: Any) -> None:
    """Remember a refusal: what was refused, why, and the value used; shown above the control."""
    msg = f"{what}; using {spec.show(used)}. Allowed: {md(spec.allowed(), 600)}."
    _table(REFUSED)[name] = (msg, used)


# ------------------------------------------------------------------------------------------ binding ----
def _prepare(name: str, spec: Spec) -> Any:
    """Before the widget: settle this run's value from the session and the URL, refusing bad values."""
    _table(SPECS)[name] = spec
    store, seen, k = _table(STORE), _table(SEEN), widget_key(name)
    value = st.session_state[k] if k in st.session_state else store.get(name, spec.default)
    try:
        value = spec.check(value)
    except ValueError as exc:
        _refuse(name, spec, f"The stored value {md(repr(value))} for {name} {exc}", spec.default)
        value = spec.default
    raw = st.query_params.get(name)
    if raw is not None and raw != seen.get(name):
        seen[name] = raw
        try:
            value = spec.parse(raw)
        except ValueError as exc:
            _refuse(name, spec, f"{name}={md(raw)} in the URL {exc}", value)
    if k not in st.session_state or st.session_state[k] != value or type(st.session_state[k]) is not type(value):
        st.session_state[k] = value
    refused = _table(REFUSED).get(name)
    if refused is not None:
        if refused[1] == value:
            st.warning(refused[0], icon=":material/link_off:")
        else:
            del _table(REFUSED)[name]
    return value


def _commit(name: str, spec: Spec, value: Any) -> Any:
    """After the widget: keep the value for later visits and mirror it in the URL (absent at the default)."""
    _table(STORE)[name] = value
    text = None if value == spec.default else spec.to_url(value)
    if text is None:
        if name in st.query_params:
            del st.query_params[name]
    elif st.query_params.get(name) != text:
        st.query_params[name] = text
    _table(SEEN)[name] = text
    return value


def bound(name: str, spec: Spec, draw: Callable[[str], Any]) -> Any:
    """Bind any widget: ``draw(widget_key)`` creates it (without a value/index argument) and returns its value."""
    _prepare(name, spec)
    return _commit(name, spec, draw(widget_key(name)))


def _number_spec(lo: Number, hi: Number, default: Number, step: Number) -> Spec:
    integer = isinstance(step, int) and isinstance(default, int) and isinstance(lo, int) and isinstance(hi, int)
    return Spec("int" if integer else "float", default, lo, hi)


# ------------------------------------------------------------------------------------------ widgets ----
def slider_input(
    label: str,
    key: str,
    min_value: Number,
    max_value: Number,
    default: Number,
    step: Number,
    fmt: str | None = None,
    help: str | None = None,
) -> Number:
    """A slider plus a box to type the exact value; both stay in sync and ``?key=`` sets them.

    The number box is the bound widget (it holds the exact value); the slider mirrors it.
    """
    spec = _number_spec(min_value, max_value, default, step)
    value = _prepare(key, spec)
    k = widget_key(key)
    slider_key = f"{k}__slider"

    def _from_slider() -> None:
        st.session_state[k] = st.session_state[slider_key]

    col_slider, col_box = st.columns([3, 1], vertical_alignment="bottom")
    with col_box:
        value = st.number_input(
            label, min_value=min_value, max_value=max_value, step=step, format=fmt, key=k,
            label_visibility="collapsed", help=f"Type an exact value from {min_value} to {max_value}.",
        )
    st.session_state[slider_key] = value
    with col_slider:
        st.slider(
            label, min_value=min_value, max_value=max_value, step=step, format=fmt,
            key=slider_key, on_change=_from_slider, help=help,
        )
    return _commit(key, spec, value)


def number_box(label: str, key: str, min_value: Number, max_value: Number, default: Number, step: Number,
               fmt: str | None = None, **kw) -> Number:
    """A number box whose value is ``?key=``; whole numbers when min, max, default and step are ints."""
    spec = _number_spec(min_value, max_value, default, step)
    return bound(key, spec, lambda k: st.number_input(
        label, min_value=min_value, max_value=max_value, step=step, format=fmt, key=k, **kw))


def bound_select(label: str, options: Sequence[str], key: str, default: str | None = None, **kw) -> str:
    """A selectbox whose choice is ``?key=``; a choice not in the list is refused with a message."""
    opts = tuple(options)
    spec = Spec("choice", opts[0] if default is None else default, options=opts)
    return bound(key, spec, lambda k: st.selectbox(label, opts, key=k, **kw))


def bound_radio(label: str, options: Sequence[str], key: str, default: str | None = None, **kw) -> str:
    """A horizontal radio whose choice is ``?key=``."""
    opts = tuple(options)
    spec = Spec("choice", opts[0] if default is None else default, options=opts)
    return bound(key, spec, lambda k: st.radio(label, opts, key=k, horizontal=True, **kw))


def bound_toggle(label: str, key: str, default: bool = False, **kw) -> bool:
    """A toggle whose state is ``?key=`` (true/false, also 1/0, yes/no, on/off)."""
    return bound(key, Spec("bool", default), lambda k: st.toggle(label, key=k, **kw))


def bound_text(label: str, key: str, default: str = "", max_len: int = TEXT_LIMIT, area: bool = False,
               **kw) -> str:
    """A text box (``area``: a text area) whose text is ``?key=``; longer text than ``max_len`` is refused."""
    widget = st.text_area if area else st.text_input
    return bound(key, Spec("text", default, max_len=max_len),
                 lambda k: widget(label, key=k, max_chars=max_len, **kw))
