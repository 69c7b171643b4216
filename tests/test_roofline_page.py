"""AppTest of the roofline page: every preset and mode renders, readouts come from the core, bad input is told."""

from __future__ import annotations

import pytest

from specdec_core import roofline as rl
from specdec_core import steptime as stp

PAGE = "views/roofline.py"


def metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def test_default_view_matches_the_seed(app_test):
    at = app_test(PAGE)
    assert not at.exception
    m = metrics(at)
    assert m["Ridge (FLOP/byte)"] == "295"
    assert m["Crossover batch B*"] == "74"
    assert m["Verify intensity"] == "64" and m["Decode intensity"] == "16"        # B (gamma + 1) at B = 16
    latex = " ".join(x.value for x in at.latex)
    assert "= 4B" in latex and "295/4 = 74" in latex and r"\frac{989" in latex
    text = " ".join(x.value for x in at.markdown)
    assert "crossover stays put: 74 against 74" in text and "halves to 37" in text
    assert "roofline model, not a measurement" in text
    assert any("790 TFLOP/s" in x.value and "4.3 TB/s" in x.value for x in at.info)
    # step-time readouts at the defaults: 8B target, 1B draft, context 2,048, alpha 0.8, B = 16
    cur = stp.spec_curve(stp.SHAPES["Llama-3.1-8B"], stp.SHAPES["Llama-3.2-1B (draft)"], rl.HARDWARE["H100 SXM"],
                         "bf16", 3, 0.8, 2048, 16)
    assert m["c(B)"] == f"{float(cur.c):.3f}"
    assert m["v(B)"] == f"{float(cur.v):.2f}"
    assert m["Speedup"] == f"{float(cur.speedup):.2f}x"
    link = f"/algebra?alpha=0.8&gamma=3&c={float(cur.c):.6f}&v={float(cur.v):.6f}"
    assert any(link in x.value for x in at.markdown), link
    assert m["Decode step (ms)"] == f"{float(cur.decode_s) * 1e3:.4g}"
    assert m["Verify pass (ms)"] == f"{float(cur.verify_s) * 1e3:.4g}"


def test_every_preset_and_mode_renders(app_test):
    at = app_test(PAGE)
    seen = 0
    for name, hw in rl.HARDWARE.items():
        at.selectbox(key="roofline.hw").set_value(name).run()
        for mode in rl.MODES:
            at.radio(key="roofline.mode").set_value(mode).run()
            assert not at.exception, (name, mode, at.exception)
            m = metrics(at)
            if hw.supports(mode):
                assert m["Ridge (FLOP/byte)"] == f"{rl.ridge(hw, mode):.0f}", (name, mode)
                assert m["Crossover batch B*"] == f"{rl.crossover_batch(hw, 3, mode):.0f}", (name, mode)
                assert len(at.get("plotly_chart")) == 4
                seen += 1
            else:
                assert "Ridge (FLOP/byte)" not in m
                assert any("not supported by this hardware" in w.value for w in at.warning), (name, mode)
    assert seen == sum(hw.supports(md) for hw in rl.HARDWARE.values() for md in rl.MODES) == 20


@pytest.mark.parametrize("query, gamma, batch", [({"gamma": "7", "batch": "100"}, 7, 100),
                                                 ({"gamma": "0", "batch": "1"}, 0, 1)])
def test_url_sets_gamma_and_batch(app_test, query, gamma, batch):
    at = app_test(PAGE, **query)
    assert not at.exception
    m = metrics(at)
    h100 = rl.HARDWARE["H100 SXM"]
    assert m["Verify intensity"] == f"{rl.verify_intensity(batch, gamma, 'bf16'):.0f}"
    assert m["Crossover batch B*"] == f"{rl.crossover_batch(h100, gamma, 'bf16'):.0f}"
    assert f"= {gamma + 1}B" in " ".join(x.value for x in at.latex)


def test_fp8_on_a100_from_the_url(app_test):
    at = app_test(PAGE, hw="A100 SXM 80GB", mode="fp8")
    assert not at.exception
    assert any("FP8 compute is not supported by this hardware" in w.value for w in at.warning)
    assert "Ridge (FLOP/byte)" not in metrics(at)


def test_w8a16_on_a100_says_no_fp8(app_test):
    at = app_test(PAGE, hw="A100 SXM 80GB", mode="w8a16")
    assert not at.exception
    text = " ".join(x.value for x in at.markdown)
    assert "has no FP8 tensor cores" in text
    assert f"halves from {rl.crossover_batch(rl.HARDWARE['A100 SXM 80GB'], 3):.0f}" in text


def test_custom_hardware_and_bad_values(app_test):
    at = app_test(PAGE, hw="Custom", bf16="500", fp8="0", bw="2")
    assert not at.exception
    assert metrics(at)["Ridge (FLOP/byte)"] == "250"
    at.radio(key="roofline.mode").set_value("fp8").run()
    assert any("not supported by this hardware" in w.value for w in at.warning)
    at = app_test(PAGE, hw="Custom", bw="0")
    assert not at.exception
    assert any("bandwidth must be a finite number > 0 TB/s" in e.value for e in at.error)
    at = app_test(PAGE, hw="Custom", bf16="-3")
    assert any("bf16 peak must be a finite number > 0" in e.value for e in at.error)
    at = app_test(PAGE, hw="Custom", bf16="1e308", bw="1e308")   # finite input, inf FLOP/s: once showed "nan"
    assert not at.exception
    assert any("from 1e-06 to 1e+06" in e.value for e in at.error)
    assert not any("nan" in m.value for m in at.metric)


def test_a_sub_unit_ridge_is_not_rounded_to_zero(app_test):
    # 1e-6 TFLOP/s over 1e4 TB/s: ridge 1e-10 FLOP/byte. Shown as "0" it read as a broken page.
    at = app_test(PAGE, hw="Custom", bf16="1e-6", fp8="0", bw="1e4")
    assert not at.exception
    m = metrics(at)
    assert m["Ridge (FLOP/byte)"] == "1e-10"
    assert m["Crossover batch B*"] == f"{rl.crossover_batch(rl.custom_hardware(1e-6, 1e4), 3):.2g}"


def test_out_of_range_url_values_warn(app_test):
    at = app_test(PAGE, gamma="99", ctx="200000")
    assert not at.exception
    warnings = " ".join(w.value for w in at.warning)
    assert "gamma=99" in warnings and "ctx=200000" in warnings


def test_memory_warning_at_long_context(app_test):
    at = app_test(PAGE, ctx="131072", batch="64")
    assert not at.exception
    assert any("would not fit on one device" in w.value for w in at.warning)


def test_weights_that_do_not_fit(app_test):
    at = app_test(PAGE, hw="L4", target="Llama-3.1-70B")
    assert not at.exception
    assert any("The weights alone (144 GB) exceed L4's 24 GB" in w.value for w in at.warning)


def test_probe_button_runs_and_reports_the_device(app_test):
    at = app_test(PAGE, probe="tiny (d=64)", timeout=120)
    at.button(key="probe_run").click().run()
    assert not at.exception
    m = metrics(at)
    assert m["Measured matmul rate"].endswith("GFLOP/s") and m["Measured copy bandwidth"].endswith("GB/s")
    assert any("Measured on CPU" in c.value for c in at.caption)
    assert len(at.get("plotly_chart")) == 5
