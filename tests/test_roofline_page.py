"""AppTest of the roofline page: every preset and mode renders, readouts come from the core, bad input is told."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest

from specdec_core import roofline, steptime

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
    cur = steptime.spec_curve(
        steptime.SHAPES["Llama-3.1-8B"],
        steptime.SHAPES["Llama-3.2-1B (draft)"],
        roofline.HARDWARE["H100 SXM"],
        "bf16",
        3,
        0.8,
        2048,
        16,
    )
    assert m["c(B)"] == f"{float(cur.c):.3f}"
    assert m["v(B)"] == f"{float(cur.v):.2f}"
    assert m["Speedup at B = 16"] == f"{float(cur.speedup):.2f}x"  # every speedup names its batch
    g, s = steptime.best_gamma_for_shape(
        steptime.SHAPES["Llama-3.1-8B"],
        steptime.SHAPES["Llama-3.2-1B (draft)"],
        roofline.HARDWARE["H100 SXM"],
        "bf16",
        0.8,
        2048,
        16,
    )
    assert m["Best gamma at B = 16"] == str(g) and any(x.delta == f"{s:.2f}x" for x in at.metric)
    # the link into the algebra carries the workload, not one v
    link = (
        "/algebra?cost=shape&target=Llama-3.1-8B&draft=Llama-3.2-1B%20%28draft%29&hw=H100%20SXM&ceil=datasheet"
        "&prec=bf16&batch=16&ctx=2048&alpha=0.8&gamma=3"
    )
    assert any(link in x.value for x in at.markdown), link
    assert not any("&v=" in x.value for x in at.markdown)
    assert m["Decode step (ms)"] == f"{float(cur.decode_s) * 1e3:.4g}"
    assert m["Verify pass (ms)"] == f"{float(cur.verify_s) * 1e3:.4g}"


@pytest.mark.slow
def test_every_preset_and_mode_renders(app_test):
    at = app_test(PAGE)
    seen = 0
    for name, hw in roofline.HARDWARE.items():
        at.selectbox(key="roofline.hw").set_value(name).run()
        for mode in roofline.MODES:
            at.radio(key="roofline.mode").set_value(mode).run()
            assert not at.exception, (name, mode, at.exception)
            m = metrics(at)
            if hw.supports(mode):
                assert m["Ridge (FLOP/byte)"] == f"{roofline.ridge(hw, mode):.0f}", (name, mode)
                assert m["Crossover batch B*"] == f"{roofline.crossover_batch(hw, 3, mode):.0f}", (name, mode)
                assert len(at.get("plotly_chart")) == 6  # five of the model, one of the H200 run
                seen += 1
            else:
                assert "Ridge (FLOP/byte)" not in m
                assert any("not supported by this hardware" in w.value for w in at.warning), (name, mode)
    assert seen == sum(hw.supports(md) for hw in roofline.HARDWARE.values() for md in roofline.MODES) == 20


@pytest.mark.parametrize(
    "query, gamma, batch", [({"gamma": "7", "batch": "100"}, 7, 100), ({"gamma": "0", "batch": "1"}, 0, 1)]
)
def test_url_sets_gamma_and_batch(app_test, query, gamma, batch):
    at = app_test(PAGE, **query)
    assert not at.exception
    m = metrics(at)
    h100 = roofline.HARDWARE["H100 SXM"]
    assert m["Verify intensity"] == f"{roofline.verify_intensity(batch, gamma, 'bf16'):.0f}"
    assert m["Crossover batch B*"] == f"{roofline.crossover_batch(h100, gamma, 'bf16'):.0f}"
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
    assert f"halves from {roofline.crossover_batch(roofline.HARDWARE['A100 SXM 80GB'], 3):.0f}" in text


def test_custom_hardware_and_bad_values(app_test):
    at = app_test(PAGE, hw="Custom", bf16="500", fp8="0", bw="2")
    assert not at.exception
    assert metrics(at)["Ridge (FLOP/byte)"] == "250"
    at.radio(key="roofline.mode").set_value("fp8").run()
    assert any("not supported by this hardware" in w.value for w in at.warning)
    at = app_test(PAGE, hw="Custom", bw="0")
    assert not at.exception
    assert any("bandwidth must be a finite number > 0 TB/s" in e.value for e in at.error)
    at = app_test(PAGE, hw="Custom", bf16="0")
    assert any("bf16 peak must be a finite number > 0" in e.value for e in at.error)
    at = app_test(PAGE, hw="Custom", bf16="-3")  # refused by the box's own range, with a message
    assert not at.exception
    assert any("bf16=-3" in w.value for w in at.warning)
    at = app_test(PAGE, hw="Custom", bf16="1e-300", bw="1000")  # finite input the core refuses: no "nan" shown
    assert not at.exception
    assert any("from 1e-06 to 1e+06" in e.value for e in at.error)
    assert not any("nan" in m.value for m in at.metric)


def test_a_sub_unit_ridge_is_not_rounded_to_zero(app_test):
    # 1e-6 TFLOP/s over 1e4 TB/s: ridge 1e-10 FLOP/byte. Shown as "0" it read as a broken page.
    at = app_test(PAGE, hw="Custom", bf16="1e-6", fp8="0", bw="1000")  # the box's largest bandwidth
    assert not at.exception
    m = metrics(at)
    assert m["Ridge (FLOP/byte)"] == "1e-09"
    assert m["Crossover batch B*"] == f"{roofline.crossover_batch(roofline.custom_hardware(1e-6, 1e3), 3):.2g}"


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
    assert len(at.get("plotly_chart")) == 7  # with the H200 run's chart


def test_probe_runs_a_weight_format_and_says_which(app_test):
    """On a CPU the probe offers the quantised kernels; a run on fp16 says so and is kept for the comparison."""
    from gpu_demo.models.quant import quant_unavailable_reason

    if quant_unavailable_reason("fp16"):
        pytest.skip(quant_unavailable_reason("fp16"))
    at = app_test(PAGE, probe="tiny (d=64)", pweights="fp16", timeout=120)
    assert "fp16 (2 bytes)" in at.selectbox(key="roofline.pweights").options
    at.button(key="probe_run").click().run()
    assert not at.exception
    assert any("with fp16 weights" in c.value for c in at.caption)
    assert any("Run the probe again with another weight format" in c.value for c in at.caption)


def _result(weights: str, bytes_per_weight: float, knee_model: float, knee: float, reached: bool):
    from gpu_demo.measure.probe import PROBE_SHAPES, ProbeResult

    return ProbeResult(
        "CPU (1 thread)",
        "float32",
        PROBE_SHAPES["tiny (d=64)"],
        1000,
        bytes_per_weight,
        tokens=[1, 2, 4, 8, 16],
        measured_s=[1e-4] * 5,
        spread_s=[(9e-5, 1.1e-4)] * 5,
        n_samples=[3] * 5,
        model_s=[1e-4] * 5,
        peak_flops=1e10,
        bandwidth=1e10,
        knee_measured=knee,
        knee_model=knee_model,
        knee_reached=reached,
        knee_reliable=True,
        elapsed_s=1.0,
        weights=weights,
    )


def test_knees_of_two_formats_are_set_side_by_side(app_test):
    at = app_test(PAGE, probe="tiny (d=64)")
    f32, f16 = _result("float32", 4.0, 2.0, 6.0, True), _result("fp16", 2.0, 1.0, 16.0, False)
    at.session_state["probe_result"] = f16
    at.session_state["probe_results"] = {
        ("tiny (d=64)", "float32"): f32,
        ("tiny (d=64)", "fp16"): f16,
        ("Llama-3.1-8B, 1 layer", "int8"): f32,
    }  # another shape: not shown
    at.run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "model knee (tokens)" in d.value.columns)
    assert list(table["bytes per weight"]) == [4.0, 2.0]  # float32 first, other shapes left out
    assert list(table["model knee (tokens)"]) == [2.0, 1.0]
    assert list(table["measured knee (tokens)"]) == ["6", "not reached"]
    assert any("halves with every halving of the bytes" in c.value for c in at.caption)


# ------------------------------------------------------------ the denominator taught right ----
def test_words_do_not_overclaim(app_test):
    at = app_test(PAGE)
    title = at.title[0].value
    assert "free at batch 1" not in title and "nearly free at small batch" in title
    text = " ".join(x.value for x in at.markdown)
    assert "Unused arithmetic alone does not guarantee a speedup" in text  # the seed's warning
    assert "draft's own steps cost c each at every batch" in text


def test_v_at_batch_128_is_the_per_kernel_model_and_the_old_figure_is_shown_beside_it(app_test):
    at = app_test(PAGE, batch="128")
    assert not at.exception
    m = metrics(at)
    t, d, h100 = steptime.SHAPES["Llama-3.1-8B"], steptime.SHAPES["Llama-3.2-1B (draft)"], roofline.HARDWARE["H100 SXM"]
    cur = steptime.spec_curve(t, d, h100, "bf16", 3, 0.8, 2048, 128)
    assert m["v(B)"] == "1.23" == f"{float(cur.v):.2f}" and m["Speedup at B = 128"] == "1.55x"
    text = " ".join(x.value for x in at.markdown)
    assert "would cost v = 1.008 instead of 1.231" in text
    assert "Attention does 16 FLOP per byte" in text and "stays memory-bound" in text
    assert "verify pass, with gamma + 1 = 4 tokens per sequence, at B = 74" in text


def test_achievable_ceilings_lower_the_ridge_and_raise_v(app_test):
    at = app_test(PAGE, ceil="achievable", batch="100")
    assert not at.exception
    ach = roofline.achievable(roofline.HARDWARE["H100 SXM"], 0.799, 0.896)
    m = metrics(at)
    assert m["Ridge (FLOP/byte)"] == f"{roofline.ridge(ach):.0f}" == "263"
    cur = steptime.spec_curve(
        steptime.SHAPES["Llama-3.1-8B"], steptime.SHAPES["Llama-3.2-1B (draft)"], ach, "bf16", 3, 0.8, 2048, 100
    )
    assert m["v(B)"] == f"{float(cur.v):.2f}"
    assert any("ceil=achievable" in x.value and "fc=0.799" in x.value for x in at.markdown)  # the link keeps it
    at.number_input(key="roofline.fc").set_value(0.5).run()
    assert (
        metrics(at)["Ridge (FLOP/byte)"]
        == f"{roofline.ridge(roofline.achievable(roofline.HARDWARE['H100 SXM'], 0.5, 0.896)):.0f}"
    )


def test_fp8_mode_offers_an_fp8_kv_cache(app_test):
    at = app_test(PAGE, mode="fp8", ctx="16384", batch="64")
    assert not at.exception
    before = metrics(at)["Decode step (ms)"]
    at.radio(key="roofline.kv").set_value("fp8").run()
    assert not at.exception
    t, d, h100 = steptime.SHAPES["Llama-3.1-8B"], steptime.SHAPES["Llama-3.2-1B (draft)"], roofline.HARDWARE["H100 SXM"]
    cur = steptime.spec_curve(t, d, h100, "fp8", 3, 0.8, 16384, 64, kv="fp8")
    assert metrics(at)["Decode step (ms)"] == f"{float(cur.decode_s) * 1e3:.4g}" != before
    assert any("Attention does 32 FLOP per byte" in x.value for x in at.markdown)
    at = app_test(PAGE)  # BF16 mode has no KV choice
    assert not any(r.key == "roofline.kv" for r in at.radio)


def test_kernel_split_figure_hatches_the_compute_bound_linear_layers(app_test):
    at = app_test(PAGE)
    figs = [json.loads(el.proto.spec) for el in at.get("plotly_chart")]
    split = next(f for f in figs if "Where the time goes" in f["layout"]["title"]["text"])
    bars = [tr for tr in split["data"] if tr["type"] == "bar" and tr["name"] == "linear layers"]
    decode, verify = bars  # B = 1, 16, 64, 128, 256, 512
    assert verify["marker"]["pattern"]["shape"] == ["", "", "", "/", "/", "/"]  # knee at B = 74
    assert decode["marker"]["pattern"]["shape"] == ["", "", "", "", "", "/"]  # knee at B = 295
    attn = [tr for tr in split["data"] if tr["type"] == "bar" and tr["name"] == "attention"]
    assert all(shape == "" for tr in attn for shape in tr["marker"]["pattern"]["shape"])
    best = next(f for f in figs if "Best draft length" in f["layout"]["title"]["text"])
    y = best["data"][0]["y"]  # a list, or a base64 typed array
    g = np.frombuffer(base64.b64decode(y["bdata"]), dtype=y["dtype"]) if isinstance(y, dict) else np.asarray(y)
    assert g[0] >= 3 and g[-1] <= 2 and np.all(np.diff(g) <= 0)


def test_b200_cites_its_memory(app_test):
    at = app_test(PAGE, hw="B200")
    assert not at.exception
    assert any("180 GB" in c.value and "1,440 GB" in c.value for c in at.caption)


def test_unreliable_knee_is_said_not_printed_as_a_number(app_test):
    from gpu_demo.measure.probe import PROBE_SHAPES, ProbeResult

    res = ProbeResult(
        "CPU (1 thread)",
        "float32",
        PROBE_SHAPES["tiny (d=64)"],
        1000,
        4.0,
        tokens=[1, 2, 4],
        measured_s=[1e-4, 1e-4, 1.1e-4],
        spread_s=[(9e-5, 1.1e-4)] * 3,
        n_samples=[3] * 3,
        model_s=[1e-4] * 3,
        peak_flops=1e10,
        bandwidth=1e10,
        knee_measured=3.0,
        knee_model=2.0,
        knee_reached=True,
        knee_reliable=False,
        knee_note="only 3 token counts were timed",
        elapsed_s=1.0,
    )
    at = app_test(PAGE)
    at.session_state["probe_result"] = res
    at.run()
    assert not at.exception
    assert metrics(at)["Measured knee (tokens)"] == "unreliable"
    assert any("only 3 token counts were timed" in w.value for w in at.warning)
