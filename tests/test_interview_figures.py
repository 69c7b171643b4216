"""Each drill kind's figure: built for many seeds at both sizes, its own branch, and drawn from the drill's answer."""

from __future__ import annotations

import numpy as np
import pytest

from specdec_core import drills
from specdec_core.drill_kinds import DRILL_KINDS, SENIOR_KINDS
from ui.interview.figures import drill_figure


def _title(fig) -> str:
    return fig.layout.title.text


@pytest.mark.parametrize("kind", DRILL_KINDS)
def test_every_kind_draws_for_many_seeds_at_both_sizes(kind):
    for seed in range(4):
        for large in (False, True):
            fig = drill_figure(drills.make_drill(kind, seed), large)
            assert fig.data and _title(fig)


def test_each_senior_kind_has_its_own_branch():
    """A senior kind falling into another kind's branch (the crash of an earlier session) would share its title."""
    titles = {k: _title(drill_figure(drills.make_drill(k, "classroom"))) for k in DRILL_KINDS}
    for k in SENIOR_KINDS:
        assert [o for o, t in titles.items() if t == titles[k]] == [k], (k, titles[k])
    with pytest.raises(ValueError, match="no figure"):
        drill_figure(drills.Drill("nonsense", {}))


@pytest.mark.parametrize("seed", ["classroom", 1, 2, 3])
def test_senior_figures_show_the_answer(seed):
    kv = drills.make_drill("kv_batch", seed)
    marker = [t for t in drill_figure(kv).data if t.mode == "markers"][0]
    assert marker.x[0] == pytest.approx(kv.answer())

    rb = drills.make_drill("rollback_pages", seed)
    bars = {t.name: np.asarray(t.y) for t in drill_figure(rb).data}
    assert bars["rolled back"].sum() == rb.params["gamma"] - rb.params["accepted"]
    emptied = (bars["kept (cached + accepted)"] == 0) & (bars["rolled back"] > 0)   # pages left with no kept slot
    assert int(emptied.sum()) == rb.answer()

    sc = drills.make_drill("sample_compare", seed)
    kept = {t.name.split(":")[0]: np.asarray(t.y) for t in drill_figure(sc).data}
    assert kept["min(p, q)"].sum() - kept["p q"].sum() == pytest.approx(sc.answer(), abs=1e-12)

    tm = drills.make_drill("tree_mask", seed)
    z = np.asarray(drill_figure(tm).data[0].z)
    assert int(z.sum()) == tm.answer() and (np.triu(z, 1) == 0).all()               # ancestors come first


def test_each_kind_is_one_entry_in_each_layer():
    """A drill kind is one DrillKind (core), one DrillWords (prose) and one figure: the three registries agree,
    so a kind added to one and forgotten in another fails here instead of on the page."""
    from content.drill_text import WORDS
    from specdec_core.drill_kinds import KINDS
    from ui.interview.figures import FIGURES

    assert list(WORDS) == list(KINDS) and set(FIGURES) == set(KINDS)
