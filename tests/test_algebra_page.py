"""AppTest of the algebra page: every readout equals specdec_core, edges are exact, bad input is refused."""

from __future__ import annotations

import re

import numpy as np
import pytest

from specdec_core import algebra, presets
from specdec_core.simulate import simulate_tokens_per_step, summarise

PAGE = "views/algebra.py"
SECTIONS = {"papers": "Published operating points", "seed": "The seed's numbers, recomputed",
            "temperature": "Why alpha changes with temperature"}


def texts(at) -> list[str]:
    """Every piece of text the page shows (markdown, formulas, metrics, alerts, captions)."""
    out = [m.value for m in at.markdown] + [x.value for x in at.latex] + [x.value for x in at.caption]
    out += [f"{m.label} {m.value} {m.delta or ''}" for m in at.metric]
    for alert in (at.warning, at.info, at.success, at.error):
        out += [a.value for a in alert]
    return out


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def assert_clean(at) -> None:
    """No exception, no error box, and never NaN or inf on screen."""
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.error) == 0, [e.value for e in at.error]
    for t in texts(at):
        assert not re.search(r"\bnan\b|\binf\b|infinity|∞", t, re.IGNORECASE), t


def assert_readouts(at, alpha: float, gamma: int, c: float, v: float) -> None:
    """The four metrics and the substituted formulas equal the core's numbers (constant-alpha mode)."""
    en, cost, s = (
        algebra.expected_tokens(alpha, gamma),
        algebra.step_cost(gamma, c, v),
        algebra.speedup(alpha, gamma, c, v),
    )
    g, sg = algebra.best_gamma(alpha, c, v, 32)
    m = metrics(at)
    assert m["Tokens per step E[N]"] == f"{en:.3f}"
    assert m["Step cost"] == f"{cost:.3f}"
    assert m["Speedup"] == f"{s:.2f}x"
    assert m["Best integer gamma"] == str(g)
    assert any(f"{sg:.2f}x at best" == (x.delta or "") for x in at.metric)
    formulas = " ".join(x.value for x in at.latex)
    assert f"= {cost:.3f}" in formulas
    assert f"\\frac{{{en:.3f}}}{{{cost:.3f}}} = {s:.2f}\\times" in formulas
    lo, hi = algebra.speedup_limits(gamma, c, v)
    assert f"= {lo:.2f}\\times" in formulas and f"= {hi:.2f}\\times" in formulas
    be = algebra.break_even_alpha(gamma, c, v)
    line = next(t for t in (x.value for x in at.markdown) if "Break-even alpha" in t)
    if be is None:
        assert "none" in line and "No alpha in [0, 1] pays" in line
    elif be == 0.0:
        assert "Any alpha breaks even" in line
    else:
        assert f"{be:.4f}" in line


def test_default_is_the_seed_headline(app_test):
    at = app_test(PAGE)
    assert_clean(at)
    assert_readouts(at, 0.7, 3, 0.1, 1.0)
    assert metrics(at)["Speedup"] == "1.95x" and metrics(at)["Tokens per step E[N]"] == "2.533"
    formulas = " ".join(x.value for x in at.latex)
    assert r"\frac{1-0.7^{4}}{1-0.7} = 2.533" in formulas
    assert "= 0.77\\times" in formulas and "= 3.08\\times" in formulas
    assert not [w for w in at.warning if "slowdown" in w.value.lower()]


def test_query_params_open_the_slowdown_case(app_test):
    at = app_test(PAGE, alpha="0.8", gamma="4", c="0.05", v="3.5")
    assert_clean(at)
    assert metrics(at)["Speedup"] == "0.91x"
    assert any("slowdown" in w.value.lower() for w in at.warning)
    assert_readouts(at, 0.8, 4, 0.05, 3.5)
    at2 = app_test(PAGE, alpha="0.8", gamma="4", c="0.05", v="1")
    assert metrics(at2)["Speedup"] == "2.80x"
    assert not any("slowdown" in w.value.lower() for w in at2.warning)


@pytest.mark.parametrize(
    "alpha, gamma, c, v",
    [
        (1.0, 3, 0.1, 1.0),
        (0.0, 3, 0.1, 1.0),
        (0.7, 0, 0.1, 1.0),
        (0.7, 3, 0.0, 1.0),
        (1.0, 16, 0.0, 1.0),
        (0.0, 0, 0.0, 5.0),
        (0.5, 3, 1.0, 2.0),
        (1.0, 0, 1.0, 1.0),
    ],
)
def test_edges_show_exact_numbers(app_test, alpha, gamma, c, v):
    at = app_test(PAGE, alpha=str(alpha), gamma=str(gamma), c=str(c), v=str(v))
    assert_clean(at)
    assert_readouts(at, alpha, gamma, c, v)
    if alpha == 1.0:
        assert any(rf"\gamma + 1 = {gamma + 1}" in x.value for x in at.latex)
        assert metrics(at)["Tokens per step E[N]"] == f"{gamma + 1}.000"


def test_break_even_in_words_when_nothing_pays(app_test):
    at = app_test(PAGE, alpha="0.5", gamma="3", c="1", v="2")  # cost 5 > gamma + 1 = 4
    assert algebra.break_even_alpha(3, 1.0, 2.0) is None
    assert any("No alpha in [0, 1] pays" in m.value for m in at.markdown)


def test_cap_note_when_drafts_are_free(app_test):
    at = app_test(PAGE, alpha="0.9", c="0")
    assert metrics(at)["Best integer gamma"] == "32"
    assert any("search cap" in x.value for x in at.caption)


def test_slider_and_box_change_the_readouts(app_test):
    at = app_test(PAGE)
    at.slider(key="algebra.alpha__slider").set_value(0.8).run()
    assert_clean(at)
    assert_readouts(at, 0.8, 3, 0.1, 1.0)
    at.number_input(key="algebra.gamma").set_value(5).run()
    assert_readouts(at, 0.8, 5, 0.1, 1.0)
    at.number_input(key="algebra.c").set_value(0.0123).run()  # typed exactly, not snapped to the slider step
    assert_readouts(at, 0.8, 5, 0.0123, 1.0)


@pytest.mark.parametrize(
    "param, value", [("alpha", "1.5"), ("gamma", "40"), ("gamma", "2.5"), ("c", "-1"), ("v", "0.1"), ("alpha", "abc")]
)
def test_out_of_range_url_values_are_refused_with_a_message(app_test, param, value):
    at = app_test(PAGE, **{param: value})
    assert_clean(at)
    assert any(param in w.value and ("allowed" in w.value.lower() or "integer" in w.value) for w in at.warning)
    # Whatever value the widgets settled on, the readouts are the core's numbers for it.
    held = {k: at.number_input(key=f"algebra.{k}").value for k in ("alpha", "gamma", "c", "v")}
    assert 0 <= held["alpha"] <= 1 and 0 <= held["gamma"] <= 16 and 0 <= held["c"] <= 1 and 0.5 <= held["v"] <= 5
    assert_readouts(at, held["alpha"], held["gamma"], held["c"], held["v"])


def test_decay_mode_readouts_and_gap(app_test):
    at = app_test(PAGE, mode="decay", alpha="0.9", gamma="6", c="0.05", rho="0.8")
    assert_clean(at)
    aj = algebra.decay_alphas(0.9, 0.8, 6)
    en = algebra.expected_tokens_positional(aj)
    s = algebra.speedup_positional(aj, 0.05, 1.0)
    m = metrics(at)
    assert m["Tokens per step E[N]"] == f"{en:.3f}" and m["Speedup"] == f"{s:.2f}x"
    g, sg = algebra.best_gamma_positional(algebra.decay_alphas(0.9, 0.8, 32), 0.05, 1.0)
    assert m["Best integer gamma"] == str(g)
    assert any(f"= {en:.3f}" in x.value and r"\prod" in x.value for x in at.latex)
    gap = algebra.positional_gap(aj, 0.05, 1.0)
    note = " ".join(i.value for i in at.info)
    assert f"{100 * gap['rel_error']:+.1f}%" in note and f"{gap['en_constant']:.3f}" in note


def test_table_mode_uses_typed_rates(app_test):
    at = app_test(PAGE, mode="table", gamma="4", aj="0.95, 0.5, 0.9")  # fourth position from the decay model
    assert_clean(at)
    aj = np.array([0.95, 0.5, 0.9, algebra.decay_alphas(0.7, 0.9, 4)[3]])
    assert metrics(at)["Tokens per step E[N]"] == f"{algebra.expected_tokens_positional(aj):.3f}"
    assert metrics(at)["Speedup"] == f"{algebra.speedup_positional(aj, 0.1, 1.0):.2f}x"


def test_table_mode_refuses_bad_rates(app_test):
    at = app_test(PAGE, mode="table", aj="0.9, 1.7")
    assert_clean(at)
    assert any("[0, 1]" in w.value for w in at.warning)
    aj = algebra.decay_alphas(0.7, 0.9, 3)
    assert metrics(at)["Tokens per step E[N]"] == f"{algebra.expected_tokens_positional(aj):.3f}"


def test_monte_carlo_summary_is_the_simulation(app_test):
    at = app_test(PAGE, alpha="0.8", gamma="8")
    tokens = simulate_tokens_per_step(np.full(8, 0.8), 200_000, seed=0)
    mc = summarise(tokens)
    line = next(m.value for m in at.markdown if m.value.startswith("Simulated:"))
    pmf = algebra.accepted_length_pmf(0.8, 8)
    assert f"mean **{mc['mean']:.3f}**" in line and f"P99 **{mc['p99']:g}**" in line
    assert (
        f"exact: mean {algebra.expected_tokens(0.8, 8):.3f}, P50 {algebra.pmf_quantile(pmf, 0.5)}, "
        f"P99 {algebra.pmf_quantile(pmf, 0.99)}" in line
    )


@pytest.mark.parametrize("row", presets.LEVIATHAN_ROWS + presets.CHEN_ROWS, ids=lambda r: r.name)
def test_preset_loads_and_compares(app_test, row):
    prefix = "Leviathan" if row in presets.LEVIATHAN_ROWS else "Chen"
    at = app_test(PAGE)
    at.selectbox(key="algebra.preset").select(f"{prefix}: {row.name}").run()
    assert_clean(at)
    alpha = (
        row.alpha if row.alpha is not None else round(algebra.implied_alpha(row.reported_speedup, row.gamma, row.c), 4)
    )
    ic = algebra.implied_c(row.alpha, row.gamma, row.reported_speedup) if row.alpha is not None else None
    c = row.c if row.c is not None else (round(ic, 4) if ic is not None else 0.0)  # none >= 0: the ceiling c = 0
    assert_readouts(at, alpha, row.gamma, c, 1.0)
    pred = algebra.speedup(alpha, row.gamma, c)
    msg = " ".join(s.value for s in at.success)
    assert f"{pred:.2f}x against the reported {row.reported_speedup:.2f}x" in msg
    assert f"ratio {row.reported_speedup / pred:.2f}" in msg
    if row.alpha is None or row.c is None:
        assert "back-solved" in msg


def test_paper_tables_are_computed(app_test):
    at = app_test(PAGE)
    lev = next(d.value for d in at.dataframe if "predicted at c = 0.015" in d.value.columns)
    for r, (_, got) in zip(presets.LEVIATHAN_ROWS, lev.iterrows()):
        pred = algebra.speedup(r.alpha, r.gamma, presets.T5_SMALL_C)
        assert got["predicted at c = 0.015"] == f"{pred:.2f}x"
        assert got["reported / predicted"] == f"{r.reported_speedup / pred:.2f}"
        ic = algebra.implied_c(r.alpha, r.gamma, r.reported_speedup)
        assert got["c that reproduces it (v = 1, back-solved)"] == (f"{ic:.4f}" if ic is not None else "none >= 0")
    chen = next(d.value for d in at.dataframe if "alpha implied (v = 1, back-solved)" in d.value.columns)
    for r, (_, got) in zip(presets.CHEN_ROWS, chen.iterrows()):
        assert (
            got["alpha implied (v = 1, back-solved)"]
            == f"{algebra.implied_alpha(r.reported_speedup, 4, presets.CHEN_C):.3f}"
        )
    assert any("larger drafts need a larger c" in m.value for m in at.markdown)


def test_seed_tables_are_computed(app_test):
    at = app_test(PAGE, section="seed")
    cases = next(d.value for d in at.dataframe if "note" in d.value.columns)
    assert list(cases["speedup"]) == ["1.95x", "2.80x", "0.91x"]
    search = next(d.value for d in at.dataframe if "best gamma" in d.value.columns)
    for want, (_, got) in zip(algebra.seed_table(presets.SEED_TABLE_ROWS), search.iterrows()):
        assert int(got["best gamma"]) == want["gamma"] and got["speedup"] == f"{want['speedup']:.2f}x"


@pytest.mark.parametrize("section", [*SECTIONS, "all"])
def test_the_section_chooser_shows_only_the_chosen_section(app_test, section):
    """A shared ?section= opens that view; the sections not shown are not drawn, and the model is."""
    at = app_test(PAGE, **({} if section == "papers" else {"section": section}))
    assert_clean(at)
    assert at.radio(key="algebra.section").value == section
    heads = [h.value for h in at.subheader]
    for key, head in SECTIONS.items():  # the chosen section, and only it (or all three)
        assert (head in heads) == (section in (key, "all")), (key, heads)
    assert_readouts(at, 0.7, 3, 0.1, 1.0)  # the model above the chooser, at the defaults
    other = "seed" if section != "seed" else "temperature"
    at.radio(key="algebra.section").set_value(other).run()  # choosing a section keeps the sliders
    assert_clean(at)
    assert SECTIONS[other] in [h.value for h in at.subheader] and at.query_params["section"] == other
    assert_readouts(at, 0.7, 3, 0.1, 1.0)
    at.slider(key="algebra.alpha__slider").set_value(0.8).run()  # a slider step keeps the chosen section
    assert_readouts(at, 0.8, 3, 0.1, 1.0)
    assert SECTIONS[other] in [h.value for h in at.subheader]


def test_greedy_note(app_test):
    at = app_test(PAGE, section="temperature")
    assert any("argmax" in m.value and "match rate" in m.value for m in at.markdown)


def _array(x) -> np.ndarray:
    """A Plotly spec array: a plain list, or {'dtype', 'bdata', 'shape'} base64 typed array."""
    if isinstance(x, dict):
        import base64

        arr = np.frombuffer(base64.b64decode(x["bdata"]), dtype=np.dtype(x["dtype"]))
        return arr.reshape([int(d) for d in str(x.get("shape", arr.size)).split(",")])
    return np.asarray(x)


def _charts(at) -> list[dict]:
    import json

    return [json.loads(el.proto.spec) for el in at.get("plotly_chart")]


def test_figures_plot_the_core_numbers(app_test):
    at = app_test(PAGE, alpha="0.8", gamma="4", c="0.05", v="3.5")
    gamma_fig, alpha_fig, pmf_fig = _charts(at)  # the law of N is the default below the curves
    at.radio(key="algebra.fig").set_value("heat").run()  # the heat map is the other choice
    assert_clean(at)
    assert [f["layout"]["title"]["text"] for f in _charts(at)[:2]] == [
        gamma_fig["layout"]["title"]["text"],
        alpha_fig["layout"]["title"]["text"],
    ]
    heat = _charts(at)[2]
    gs = np.arange(17)
    np.testing.assert_allclose(_array(gamma_fig["data"][0]["y"]), algebra.expected_tokens(0.8, gs))
    np.testing.assert_allclose(_array(gamma_fig["data"][1]["y"]), algebra.speedup(0.8, gs, 0.05, 3.5))
    star = gamma_fig["data"][-1]
    assert (star["x"][0], star["y"][0]) == pytest.approx(algebra.best_gamma(0.8, 0.05, 3.5, 16))
    curves = {t["name"]: _array(t["y"]) for t in alpha_fig["data"] if t["name"].startswith("gamma")}
    np.testing.assert_allclose(curves["gamma = 8"], algebra.speedup(np.linspace(0, 1, 101), 8, 0.05, 3.5))
    a, cs = np.linspace(0, 1, 201), np.linspace(0, 0.5, 201)
    g, s = algebra.best_gamma_map(a, cs, 3.5, 32)
    np.testing.assert_array_equal(_array(heat["data"][0]["z"]), s.astype(np.float32))
    np.testing.assert_array_equal(_array(heat["data"][1]["z"]), g)
    line = heat["data"][2]
    b = algebra.break_even_boundary(cs, 3.5, 32)
    np.testing.assert_allclose(_array(line["y"]), b[np.isfinite(b)])
    exact, simulated = pmf_fig["data"][0], pmf_fig["data"][1]
    np.testing.assert_allclose(_array(exact["y"]), algebra.accepted_length_pmf(0.8, 4))
    freq = np.bincount(simulate_tokens_per_step(np.full(4, 0.8), 200_000, seed=0) - 1, minlength=5) / 200_000
    np.testing.assert_allclose(_array(simulated["y"]), freq)


def test_preset_from_url_loads_it_and_offers_to_reload_it(app_test):
    name = "Leviathan: EnDe, T5-small, temp 0"
    at = app_test(PAGE, preset=name)  # the URL names a preset: the controls take it
    assert_clean(at)
    assert_readouts(at, 0.75, 7, 0.015, 1.0)
    assert metrics(at)["Speedup"] == "3.26x"
    assert any("Source: Leviathan" in s.value for s in at.success)
    assert all(b.key != "reload" for b in at.button)  # nothing to reload yet
    at.number_input(key="algebra.alpha").set_value(0.5).run()  # moving a control does not reload it
    assert_readouts(at, 0.5, 7, 0.015, 1.0)
    at.button(key="reload").click().run()
    assert_clean(at)
    assert_readouts(at, 0.75, 7, 0.015, 1.0)
    assert metrics(at)["Speedup"] == "3.26x"
    assert len(at.button) == 0 or all(b.key != "reload" for b in at.button)  # nothing left to reload


def test_spread_sentence_uses_the_exact_pmf(app_test):
    at = app_test(PAGE)
    pmf = algebra.accepted_length_pmf(0.7, 3)
    assert any(
        f"{pmf[0]:.1%} of steps emit a single token and {pmf[-1]:.1%} emit all 4" in m.value for m in at.markdown
    )
    at0 = app_test(PAGE, gamma="0")
    assert any("every step emits exactly one token" in m.value for m in at0.markdown)


# ------------------------------------------------------------ costs from a decoder shape ----
def _shape_costs(batch: int, ctx: int, hw: str = "H100 SXM", mode: str = "bf16", kv: str = "bf16"):
    """c and v(gamma) for gamma = 0..32, 8B target / 1B draft, from specdec_core.steptime directly."""
    from specdec_core import roofline, steptime

    return steptime.gamma_costs(
        steptime.SHAPES["Llama-3.1-8B"],
        steptime.SHAPES["Llama-3.2-1B (draft)"],
        roofline.HARDWARE[hw],
        mode,
        ctx,
        batch,
        32,
        kv,
    )


def test_free_mode_says_the_search_holds_v_fixed(app_test):
    at = app_test(PAGE, section="seed")  # the slowdown link's note is in the seed's section
    assert_clean(at)
    assert any("holds v fixed while gamma changes" in c.value and "v grows with gamma" in c.value for c in at.caption)
    text = " ".join(m.value for m in at.markdown)  # the seed's slowdown link, explained
    assert "That link holds **v = 3.5 for every gamma**" in text and "gamma = 12 at 1.15x" in text
    assert "the best gamma at alpha 0.8 is **0** (1.00x)" in text


def test_decoder_shape_mode_at_batch_512_context_256(app_test):
    at = app_test(PAGE, cost="shape", batch="512", ctx="256", alpha="0.8", fig="heat")
    assert_clean(at)
    costs = _shape_costs(512, 256)
    m = metrics(at)
    assert m["c at B = 512"] == f"{costs.c:.4f}" and m["v(gamma = 3) at B = 512"] == f"{costs.v[3]:.3f}"
    assert "c" not in [n.key.split(".")[-1] for n in at.number_input]  # no free c and v boxes
    assert_readouts_shape(at, 0.8, 3, costs)
    assert m["Best integer gamma"] == "0"  # do not speculate
    text = " ".join(x.value for x in at.markdown)
    assert "**do not speculate** (gamma = 0, 1.00x)" in text
    assert f"raises the step cost from 1 to {costs.c + costs.v[1]:.3f} target steps" in text
    table = at.dataframe[0].value
    assert list(table["gamma"]) == list(range(9)) and list(table["v(gamma)"])[1] == f"{costs.v[1]:.3f}"
    figs = {f["layout"]["title"]["text"].split(":")[0]: f for f in _charts(at)}
    gamma_fig = figs["Tokens per step and speedup against draft length"]
    heat = next(f for t, f in figs.items() if t.startswith("Best integer gamma"))
    np.testing.assert_allclose(
        _array(gamma_fig["data"][1]["y"]), algebra.speedup(0.8, np.arange(17), costs.c, costs.v[:17])
    )
    assert "v(gamma) from the decoder shape" in heat["layout"]["title"]["text"]
    alphas, cs = np.linspace(0, 1, 201), np.linspace(0, 0.5, 201)
    np.testing.assert_array_equal(_array(heat["data"][1]["z"]), algebra.best_gamma_map(alphas, cs, costs.v, 32)[0])
    assert "Why this gamma" in figs


def assert_readouts_shape(at, alpha: float, gamma: int, costs) -> None:
    """The readouts equal the core's numbers with c and v(gamma) from the shape, the search using v(gamma)."""
    v = float(costs.v[gamma])
    m = metrics(at)
    assert m["Step cost"] == f"{algebra.step_cost(gamma, costs.c, v):.3f}"
    assert m["Speedup"] == f"{algebra.speedup(alpha, gamma, costs.c, v):.2f}x"
    g, s = algebra.best_gamma(alpha, costs.c, costs.v, 32)
    assert m["Best integer gamma"] == str(g)
    assert any(f"{s:.2f}x at best" == (x.delta or "") for x in at.metric)


def test_decoder_shape_mode_batch_moves_v_and_the_best_gamma(app_test):
    at = app_test(PAGE, cost="shape", ctx="256", alpha="0.8")
    assert_clean(at)
    small = _shape_costs(16, 256)
    assert metrics(at)["Best integer gamma"] == str(algebra.best_gamma(0.8, small.c, small.v, 32)[0]) == "4"
    assert_readouts_shape(at, 0.8, 3, small)
    at.number_input(key="algebra.batch").set_value(512).run()
    assert_clean(at)
    large = _shape_costs(512, 256)
    assert metrics(at)["v(gamma = 3) at B = 512"] == f"{large.v[3]:.3f}" != f"{small.v[3]:.3f}"
    assert metrics(at)["Best integer gamma"] == "0"
    assert_readouts_shape(at, 0.8, 3, large)
    at.radio(key="algebra.cost").set_value("free").run()  # back to free c and v
    assert_clean(at)
    assert "Best integer gamma" in metrics(at) and "c at B = 512" not in metrics(at)


def test_decoder_shape_mode_with_decay_rates_searches_with_v_by_gamma(app_test):
    at = app_test(PAGE, cost="shape", batch="256", ctx="2048", alpha="0.9", mode="decay")
    assert_clean(at)
    costs = _shape_costs(256, 2048)
    rates = algebra.decay_alphas(0.9, 0.9, 32)
    g, s = algebra.best_gamma_positional(rates, costs.c, costs.v)
    assert metrics(at)["Best integer gamma"] == str(g)
    assert any(f"{s:.2f}x at best" == (x.delta or "") for x in at.metric)


def test_decoder_shape_mode_fp8_kv_and_unsupported_fp8(app_test):
    at = app_test(PAGE, cost="shape", prec="fp8", kv="fp8", ctx="16384", batch="64")
    assert_clean(at)
    costs = _shape_costs(64, 16384, mode="fp8", kv="fp8")
    assert metrics(at)["v(gamma = 3) at B = 64"] == f"{costs.v[3]:.3f}"
    at = app_test(PAGE, cost="shape", hw="A100 SXM 80GB", prec="fp8")
    assert_clean(at)
    assert any("no FP8 tensor cores" in w.value and "using BF16" in w.value for w in at.warning)
    assert metrics(at)["v(gamma = 3) at B = 16"] == f"{_shape_costs(16, 2048, hw='A100 SXM 80GB').v[3]:.3f}"


def test_the_roofline_link_opens_the_same_workload(app_test):
    """The roofline page's link carries the shape; the algebra then shows the roofline's own c(B) and v(B)."""
    from urllib.parse import parse_qsl, urlparse

    from specdec_core import roofline, steptime

    roof = app_test("views/roofline.py", batch="128", ceil="achievable")
    link = next(x.value for x in roof.markdown if "/algebra?cost=shape" in x.value)
    url = link[link.index("(/algebra?") + 1 : link.index(")", link.index("(/algebra?"))]
    query = dict(parse_qsl(urlparse(url).query))
    assert query["batch"] == "128" and query["ceil"] == "achievable" and "v" not in query
    at = app_test(PAGE, **query)
    assert_clean(at)
    ach = roofline.achievable(roofline.HARDWARE["H100 SXM"], 0.799, 0.896)
    cur = steptime.spec_curve(
        steptime.SHAPES["Llama-3.1-8B"], steptime.SHAPES["Llama-3.2-1B (draft)"], ach, "bf16", 3, 0.8, 2048, 128
    )
    m = metrics(at)
    assert m["c at B = 128"] == f"{float(cur.c):.4f}" and m["v(gamma = 3) at B = 128"] == f"{float(cur.v):.3f}"
    assert m["Speedup"] == f"{float(cur.speedup):.2f}x" == {x.label: x.value for x in roof.metric}["Speedup at B = 128"]


# ------------------------------------------------------ the paper's table, deep links, temperature ----
# Leviathan et al., ICML 2023, Table 2, typed in from the paper: (task, draft, temp, gamma, alpha, speedup).
TABLE_2 = [
    ("EnDe", "T5-small", 0, 7, 0.75, 3.4),
    ("EnDe", "T5-base", 0, 7, 0.80, 2.8),
    ("EnDe", "T5-large", 0, 7, 0.82, 1.7),
    ("EnDe", "T5-small", 1, 7, 0.62, 2.6),
    ("EnDe", "T5-base", 1, 5, 0.68, 2.4),
    ("EnDe", "T5-large", 1, 3, 0.71, 1.4),
    ("CNNDM", "T5-small", 0, 5, 0.65, 3.1),
    ("CNNDM", "T5-base", 0, 5, 0.73, 3.0),
    ("CNNDM", "T5-large", 0, 3, 0.74, 2.2),
    ("CNNDM", "T5-small", 1, 5, 0.53, 2.3),
    ("CNNDM", "T5-base", 1, 3, 0.55, 2.2),
    ("CNNDM", "T5-large", 1, 3, 0.56, 1.7),
]


def test_all_twelve_rows_of_table_2_with_their_temperatures(app_test):
    assert [(r.task, r.draft, r.temperature, r.gamma, r.alpha, r.reported_speedup) for r in presets.LEVIATHAN_ROWS] == [
        (t, d, float(temp), g, a, s) for t, d, temp, g, a, s in TABLE_2
    ]
    at = app_test(PAGE)
    assert_clean(at)
    lev = next(d.value for d in at.dataframe if "predicted at c = 0.015" in d.value.columns)
    assert len(lev) == 12
    assert list(lev["temp"]) == [("0 (argmax)" if t == 0 else "1 (sampling)") for _, _, t, *_ in TABLE_2]


@pytest.mark.parametrize("name", ["EnDe, T5-base, temp 1", "CNNDM, T5-base, temp 1", "EnDe, T5-small, temp 0"])
def test_a_preset_deep_link_sets_the_controls(app_test, name):
    """?preset= used to name the preset while the controls kept the seed case (0.7, 3, 0.1)."""
    row = next(r for r in presets.LEVIATHAN_ROWS if r.name == name)
    at = app_test(PAGE, preset=f"Leviathan: {name}")
    assert_clean(at)
    ic = algebra.implied_c(row.alpha, row.gamma, row.reported_speedup)
    c = row.c if row.c is not None else (round(ic, 4) if ic is not None else 0.0)
    assert_readouts(at, row.alpha, row.gamma, c, 1.0)
    if row.c is None and ic is None:
        assert any("no c >= 0 reproduces the report" in x.value for x in at.success)
    # a value given in the link beside the preset still wins
    at = app_test(PAGE, preset=f"Leviathan: {name}", alpha="0.5")
    assert_readouts(at, 0.5, row.gamma, c, 1.0)


def test_temperature_explained_with_both_directions(app_test):
    at = app_test(PAGE, section="temperature")
    assert_clean(at)
    shown = " ".join(texts(at))
    assert r"\arg\max q=\arg\max p" in shown and r"1-\mathbb{E}\big[\mathrm{TV}(p,q)\big]" in shown
    contexts = next(d.value for d in at.dataframe if "alpha at T = 0" in d.value.columns)
    assert list(contexts["alpha at T = 0"]) == ["0.00", "1.00"] and list(contexts["alpha at T = 1"]) == ["0.94", "0.50"]
    pairs = next(d.value for d in at.dataframe if "alpha, temp 0" in d.value.columns)
    lookup = {r["target / draft"]: (r["alpha, temp 0"], r["alpha, temp 1"]) for _, r in pairs.iterrows()}
    assert lookup["T5-XXL (EnDe) / T5-small"] == (0.75, 0.62)  # sharper at T = 0: falls
    assert lookup["GPT-like 97M / 6M GPT-like"] == (0.88, 0.89)  # Table 3: rises
    assert "opposite directions" in shown and "GPT-like 97M / 6M GPT-like keeps slightly more" in shown


def test_decoder_shape_mode_with_bad_custom_hardware_says_so_and_falls_back(app_test):
    at = app_test(PAGE, cost="shape", hw="Custom", bw="0")
    assert not at.exception
    assert any("bandwidth must be a finite number > 0 TB/s" in e.value for e in at.error)
    assert any("the free c and v below are used" in c.value for c in at.caption)
    assert_readouts(at, 0.7, 3, 0.1, 1.0)


def test_a_verify_cost_below_one_target_step_is_refused_with_one_line(app_test) -> None:
    at = app_test("views/algebra.py", v="0.5")
    assert not at.exception
    lines = [w.value for w in at.warning if "v=0.5" in w.value]
    assert len(lines) == 1 and "from 1 to 5" in lines[0], [w.value for w in at.warning]
    assert at.number_input(key="algebra.v").value == 1.0 and at.number_input(key="algebra.v").min == 1.0
    ok = app_test("views/algebra.py", v="1.5")
    assert ok.number_input(key="algebra.v").value == 1.5 and not [w for w in ok.warning if "v=" in w.value]
