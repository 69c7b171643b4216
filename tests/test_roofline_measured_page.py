"""AppTest: the roofline page's measured mode shows the fit's numbers, recomputed here from specdec_core."""

from __future__ import annotations

from specdec_core.measured_steps import FITS, measured_curve


def test_measured_table_matches_the_fit_and_names_its_source(app_test) -> None:
    assert not [d for d in app_test("views/roofline.py").dataframe if "v, fit" in d.value.columns]  # off by default
    at = app_test("views/roofline.py", steps="measured")
    assert not at.exception, [e.value for e in at.exception]
    fit = FITS["vLLM, H100, Llama-3.1-8B + EAGLE"]
    want = measured_curve(fit, 3, 0.8, 2048, [1, 64, 128, 256]).v
    tables = [df for df in (d.value for d in at.dataframe) if "v, fit" in df.columns]
    assert tables, "no measured-mode table"
    assert list(tables[0]["v, fit"].round(3)) == list(want.round(3))
    assert list(tables[0]["batch"]) == [1, 64, 128, 256]
    text = " ".join(c.value for c in at.caption)
    assert "SpecDecode-Bench" in text and "predictor.py" in text
    prose = " ".join(m.value for m in at.markdown)
    assert "B = 183" in prose and "B = 23" in prose and "0.166" in prose


def _prose(at) -> str:
    return " ".join(m.value for m in [*at.markdown, *at.caption])


def test_crossing_is_the_cores_and_never_falls_only_when_there_is_none(app_test) -> None:
    from specdec_core import roofline, steptime

    t, d, hw = steptime.SHAPES["Llama-3.1-8B"], steptime.SHAPES["Llama-3.2-1B (draft)"], roofline.HARDWARE["H100 SXM"]
    at = app_test("views/roofline.py", steps="measured", alpha="0.5", gamma="5")
    assert not at.exception, [e.value for e in at.exception]
    cross = steptime.speedup_crossing(t, d, hw, "bf16", 5, 0.5, 2048, max_batch=1024.0)
    assert cross is not None and 20 < cross < 35
    text = _prose(at)
    assert f"falls to 1 at B = {cross:,.0f} at context 2,048" in text
    assert "never falls to 1" not in text
    slow = _prose(app_test("views/roofline.py", steps="measured", alpha="0.5", gamma="7"))
    assert "below 1 from B = 1" in slow and "never falls to 1" not in slow
    never = _prose(app_test("views/roofline.py", steps="measured"))        # alpha 0.8, gamma 3
    assert "never falls to 1 up to B = 1,024 at context 2,048" in never
    off = _prose(app_test("views/roofline.py", steps="measured", gamma="0"))
    assert "exactly 1 at every batch" in off and "slowdown" not in off


def test_fit_values_are_computed_labelled_and_extrapolation_marked(app_test) -> None:
    fit = FITS["vLLM, H100, Llama-3.1-8B + EAGLE"]
    for gamma in (1, 3):
        at = app_test("views/roofline.py", steps="measured", gamma=str(gamma))
        assert not at.exception
        c = float(measured_curve(fit, gamma, 0.8, 2048, 1).c)
        text = _prose(at)
        assert f"drafts for {c:.2f} of a target step" in text
        assert "values of models" in text and "not measurements" in text and "measured at 5.99" not in text
        table = next(df for df in (d.value for d in at.dataframe) if "v, fit" in df.columns)
        assert list(table["fit range"]) == ["fitted", "fitted", "extrapolated (B > 64)", "extrapolated (B > 64)"]
    assert "about 0.12 of a step" not in text and "drafts for 0.12 of a target step" in text
    fig = next(c for c in at.get("plotly_chart") if "measured engine" in c.proto.spec)
    assert "fit extrapolated" in fig.proto.spec
    far = app_test("views/roofline.py", steps="measured", gamma="8")
    table = next(df for df in (d.value for d in far.dataframe) if "v, fit" in df.columns)
    assert all("gamma > 5" in r for r in table["fit range"])


def test_published_eagle3_results_are_placed_against_both_curves(app_test) -> None:
    at = app_test("views/roofline.py", steps="measured")                   # alpha 0.8, gamma 3
    fit = FITS["vLLM, H100, Llama-3.1-8B + EAGLE"]
    f1 = float(measured_curve(fit, 3, 0.8, 2048, 1).speedup)
    assert 2.36 > f1
    text = _prose(at)
    assert "EAGLE-3 in SGLang" in text and "2.36x at batch 1, above both curves" in text
    assert "1.38x at batch 64" in text and "fall lower still" not in text


def test_the_fits_proposer_is_eagle3_as_specdecode_bench_names_it(app_test) -> None:
    """SpecDecode-Bench's simulator runs proposer eagle3 (its README); the legend and caption said only 'EAGLE'."""
    at = app_test("views/roofline.py", steps="measured")
    assert not at.exception, [e.value for e in at.exception]
    fig = next(c for c in at.get("plotly_chart") if "measured engine" in c.proto.spec)
    assert "measured fit: EAGLE-3 draft" in fig.proto.spec and "fit: EAGLE draft" not in fig.proto.spec
    text = _prose(at)
    assert "with an EAGLE-3 head" in text and "its EAGLE-3 head drafts for" in text
    assert "EAGLE-3" in FITS["vLLM, H100, Llama-3.1-8B + EAGLE"].model


def test_the_b256_16k_memory_and_the_tables_gpus_come_from_the_core(app_test) -> None:
    """B = 256 at 16,384: 687 GB of KV, 706 GB in all, at least 9 80 GB GPUs, fewest 10 as 5 x TP 2; the table gives
    each batch's KV + weights and GPUs at the page's context (2,048: B = 256 needs 2, TP 2)."""
    from specdec_core import steptime

    t8, d1 = steptime.SHAPES["Llama-3.1-8B"], steptime.SHAPES["Llama-3.2-1B (draft)"]
    at = app_test("views/roofline.py", steps="measured")
    assert not at.exception, [e.value for e in at.exception]
    text = _prose(at)
    big = steptime.gpu_placement(t8, d1, "bf16", 256, 16384)
    assert (f"B = 256 at 16,384 needs {big.kv_gb:.0f} GB of KV, {big.total_gb:.0f} GB with the weights: at least "
            f"{big.capacity_gpus} such GPUs") in text and "fewest that hold it are 10, 5 replicas of TP 2" in text
    assert "toward its KV ratio 0.25" in text and "EAGLE-3 head keeps one layer" in text and "ratio of 0.031" in text
    table = next(df for df in (d.value for d in at.dataframe) if "v, fit" in df.columns)
    want = [steptime.gpu_placement(t8, d1, "bf16", b, 2048) for b in (1, 64, 128, 256)]
    assert list(table["KV + weights, GB (8B + 1B, bf16)"]) == [f"{p.kv_gb:,.1f} + {p.weights_gb:.1f}" for p in want]
    assert list(table["fewest 80 GB GPUs"]) == ["1", "1", "1", "2 (TP 2 x 1)"]
