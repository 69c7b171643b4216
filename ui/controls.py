"""Widgets bound to URL query params, so that any view can be shared by its address.

Every control uses Streamlit's native ``bind="query-params"``: the widget key is the parameter name.
A value in the URL that is outside the allowed range is reported on the page (never a traceback)
and replaced by the default.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import streamlit as st

Number = TypeVar("Number", int, float)


def _url_value_out_of_range(key: str, lo: float, hi: float, integer: bool) -> str | None:
    """A message if ?key=... is present but unparsable or outside [lo, hi], else None."""
    raw = st.query_params.get(key)
    if raw is None:
        return None
    try:
        x = float(raw)
    except ValueError:
        return f"`{key}={raw}` in the URL is not a number; using the default. Allowed: {lo:g} to {hi:g}."
    if integer and not x.is_integer():
        return f"`{key}={raw}` in the URL is not an integer (allowed: {lo:g} to {hi:g}); the box shows the value used."
    if not lo <= x <= hi:
        return f"`{key}={raw}` in the URL is outside the allowed range {lo:g} to {hi:g}; using the default."
    return None


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
    integer = isinstance(step, int) and isinstance(default, int)
    msg = _url_value_out_of_range(key, float(min_value), float(max_value), integer)
    if msg:
        st.warning(msg)
    slider_key = f"{key}__slider"

    def _from_slider() -> None:
        st.session_state[key] = st.session_state[slider_key]

    col_slider, col_box = st.columns([3, 1], vertical_alignment="bottom")
    with col_box:
        # Pass the default only on first creation: afterwards the slider's callback owns the state,
        # and Streamlit warns when a widget gets both a default and a Session State value.
        initial = {} if key in st.session_state else {"value": default}
        value = st.number_input(
            label, min_value=min_value, max_value=max_value, step=step, **initial,
            format=fmt, key=key, bind="query-params", label_visibility="collapsed",
            help=f"Type an exact value from {min_value} to {max_value}.",
        )
    st.session_state[slider_key] = value
    with col_slider:
        st.slider(
            label, min_value=min_value, max_value=max_value, step=step, format=fmt,
            key=slider_key, on_change=_from_slider, help=help,
        )
    return value


def bound_select(label: str, options: Sequence[str], key: str, default: str | None = None, **kw) -> str:
    """A selectbox whose choice is ``?key=``; an unknown value in the URL falls back to the default."""
    index = list(options).index(default) if default is not None else 0
    return st.selectbox(label, options, index=index, key=key, bind="query-params", **kw)


def bound_radio(label: str, options: Sequence[str], key: str, default: str | None = None, **kw) -> str:
    """A horizontal radio whose choice is ``?key=``."""
    index = list(options).index(default) if default is not None else 0
    return st.radio(label, options, index=index, key=key, bind="query-params", horizontal=True, **kw)


def bound_toggle(label: str, key: str, default: bool = False, **kw) -> bool:
    """A toggle whose state is ``?key=``."""
    return st.toggle(label, value=default, key=key, bind="query-params", **kw)
