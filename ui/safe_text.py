"""User-supplied text made safe for the element that renders it.

Anything a visitor controls (a URL value, a typed prompt, a model's token) is echoed through one of these:

- ``md(text)`` for Markdown elements (st.markdown, st.warning, st.caption, st.info, labels): cut to a
  length, control characters made visible (so it stays on one line), and every ASCII punctuation character
  that can open a construct backslash-escaped, so no link, image, autolink, emphasis, code span, HTML tag,
  entity, colour directive, icon or formula can form.
- ``html_text(text)`` for HTML (st.html, or markdown with unsafe_allow_html): control characters made
  visible (no line break can end an HTML block), then ``html.escape``.
- ``clip(text)`` alone where the element shows text verbatim (st.code, a dataframe cell).
"""

from __future__ import annotations

import html
import re
import string
import unicodedata

ELLIPSIS = "\u2026"
ECHO_LIMIT = 60                         # characters of a user value echoed in a message
# C0 controls become their Unicode "control pictures" (U+2400..U+241F), DEL becomes U+2421.
_C0 = {i: chr(0x2400 + i) for i in range(0x20)} | {0x7F: "\u2421"}
# Punctuation that can open a Markdown construct anywhere in a line. Left out: - . , ; ' " / ? % =, which
# mean something only at the start of a line (lists, setext headings), and escaped output never starts one
# on its own (it has no line breaks; callers put it after their own words).
_MD_SPECIAL = frozenset(string.punctuation) - frozenset("-.,;'\"/?%=")
# GFM autolink literals (http://..., www...., a@b.c) are found in the text after escapes are resolved, so an
# escape cannot stop them; a zero-width space (U+200B) inside the trigger does.
ZWSP = "\u200b"
_AUTOLINK = re.compile(r"(?<=www)(?=\.)|(?<=:)(?=//)|(?<=@)", re.IGNORECASE)


def clip(text: str, limit: int = ECHO_LIMIT) -> str:
    """``text`` cut to at most ``limit`` characters, the last one an ellipsis when anything was cut."""
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    return text if len(text) <= limit else text[: limit - 1] + ELLIPSIS


def visible_char(ch: str, keep_newline: bool = False) -> str:
    """One character made visible: C0 controls as control pictures (newline as a return arrow, followed by a
    real newline when ``keep_newline``), other invisible or layout-changing code points (C1 controls, bidi
    and zero-width format characters, line and paragraph separators) as [U+XXXX]."""
    o = ord(ch)
    if ch == "\n":
        return "\u21b5\n" if keep_newline else "\u21b5"
    if ch == "\t":
        return "\u2192"
    if o in _C0:
        return _C0[o]
    if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"):
        return f"[U+{o:04X}]"
    return ch


def visible(text: str, keep_newline: bool = False) -> str:
    """``text`` with every control or invisible character made visible (see ``visible_char``)."""
    return "".join(visible_char(ch, keep_newline) for ch in text)


def md_escape(text: str) -> str:
    """Backslash before each punctuation character that can open a construct (CommonMark renders an escaped
    one as itself), so nothing in ``text`` starts Markdown, HTML, an entity, a Streamlit directive
    (:red[...], :material/...:) or a formula ($...$); a zero-width space inside "://", "www." and after "@"
    stops GFM's autolink literals, which escapes cannot. Control characters must already be made visible."""
    escaped = "".join("\\" + ch if ch in _MD_SPECIAL else ch for ch in text)
    return _AUTOLINK.sub(ZWSP, escaped)


def md(text: object, limit: int = ECHO_LIMIT) -> str:
    """User text for a Markdown element: cut to ``limit`` characters, made visible, escaped."""
    return md_escape(visible(clip(str(text), limit)))


def html_text(text: object, limit: int | None = None, keep_newline: bool = False) -> str:
    """User text for an HTML element: optionally cut, made visible, and HTML-escaped (quotes included).

    With ``keep_newline`` a newline stays a real newline after its arrow (for white-space: pre-wrap);
    render such HTML with st.html, never through Markdown, where a blank line would end the HTML block.
    """
    s = str(text) if limit is None else clip(str(text), limit)
    return html.escape(visible(s, keep_newline), quote=True)
