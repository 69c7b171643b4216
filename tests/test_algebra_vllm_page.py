"""AppTest of the algebra page's vLLM parts: the paste box reads a log line and a scrape, refuses bad text with a
message, and the positional section shows vLLM's unconditional rates and the constant alpha with the same E[N]."""

from __future__ import annotations

import re

import numpy as np
from prometheus_client import CollectorRegistry, Counter, generate_latest

from specdec_core import algebra
from ui.algebra.vllm import EXAMPLE_LINE

PAGE = "views/algebra.py"
A = [0.9, 0.5, 0.2]                       # by hand: r = 0.9, 0.45, 0.09; rate 0.48; mean length 2.44


def scrape() -> str:
    """Two models; model "a" holds the hand example over two engines (50/30/6 + 40/15/3 = 90/45/9)."""
    reg = CollectorRegistry()
    lab = ["model_name", "engine"]
    cnt = {n: Counter(f"vllm:spec_decode_num_{n}", n, lab, registry=reg) for n in ("drafts", "draft_tokens",
                                                                                   "accepted_tokens")}
    pos = Counter("vllm:spec_decode_num_accepted_tokens_per_pos", "p", [*lab, "position"], registry=reg)
    for model, engine, vals, per in [("a", "0", (60, 180, 86), (50, 30, 6)), ("a", "1", (40, 120, 58), (40, 15, 3)),
                                     ("b", "0", (10, 20, 5), (4, 1))]:
        for name, x in zip(("drafts", "draft_tokens", "accepted_tokens"), vals):
            cnt[name].labels(model, engine).inc(x)
        for j, x in enumerate(per):
            pos.labels(model, engine, str(j)).inc(x)
    return generate_latest(reg).decode()


def paste(app_test, text: str, **query: str):
    at = app_test(PAGE, **query)
    at.text_area(key="vllm_paste").input(text).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def metrics(at) -> dict[str, tuple[str, str]]:
    return {m.label: (m.value, m.delta or "") for m in at.metric}


def no_nan(at) -> None:
    shown = [m.value for m in at.markdown] + [x.value for x in at.caption] + [w.value for w in at.warning]
    shown += [f"{m.value}" for m in at.metric]
    for t in shown:
        assert not re.search(r"\bnan\b|\binf\b", t, re.IGNORECASE), t


def assert_hand_numbers(at, length: str, c: float = 0.1, v: float = 1.0) -> None:
    m = metrics(at)
    assert m["Acceptance rate (vLLM)"][0] == "0.480"
    assert m["Mean acceptance length (vLLM)"][0] == length
    assert m["E[N] from the alpha_j"][0] == "2.440"
    assert m["Constant alpha, same E[N]"][0] == f"{algebra.equivalent_alpha(A):.4f}"
    s = algebra.speedup_positional(A, c, v)
    g, sg = algebra.best_gamma_positional(A, c, v)
    assert m["Predicted speedup at gamma = 3"][0] == f"{s:.2f}x"
    assert m["Best gamma (0..3)"] == (str(g), f"{sg:.2f}x at best")
    table = next(df.value for df in at.dataframe if "alpha_j = r_j / r_(j-1) (conditional)" in df.value.columns)
    assert list(table["vLLM's r_j (unconditional)"]) == ["0.9000", "0.4500", "0.0900"]
    assert list(table["alpha_j = r_j / r_(j-1) (conditional)"]) == ["0.9000", "0.5000", "0.2000"]
    misreading = next(x.value for x in at.markdown if x.value.startswith("Two tempting misreadings"))
    assert f"{algebra.expected_tokens_positional([0.9, 0.45, 0.09]):.3f}" in misreading     # 2.341, not 2.440
    assert f"{algebra.expected_tokens(0.48, 3):.3f}" in misreading
    no_nan(at)


def test_empty_box_shows_nothing_derived(app_test):
    at = app_test(PAGE)
    assert not at.exception
    assert "Acceptance rate (vLLM)" not in metrics(at)
    assert any("Paste a line or a scrape" in x.value for x in at.caption)


def test_log_line_gives_the_hand_numbers(app_test):
    at = paste(app_test, "INFO 05-12 10:00:00 [metrics.py:95] " + EXAMPLE_LINE)
    assert_hand_numbers(at, "2.44")
    table = next(df.value for df in at.dataframe if "alpha_j within the printed rounding" in df.value.columns)
    assert table["alpha_j within the printed rounding"][0] == "0.8995 to 0.9005"      # r_1 = 0.900 +- 0.0005
    assert metrics(at)["Drafts"][0] == "not printed"
    assert any("printed to 2 decimals" in x.value for x in at.caption)


def test_scrape_offers_its_models_and_gives_the_hand_numbers_at_the_pages_costs(app_test):
    at = paste(app_test, scrape(), c="0.05", v="1.5")
    box = at.selectbox(key="vllm_model")
    assert list(box.options) == ["a", "b"] and box.value == "a"          # engines of "a" summed, "b" apart
    assert_hand_numbers(at, "2.440", c=0.05, v=1.5)
    assert metrics(at)["Drafts"][0] == "100"
    table = next(df.value for df in at.dataframe if "drafts accepted through j" in df.value.columns)
    assert list(table["drafts accepted through j"]) == [90, 45, 9]
    box.set_value("b").run()
    assert not at.exception
    m = metrics(at)                                                        # b: 10 drafts, 5 of 20 accepted
    assert m["Acceptance rate (vLLM)"][0] == "0.250" and m["Mean acceptance length (vLLM)"][0] == "1.500"
    assert m["Drafts"][0] == "10" and "Predicted speedup at gamma = 2" in m


def test_bad_text_gets_a_message_shown_verbatim(app_test):
    evil = EXAMPLE_LINE.replace("0.900, 0.450, 0.090", "0.900, 0.450, 0.500") + " **[x](javascript:alert(1))**"
    at = paste(app_test, evil)
    assert any("could not be used" in w.value for w in at.warning)
    assert "cannot increase" in at.code[0].value
    assert "Acceptance rate (vLLM)" not in metrics(at)
    at = paste(app_test, "<script>alert(1)</script> $x$ :red[hi]")
    assert "Neither" in at.code[0].value
    for element in list(at.markdown) + list(at.warning) + list(at.caption):
        assert "script" not in element.value and ":red[" not in element.value


def test_short_drafts_are_flagged(app_test):
    line = EXAMPLE_LINE.replace("Drafted: 300", "Drafted: 250").replace("48.0%", "57.6%")
    at = paste(app_test, line)
    assert any("shorter than gamma" in w.value for w in at.warning)


def test_positional_section_shows_rates_and_the_equivalent_constant(app_test):
    at = app_test(PAGE, mode="table", gamma="3", aj="0.9, 0.5, 0.2", c="0.05")
    assert not at.exception
    table = next(df.value for df in at.dataframe if "alpha_j (conditional: accepted, given j was reached)"
                 in df.value.columns)
    assert list(table["vLLM's per-position rate r_j = prod of alpha_i up to j"]) == ["0.9000", "0.4500", "0.0900"]
    cap = next(x.value for x in at.caption if "vLLM would report" in x.value)
    assert "acceptance rate 0.480" in cap and "mean acceptance length 2.440" in cap
    note = " ".join(i.value for i in at.info)
    gap = algebra.positional_gap(np.array(A), 0.05, 1.0)
    assert f"alpha = {algebra.equivalent_alpha(A):.4f}" in note and f"alpha_bar = {np.mean(A):.4f} is not it" in note
    assert f"{100 * gap['rel_error']:+.1f}%" in note and f"{gap['en_constant']:.3f}" in note


def test_decoder_shape_costs_price_each_gamma(app_test):
    """Costs from a decoder shape: the paste box uses v(gamma), says so, and shows E[N] / (3c + v(3))."""
    at = paste(app_test, EXAMPLE_LINE, cost="shape")
    cap = next(x.value for x in at.caption if "this page's controls" in x.value)
    found = re.search(r"c = ([0-9.e+-]+) and v\(gamma\), ([0-9.]+) at gamma = 3, come from", cap)
    assert found, cap
    c, v3 = float(found.group(1)), float(found.group(2))
    shown = float(metrics(at)["Predicted speedup at gamma = 3"][0].rstrip("x"))
    assert abs(shown - 2.44 / (3 * c + v3)) <= 0.006 + 2.44 * 0.0005 / (3 * c + v3) ** 2


def test_a_paste_over_the_limit_is_refused_in_one_line_and_never_parsed(app_test):
    """A 10 MB scrape used to be parsed twice on every rerun; now anything past PASTE_LIMIT is refused unparsed."""
    from ui.algebra.vllm import PASTE_LIMIT

    at = app_test(PAGE)
    at.session_state["vllm_paste"] = EXAMPLE_LINE + "\n" + "x" * PASTE_LIMIT   # past the box's max_chars
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("too long" in w.value and f"{PASTE_LIMIT:,}" in w.value for w in at.warning)
    assert "Acceptance rate (vLLM)" not in metrics(at)          # nothing parsed, nothing derived
    at.session_state["vllm_paste"] = EXAMPLE_LINE                # the same box still works afterwards
    at.run()
    assert metrics(at)["Acceptance rate (vLLM)"][0] == "0.480"


def test_the_definitions_formula_has_no_glued_command():
    """`\\qquadr_j` is an unknown KaTeX command (red error text): every spacing command is followed by a non-letter."""
    from ui.algebra.vllm import DEFINITIONS

    assert not re.search(r"\\q?quad[A-Za-z]", DEFINITIONS), DEFINITIONS


def _shown(at) -> str:
    return " ".join(x.value for x in [*at.success, *at.caption, *at.warning, *at.code])


def test_a_llamacpp_completion_is_read_and_says_what_it_lacks(app_test):
    """The box read only vLLM's formats: this reply was refused with 'Neither ...'. Now: 48 drafted, 36 accepted,
    the rate 0.750, and E[N] and the drafts 'not given' (never NaN), with the reason in words."""
    from test_engines_metrics import llamacpp_completion

    at = paste(app_test, llamacpp_completion(48, 36))
    assert [s.value for s in at.success] == ["Read as a llama.cpp /completion response: 48 drafted, 36 accepted."]
    m = metrics(at)
    assert m["Acceptance rate"][0] == "0.750"
    assert m["Mean acceptance length E[N]"][0] == "not given" and m["Drafts"][0] == "not given"
    assert "Predicted speedup at gamma" not in " ".join(m) and not at.code
    assert "does not count the drafts" in _shown(at) and "llamacpp:spec_decode" in _shown(at)
    no_nan(at)


def test_a_llamacpp_scrape_gives_the_full_table(app_test):
    from test_engines_metrics import llamacpp_scrape

    at = paste(app_test, llamacpp_scrape(100, 300, 144, [90, 45, 9]))
    assert at.success[0].value == ("Read as a llama.cpp server /metrics scrape: 100 drafts, 300 drafted, 144 accepted "
                                   "over gamma = 3 positions.")
    assert_hand_numbers(at, "2.440")


def test_sglang_and_trtllm_outputs_are_read_with_what_they_lack(app_test):
    from test_engines_metrics import sglang_scrape, trtllm_stats

    at = paste(app_test, sglang_scrape({"a": (2.9, 0.27), "b": (1.8, None)}))
    assert list(at.selectbox(key="vllm_model").options) == ["a", "b"]
    assert at.success[0].value == ("Read as an SGLang /metrics scrape: mean acceptance length 2.900, acceptance rate "
                                   "0.270.")
    assert metrics(at)["Mean acceptance length E[N] (interval average)"][0] == "2.900"
    at.selectbox(key="vllm_model").set_value("b").run()
    assert metrics(at)["Acceptance rate (interval average)"][0] == "not exported"
    assert "not exported (older SGLang)" in at.success[0].value and "interval" in _shown(at)
    no_nan(at)
    at = paste(app_test, trtllm_stats([(4, 12, 7), (2, 6, 5)]))
    assert at.success[0].value == "Read as TensorRT-LLM's /metrics iteration stats: 6 drafts, 18 drafted, 12 accepted."
    m = metrics(at)
    assert (m["Acceptance rate"][0], m["Mean acceptance length E[N]"][0], m["Drafts"][0]) == ("0.667", "3.000", "6")
    assert "no alpha_j" in _shown(at)
    no_nan(at)


def test_garbage_and_huge_json_get_one_line(app_test):
    from ui.algebra.vllm import PASTE_LIMIT

    for text, word in [("[" * PASTE_LIMIT, "nested too deeply"), ('{"choices": []}', "Neither"),
                       ("{" * 1000 + "x", "Neither")]:
        at = paste(app_test, text)
        assert len(at.code) == 1 and word in at.code[0].value and "\n" not in at.code[0].value
        assert not at.success and "Acceptance rate" not in " ".join(metrics(at))
