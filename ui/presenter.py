"""Presenter mode, app-wide: one switch, kept in the URL (``?present=1``), for a classroom projector.

When it is on, every page gets larger type (app.py injects ``css()``), every Plotly chart larger text and tick
labels (every page draws its charts with ``show(fig)``, which passes each figure through
``ui.theme.presenter_spec``), and the sidebar starts collapsed. The interview's classroom mode uses the same CSS
and figure sizes.

The switch is app-wide, not a page's setting (ui/controls.py binds settings per page): its value lives in the
session, is read from ``?present=`` when that text changes (bad text gets one line and changes nothing), and is
written back to the URL on every page, so it survives st.navigation (which drops a page's query params when
another page opens) and a shared address reproduces it.

API for pages (all no-ops when presenter mode is off, so a page reads the same either way):

- ``on() -> bool``: whether presenter mode is on in this session.
- ``intro(text)``: a page's opening paragraph, folded like a secondary control when on.
- ``with secondary("More settings"):`` wraps controls a projector does not need: folded into a closed expander
  when on, drawn in place otherwise. The widgets still run (their values and URL binding stay); the block must
  not contain an expander itself (Streamlit does not nest them).
- ``show(fig, key=..., where=column)``: every chart, sized for the projector when on (``where`` defaults to the
  main area).
- ``slot = top()`` right after the page title, then ``with key_figure(slot):`` around the page's key figure:
  when on, the figure is drawn at the top; otherwise where the ``with`` stands.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from ui import chart_wire
from ui.chart_wire import WireFigure, wire_spec
from ui.controls import Spec
from ui.safe_text import md
from ui.theme import presenter_spec

PARAM = "present"
URL_ON = "1"                          # what the switch writes to the URL
_STATE = "_presenter.on"              # bool: the switch
_SEEN = "_presenter.seen"             # the URL text last applied or written
_REFUSED = "_presenter.refused"       # a one-line message about bad URL text, shown until the text changes
_TOGGLE = "_presenter.toggle"         # the sidebar widget's key
_SPEC = Spec("bool", False)


def on() -> bool:
    """Whether presenter mode is on in this session (False outside a Streamlit run)."""
    try:
        return bool(st.session_state.get(_STATE, False))
    except Exception:                 # no script run context: bare Python, a worker thread
        return False


def _set(value: bool) -> None:
    """Switch presenter mode and mirror it in the URL (absent when off)."""
    st.session_state[_STATE] = value
    if value:
        st.query_params[PARAM] = URL_ON
    elif PARAM in st.query_params:
        del st.query_params[PARAM]
    st.session_state[_SEEN] = URL_ON if value else None


def sync() -> bool:
    """Once per run, before the page (app.py): apply ``?present=`` when its text changed, or write it back when
    navigation dropped it. Returns on()."""
    raw = st.query_params.get(PARAM)
    if raw is not None and raw != st.session_state.get(_SEEN):
        st.session_state[_SEEN] = raw
        st.session_state.pop(_REFUSED, None)
        try:
            st.session_state[_STATE] = _SPEC.parse(raw)
        except ValueError as exc:
            st.session_state[_REFUSED] = (f"{PARAM}={md(raw, 40)} in the URL {exc}; presenter mode stays "
                                          f"{'on' if on() else 'off'}. Allowed: {_SPEC.allowed()}.")
    elif raw is None and on():
        _set(True)
    return on()


def _flip() -> None:
    """Callback of the sidebar toggle."""
    _set(bool(st.session_state[_TOGGLE]))
    st.session_state.pop(_REFUSED, None)


def switch() -> bool:
    """The sidebar toggle (app.py draws it on every page), with the one-line refusal of bad URL text above it."""
    refused = st.session_state.get(_REFUSED)
    if refused:
        st.warning(refused, icon=":material/link_off:")
    st.session_state[_TOGGLE] = on()
    st.toggle("Presenter mode", key=_TOGGLE, on_change=_flip,
              help="For a projector: larger type and chart labels on every page, the key figure first, secondary "
                   "controls folded away. Kept in the URL as ?present=1.")
    return on()


DATAFRAME_ZOOM = 1.3   # a dataframe's 14 px cells read at about 18 px, as the body text around them


def css(hide_sidebar: bool = False) -> str:
    """Projector CSS: larger text, headings, metrics, widget labels, inputs, tables and formulas; less top padding;
    optionally no sidebar at all (the interview's classroom mode). Number boxes and a slider's own numbers grow less:
    at 1.35rem a number box showed 0.7000 cut to "0.70". A dataframe draws its cells on a canvas, which CSS type
    sizes do not reach, so it is zoomed whole (its columns fit the narrower box it then lays out in)."""
    sidebar = """[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"],
    [data-testid="stExpandSidebarButton"] { display: none !important; }""" if hide_sidebar else ""
    return f"""<style>
    {sidebar}
    .stMainBlockContainer, [data-testid="stMainBlockContainer"] {{ max-width: 1600px; padding-top: 3rem; }}
    [data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li,
    [data-testid="stMarkdownContainer"] td, [data-testid="stMarkdownContainer"] th,
    [data-testid="stWidgetLabel"] p, .stRadio label p, .stTextInput input {{ font-size: 1.35rem !important; }}
    [data-testid="stSliderThumbValue"] p, [data-testid="stSliderTickBar"] p {{ font-size: 1.05rem !important; }}
    [data-testid="stCode"] code, .stCode code {{ font-size: 1.2rem !important; }}
    .katex-display .katex {{ font-size: 1.5em !important; }}
    h1 {{ font-size: 3rem !important; }} h2 {{ font-size: 2.5rem !important; }} h3 {{ font-size: 2rem !important; }}
    [data-testid="stMetricValue"], [data-testid="stMetricValue"] div,
    [data-testid="stMetricValue"] p {{ font-size: 2.8rem !important; }}
    [data-testid="stMetricLabel"] p, [data-testid="stCaptionContainer"],
    [data-testid="stCaptionContainer"] p {{ font-size: 1.2rem !important; }}
    .stButton button p, [data-testid="stPageLink"] p, [data-testid="stExpander"] summary p
    {{ font-size: 1.3rem !important; }}
    [data-testid="stTextArea"] textarea, [data-testid="stSelectbox"] input, [data-testid="stMultiSelect"] input,
    [data-testid="stTable"] td, [data-testid="stTable"] th {{ font-size: 1.25rem !important; }}
    [data-testid="stNumberInput"] input
    {{ font-size: 1rem !important; padding-left: 6px !important; padding-right: 4px !important; }}
    [data-testid="stDataFrame"] {{ zoom: {DATAFRAME_ZOOM}; width: 100% !important; }}
    </style>"""


def inject(hide_sidebar: bool = False) -> None:
    """Put the projector CSS on this page. Through Markdown in the sidebar: st.html's renderer loads lazily and
    showed the page at laptop sizes for about a second first (measured in a browser); Markdown's is always loaded,
    and the sidebar (drawn even when collapsed or hidden) gives it no room in the page."""
    st.sidebar.markdown(css(hide_sidebar), unsafe_allow_html=True)


def secondary(label: str = "More settings") -> AbstractContextManager:
    """Controls a projector does not need: a closed expander when presenter mode is on, in place otherwise."""
    return st.expander(label, expanded=False, icon=":material/tune:") if on() else st.container()


def intro(text: str, label: str = "About this page") -> None:
    """A page's opening prose: in place normally, a closed expander in presenter mode (the figure comes first)."""
    with secondary(label):
        st.markdown(text)


def top() -> DeltaGenerator:
    """An empty slot here (call right after the page title); key_figure(slot) fills it in presenter mode."""
    return st.container()


def key_figure(slot: DeltaGenerator) -> DeltaGenerator:
    """Where the key figure goes: ``slot`` (the top of the page) when on, else a container right here."""
    return slot if on() else st.container()


# ------------------------------------------------------------------------------------- charts ----
def _wired(fig) -> WireFigure:
    """A figure (a go.Figure or its dict) as it is sent: at presenter sizes when on, as ui.chart_wire's spec. A
    WireFigure (what ui.figure_cache hands out) is that spec already and passes as it is when presenter mode is off."""
    if isinstance(fig, WireFigure):
        return WireFigure(wire_spec(presenter_spec(fig.spec))) if on() else fig
    return WireFigure(wire_spec(presenter_spec(fig) if on() else fig))


def show(fig, *, where=st, **kwargs) -> DeltaGenerator:
    """Draw a Plotly figure (a go.Figure, its dict, or a WireFigure from ui.figure_cache) in ``where`` (the main
    area, a column or a container): at presenter sizes when on, sent as ui.chart_wire's spec without Streamlit's
    chart theme (so Plotly draws it once). Every page draws its charts through this one call.

    A figure built in st.cache_data is sized here, at display time, not when it was cached. Inside
    ``chart_wire.charts_last()`` a chart with no selection to return keeps its place and is sent at the block's end.
    """
    figure = _wired(fig)
    kwargs.setdefault("theme", None)
    if chart_wire.holding() and kwargs.get("on_select", "ignore") == "ignore":   # no selection to return
        slot = where.container()                                   # its place now, the chart at the block's end
        chart_wire.defer(lambda: slot.plotly_chart(figure, **kwargs))
        return slot
    return where.plotly_chart(figure, **kwargs)
