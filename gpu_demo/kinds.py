"""The token kinds, defined once: name, label, colour and a cue that does not rely on colour.

Read by the app (``ui.theme.KIND_STYLE``, the live token box) and by the CLI (its ANSI colours and plain
markers), so a correction is painted the same everywhere. Colours are Okabe-Ito (colour-blind safe).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    """How one token kind is named and drawn."""

    name: str
    label: str
    colour: str  # hex; "" = the page's text colour
    cue: str  # CSS-style non-colour cue: underline, line-through, overline, double-underline, none
    marker: str  # Plotly marker symbol for figures
    plain: tuple[str, str]  # brackets around the token where colour is unavailable (CLI --plain, screen readers)


KINDS: dict[str, Kind] = {
    "accepted": Kind("accepted", "accepted draft token", "#009E73", "underline", "circle", ("", "")),
    "rejected": Kind("rejected", "rejected draft token", "#D55E00", "line-through", "x", ("~", "~")),
    "correction": Kind("correction", "target correction", "#0072B2", "overline", "diamond", ("[", "]")),
    "bonus": Kind("bonus", "bonus token", "#CC79A7", "double-underline", "star", ("{", "}")),
    "target": Kind("target", "plain target token", "", "none", "circle", ("", "")),
}
EMITTED_KINDS = ("accepted", "correction", "bonus", "target")  # what a round can emit ("target": plain step)

_ANSI_CUE = {"underline": "4", "line-through": "9", "overline": "53", "double-underline": "21", "none": ""}


def ansi(kind: str) -> str:
    """ANSI escape that paints a terminal token in the kind's colour with its cue (24-bit colour)."""
    k = KINDS[kind]
    codes = []
    if k.colour:
        r, g, b = (int(k.colour[i : i + 2], 16) for i in (1, 3, 5))
        codes.append(f"38;2;{r};{g};{b}")
    if _ANSI_CUE[k.cue]:
        codes.append(_ANSI_CUE[k.cue])
    return f"\x1b[{';'.join(codes)}m" if codes else ""


ANSI_RESET = "\x1b[0m"
