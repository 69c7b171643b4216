"""The algebra page's step figures are built without Plotly's validation (ui.plainfig.PlainFigure): each must still
validate, and validating must not change what is sent; a misspelt property, the negative control, fails it."""

from __future__ import annotations

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from specdec_core import algebra
from ui.algebra.figures import alpha_figure, gamma_figure, pmf_figure
from ui.plainfig import PlainFigure, validating
from ui.theme import PRESENTER_PX, presenter_spec


def _step_figures() -> dict[str, go.Figure]:
    """Each step figure at the page's defaults (alpha 0.7, gamma 3, c 0.1, v 1), the curves per position too."""
    gammas, aj = np.arange(17), np.full(16, 0.7)
    tokens, speeds = algebra.expected_tokens(0.7, gammas), algebra.speedup(0.7, gammas, 0.1, 1.0)
    pos = (algebra.expected_tokens_prefixes(aj), algebra.speedup_prefixes(aj, 0.1, 1.0))
    grid = np.linspace(0.0, 1.0, 101)
    pmf = algebra.accepted_length_pmf_positional(aj[:3])
    return {
        "gamma": gamma_figure(gammas, tokens, speeds, (4, 2.0), 3),
        "gamma, per position": gamma_figure(gammas, tokens, speeds, (4, 2.0), 3, pos),
        "alpha": alpha_figure(grid, {g: algebra.speedup(grid, g, 0.1, 1.0) for g in (1, 2, 4)}, (0.7, 1.9)),
        "pmf": pmf_figure(pmf, pmf * 1.01, 1000, {"mean": 2.5, "P50": 2.0, "P99": 4.0}),
    }


@pytest.mark.parametrize("name", list(_step_figures()))
def test_a_plain_figure_validates_and_validation_changes_nothing(name: str) -> None:
    fig = _step_figures()[name]
    checked = go.Figure(fig.to_dict())  # raises on any property Plotly does not know
    assert json.loads(pio.to_json(checked, validate=False)) == json.loads(pio.to_json(fig, validate=False))
    assert len(fig.data) >= 2 and fig.layout.title.text
    assert presenter_spec(fig)["layout"]["title"]["font"]["size"] == PRESENTER_PX["title"]  # presenter mode takes it


def test_a_misspelt_property_fails_validation() -> None:
    plain = PlainFigure.of([{"type": "scatter", "x": [0, 1], "y": [1, 2], "lnie": {"color": "red"}}], {"title": "t"})
    with pytest.raises(ValueError, match="lnie"):
        go.Figure(plain.figure().to_dict())
    with validating(), pytest.raises(ValueError, match="lnie"):
        plain.figure()
