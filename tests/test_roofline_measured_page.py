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
