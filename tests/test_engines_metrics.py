"""Each engine's spec-decode metrics, in its own format, read into the one SpecDecodeCounts; bad input refused.

Formats, from each engine's source: llama.cpp's server writes its Prometheus text by hand (HELP, TYPE, one sample per
line, no model label, per-position counters labelled position="0".."gamma-1"); SGLang's collector exports two
prometheus_client gauges with a model_name label; trtllm-serve's /metrics answers a JSON list of iteration stats.
"""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Gauge, generate_latest

from specdec_core import vllm_metrics
from specdec_core.vllm_counts import SpecDecodeCounts, difference


def llamacpp_scrape(drafts: int, drafted: int, accepted: int, per_pos: list[int], predicted: int = 100) -> str:
    """The /metrics text as llama.cpp's server writes it (metric order, HELP and TYPE lines, _total names)."""
    lines = []

    def metric(name: str, kind: str, samples: list[tuple[str, float]]) -> None:
        lines.extend([f"# HELP llamacpp:{name} {name}", f"# TYPE llamacpp:{name} {kind}"])
        lines.extend(f"llamacpp:{name}{labels} {value:g}" for labels, value in samples)

    metric("tokens_predicted_total", "counter", [("", predicted)])
    metric("n_decode_total", "counter", [("", 40)])
    metric("spec_decode_num_draft_tokens_total", "counter", [("", drafted)])
    metric("spec_decode_num_accepted_tokens_total", "counter", [("", accepted)])
    metric("spec_decode_num_drafts_total", "counter", [("", drafts)])
    metric("predicted_tokens_seconds", "gauge", [("", 25.5)])
    metric("spec_decode_num_accepted_tokens_per_pos_total", "counter",
           [(f'{{position="{j}"}}', x) for j, x in enumerate(per_pos)])
    return "\n".join(lines) + "\n"


def sglang_scrape(models: dict[str, tuple[float, float | None]]) -> str:
    """SGLang's two gauges (collector.py: spec_accept_length, spec_accept_rate) per model_name."""
    reg = CollectorRegistry()
    length = Gauge("sglang:spec_accept_length", "The average acceptance length", ["model_name"], registry=reg)
    rate = Gauge("sglang:spec_accept_rate", "The average acceptance rate", ["model_name"], registry=reg)
    for name, (ln, rt) in models.items():
        length.labels(model_name=name).set(ln)
        if rt is not None:
            rate.labels(model_name=name).set(rt)
    return generate_latest(reg).decode()


def trtllm_stats(iterations: list[tuple[int, int, int]], as_strings: bool = False) -> str:
    """trtllm-serve's /metrics: iteration stats with specDecodingStats (requests, drafted, accepted) each."""
    out = []
    for i, (req, dft, acc) in enumerate(iterations):
        it = {"iter": i, "iterLatencyMS": 12.5, "numActiveRequests": req,
              "specDecodingStats": {"numDraftTokens": dft, "numAcceptedTokens": acc, "numRequestsWithDraftTokens": req,
                                    "acceptanceLength": 1.0 + acc / req if req else 0.0, "iterLatencyMS": 3.0,
                                    "draftOverhead": 0.2}}
        out.append(json.dumps(it) if as_strings else it)
    return json.dumps(out)


# ------------------------------------------------------------------------------------------------ llama.cpp --
def test_llamacpp_scrape_reads_as_vllms_counts_by_hand():
    """10 drafts of 3: 6 with >=1 accepted, 4 with >=2, 1 with 3 -> accepted 11; E[N] = 2.1; alpha = .6, 4/6, 1/4."""
    c = vllm_metrics.parse_prometheus(llamacpp_scrape(10, 30, 11, [6, 4, 1]), engine="llamacpp")
    assert (c.num_drafts, c.num_draft_tokens, c.num_accepted_tokens, c.accepted_per_position) == (10, 30, 11, (6, 4, 1))
    assert c.mean_acceptance_length() == pytest.approx(2.1)
    assert c.conditional_alphas() == pytest.approx([0.6, 4 / 6, 0.25])
    assert 1 + c.per_position_rates().sum() == pytest.approx(c.mean_acceptance_length())


def test_llamacpp_scrape_is_not_read_as_vllm_and_back():
    """The prefix matters: a llama.cpp scrape has no vllm: counters, and the other way round."""
    with pytest.raises(ValueError, match="No vllm:spec_decode_num"):
        vllm_metrics.parse_prometheus(llamacpp_scrape(10, 30, 11, [6, 4, 1]))
    with pytest.raises(ValueError, match="Unknown engine"):
        vllm_metrics.parse_prometheus(llamacpp_scrape(10, 30, 11, [6, 4, 1]), engine="tgi")


def test_llamacpp_before_any_draft_is_zero_with_empty_ok():
    """A fresh server exports the totals at 0 and no per-position lines: zero counts for the 'before' scrape."""
    text = llamacpp_scrape(0, 0, 0, [])
    with pytest.raises(ValueError):
        vllm_metrics.parse_prometheus(text, engine="llamacpp")
    zero = vllm_metrics.parse_prometheus(text, engine="llamacpp", empty_ok=True)
    assert (zero.num_drafts, zero.num_draft_tokens, zero.num_accepted_tokens) == (0, 0, 0)
    after = vllm_metrics.parse_prometheus(llamacpp_scrape(10, 30, 11, [6, 4, 1]), engine="llamacpp")
    assert difference(after, zero) == after


@pytest.mark.parametrize("text, message", [
    (llamacpp_scrape(10, 30, 31, [6, 4, 1]), "More tokens accepted"),
    (llamacpp_scrape(10, 30, 11, [6, 7, -2]), "whole number|exceeds"),
    (llamacpp_scrape(10, 30, 12, [6, 4, 1]), "add up to 11"),
    (llamacpp_scrape(10, 30, 11, [6, 4, 1]).replace('position="2"', 'position="5"'), "Positions must run"),
    (llamacpp_scrape(10, 30, 11, [6, 4, 1]).replace("llamacpp:spec_decode_num_drafts_total 10",
                                                    "llamacpp:spec_decode_num_drafts_total nan"), "whole number"),
    ("llamacpp:spec_decode_num_drafts_total {{{ 3\n", "Could not read"),
    ("<html>not metrics</html>", "Could not read|No llamacpp"),
])
def test_malformed_llamacpp_scrapes_are_refused(text, message):
    with pytest.raises(ValueError, match=message):
        vllm_metrics.parse_prometheus(text, engine="llamacpp")


def test_llamacpp_timings():
    timings = {"predicted_n": 32, "draft_n": 24, "draft_n_accepted": 20}
    assert vllm_metrics.parse_llamacpp_timings({"timings": timings}) == (24, 20)
    assert vllm_metrics.parse_llamacpp_timings({"timings": {"predicted_n": 32}}) == (0, 0)
    for bad, message in [({"timings": {"draft_n": 3, "draft_n_accepted": 4}}, "impossible"),
                         ({"timings": {"draft_n": -1}}, "whole number"), ({"choices": []}, "no 'timings'"),
                         ([], "timings")]:
        with pytest.raises(ValueError, match=message):
            vllm_metrics.parse_llamacpp_timings(bad)


# ---------------------------------------------------------------------------------------------- differencing --
def test_difference_subtracts_per_counter_and_refuses_a_restart():
    before = SpecDecodeCounts(10, 30, 11, (6, 4, 1))
    after = SpecDecodeCounts(25, 75, 31, (15, 11, 5))
    d = difference(after, before)
    assert (d.num_drafts, d.num_draft_tokens, d.num_accepted_tokens, d.accepted_per_position) == (15, 45, 20, (9, 7, 4))
    assert d.mean_acceptance_length() == pytest.approx(1 + 20 / 15)
    with pytest.raises(ValueError, match="restarted"):
        difference(before, after)
    with pytest.raises(ValueError, match="different draft positions"):
        difference(SpecDecodeCounts(25, 75, 31, (15, 11, 4, 1)), before)


def test_difference_that_does_not_add_up_is_refused():
    """Each scrape is consistent, but position 2 grew more than position 1 between them: the interval cannot be."""
    with pytest.raises(ValueError, match="cannot increase"):
        difference(SpecDecodeCounts(20, 60, 25, (12, 10, 3)), SpecDecodeCounts(10, 30, 14, (8, 4, 2)))


# ------------------------------------------------------------------------------------------------- SGLang --
def test_sglang_gauges_are_interval_averages():
    r = vllm_metrics.parse_sglang(sglang_scrape({"meta-llama/Llama-3.1-8B": (2.9, 0.27)}))
    assert (r.mean_acceptance_length, r.acceptance_rate, r.per_position_rates) == (pytest.approx(2.9),
                                                                                   pytest.approx(0.27), ())
    old = vllm_metrics.parse_sglang(sglang_scrape({"m": (1.8, None)}))
    assert old.mean_acceptance_length == pytest.approx(1.8) and math.isnan(old.acceptance_rate)


@pytest.mark.parametrize("text, message", [
    (sglang_scrape({"m": (0.5, 0.2)}), "at least 1"),
    (sglang_scrape({"m": (2.0, 1.5)}), r"\[0, 1\]"),
    (sglang_scrape({"a": (2.0, 0.3), "b": (1.5, 0.2)}), "choose one"),
    (llamacpp_scrape(10, 30, 11, [6, 4, 1]), "No sglang:spec_accept_length"),
    ("sglang:spec_accept_length{model_name=\"m\"} two\n", "Could not read"),
])
def test_malformed_sglang_scrapes_are_refused(text, message):
    with pytest.raises(ValueError, match=message):
        vllm_metrics.parse_sglang(text)


# -------------------------------------------------------------------------------------------- TensorRT-LLM --
def test_trtllm_iterations_sum_to_totals():
    """Two iterations: (4 requests, 12 drafted, 7 accepted) + (2, 6, 5) -> 6 drafts, 18, 12; E[N] = 3."""
    for as_strings in (False, True):
        c = vllm_metrics.parse_trtllm(trtllm_stats([(4, 12, 7), (0, 0, 0), (2, 6, 5)], as_strings))
        assert (c.num_drafts, c.num_draft_tokens, c.num_accepted_tokens) == (6, 18, 12)
        assert c.mean_acceptance_length() == pytest.approx(3.0) and c.acceptance_rate() == pytest.approx(12 / 18)
        assert c.gamma == 0 and c.conditional_alphas().size == 0 and c.as_dict()["conditional_alphas"] == []
    assert vllm_metrics.parse_trtllm("[]").num_drafts == 0


@pytest.mark.parametrize("text, message", [
    (trtllm_stats([(4, 12, 13)]), "More tokens accepted"),
    (trtllm_stats([(4, 3, 1)]), "each draft proposes"),
    (json.dumps([{"specDecodingStats": {"numDraftTokens": 8, "numAcceptedTokens": 4, "numRequestsWithDraftTokens": 2,
                                        "acceptanceLength": 2.5}}]), "do not add up"),
    (json.dumps([{"specDecodingStats": {"numDraftTokens": 1.5}}]), "whole number"),
    (json.dumps({"iter": 1}), "JSON list"),
    ("[{\"iter\": ", "as JSON"),
    (json.dumps([{"specDecodingStats": [1, 2]}]), "not an object"),
])
def test_malformed_trtllm_stats_are_refused(text, message):
    with pytest.raises(ValueError, match=message):
        vllm_metrics.parse_trtllm(text)


def test_oversized_text_is_refused_before_parsing():
    with pytest.raises(ValueError, match="not a metrics page"):
        vllm_metrics.parse_prometheus("#" * (vllm_metrics.MAX_TEXT + 1), engine="llamacpp")


# ---------------------------------------------------------------------------- any engine's text: detect, parse --
def llamacpp_completion(drafted: int | None, accepted: int | None, indent: int | None = 2) -> str:
    """A llama.cpp server /completion reply as it answers (content, settings, timings); draft keys only if drafted."""
    timings = {"prompt_n": 6, "prompt_ms": 31.5, "prompt_per_token_ms": 5.25, "prompt_per_second": 190.4,
               "predicted_n": 64, "predicted_ms": 412.0, "predicted_per_token_ms": 6.44, "predicted_per_second": 155.3}
    if drafted is not None:
        timings |= {"draft_n": drafted, "draft_n_accepted": accepted}
    reply = {"index": 0, "content": " The LoRaWAN specification defines", "tokens": [], "id_slot": 0, "stop": True,
             "model": "Qwen2.5-7B-Instruct-Q4_K_M.gguf", "tokens_predicted": 64, "tokens_evaluated": 6,
             "generation_settings": {"n_predict": 64, "seed": 42, "temperature": 0.0, "top_k": 40, "top_p": 0.95,
                                     "speculative.n_max": 16, "speculative.n_min": 0, "speculative.p_min": 0.75},
             "prompt": "What is LoRA:", "has_new_line": False, "truncated": False, "stop_type": "limit",
             "stopping_word": "", "tokens_cached": 69, "timings": timings}
    return json.dumps(reply, indent=indent)


def test_a_llamacpp_completion_is_detected_and_read_as_tokens_only():
    """48 drafted, 36 accepted: rate 0.75; no count of drafts, so E[N] is not claimed (NaN in the core, no alpha_j).
    parse(), vLLM's reader alone, refuses the same text (the negative control: reading vLLM only fails here)."""
    text = llamacpp_completion(48, 36)
    with pytest.raises(ValueError, match="Neither"):
        vllm_metrics.parse(text)
    assert vllm_metrics.detect_engine(text) == "llamacpp_response"
    kind, c = vllm_metrics.parse_any(text)
    assert kind == "llamacpp_response" and (c.num_drafts, c.num_draft_tokens, c.num_accepted_tokens) == (None, 48, 36)
    assert c.acceptance_rate() == 0.75 and math.isnan(c.mean_acceptance_length()) and c.gamma == 0
    assert c.conditional_alphas().size == 0 and c.per_position_rates().size == 0
    lines = "\n".join(llamacpp_completion(d, a, indent=None) for d, a in [(48, 36), (16, 2)])   # JSON Lines: summed
    summed = vllm_metrics.parse_any(lines)[1]
    assert summed.num_draft_tokens == 64 and summed.num_accepted_tokens == 38


@pytest.mark.parametrize("text, kind", [
    (llamacpp_completion(48, 36), "llamacpp_response"),
    (llamacpp_scrape(10, 30, 11, [6, 4, 1]), "llamacpp"),
    (sglang_scrape({"m": (2.9, 0.27)}), "sglang"),
    (trtllm_stats([(4, 12, 7)]), "trtllm"),
    (trtllm_stats([(4, 12, 7)], as_strings=True), "trtllm"),
    ("INFO 05-12 10:00:00 [metrics.py:95] SpecDecoding metrics: Mean acceptance length: 2.44, Accepted: 144 "
     "tokens, Drafted: 300 tokens, Per-position acceptance rate: 0.900, 0.450, 0.090, Avg Draft acceptance rate: "
     "48.0%", "vllm_log"),
    ("vllm:spec_decode_num_drafts_total 1\n", "vllm"),
])
def test_each_engines_output_is_detected(text, kind):
    assert vllm_metrics.detect_engine(text) == kind and kind in vllm_metrics.FORMATS


def test_parse_any_reads_each_engine_as_its_own_reader_does():
    assert vllm_metrics.parse_any(llamacpp_scrape(10, 30, 11, [6, 4, 1])) == (
        "llamacpp", vllm_metrics.parse_prometheus(llamacpp_scrape(10, 30, 11, [6, 4, 1]), engine="llamacpp"))
    kind, r = vllm_metrics.parse_any(sglang_scrape({"a": (2.9, 0.27), "b": (1.5, 0.2)}), model_name="a")
    assert kind == "sglang" and (r.mean_acceptance_length, r.acceptance_rate) == (pytest.approx(2.9), 0.27)
    assert vllm_metrics.model_names(sglang_scrape({"a": (2.9, 0.27), "b": (1.5, 0.2)})) == ["a", "b"]
    assert vllm_metrics.model_names(llamacpp_scrape(10, 30, 11, [6, 4, 1])) == []
    assert vllm_metrics.model_names(llamacpp_completion(3, 1)) == []
    kind, c = vllm_metrics.parse_any(trtllm_stats([(4, 12, 7), (2, 6, 5)]))
    assert kind == "trtllm" and (c.num_drafts, c.num_draft_tokens, c.num_accepted_tokens) == (6, 18, 12)


@pytest.mark.parametrize("text, message", [
    ("", "Nothing to read"),
    ("hello, world", "Neither"),
    ("<html><body>502 Bad Gateway</body></html>", "Neither"),
    ("x" * 200_000, "Neither"),
    ("[" * 200_000, "nested too deeply"),
    ('{"choices": [{"text": "hi"}]}', "Neither.*timings"),
    ("42", "Neither"),
    (llamacpp_completion(None, None), "drafted nothing"),
    (llamacpp_completion(3, 4), "impossible"),
    (llamacpp_completion(2 ** 2000, 1), "no engine reports"),
    (llamacpp_completion(3, 1).replace('"draft_n": 3', '"draft_n": NaN'), "not a number a server reports"),
    ('{"timings": {"draft_n": 1' + "0" * 5000 + "}}", "thousands of digits"),
    (llamacpp_completion(3, 1, indent=None) + "\n{broken", "neither one JSON value nor one JSON object a line"),
    ("[]", "No iteration in these stats drafted"),
    (trtllm_stats([(0, 0, 0)]), "No iteration in these stats drafted"),
    (llamacpp_scrape(10, 30, 11, [6, 4, 1]) + sglang_scrape({"m": (2.0, 0.3)}), "mixes"),
    ("vllm:spec_decode_num_drafts_total 3\nSpecDecoding metrics: x", "mixes"),
])
def test_parse_any_refuses_in_one_line(text, message):
    with pytest.raises(ValueError, match=message) as info:
        vllm_metrics.parse_any(text)
    assert "\n" not in str(info.value) and len(str(info.value)) < 600


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.text(max_size=300),
                 st.lists(st.sampled_from(['{', '}', '[', ']', '"timings"', ':', ',', '"draft_n"', '"draft_n_accepted"',
                                           '1', '-1', '1e400', 'NaN', '"specDecodingStats"', '"numDraftTokens"', '\n',
                                           'sglang:spec_accept_length', 'llamacpp:spec_decode_num_drafts_total',
                                           ' ', '2.5', '{model_name="m"}']), max_size=60).map("".join)))
def test_parse_any_raises_only_value_error(text):
    try:
        kind, got = vllm_metrics.parse_any(text)
    except ValueError as exc:
        assert str(exc)
    else:
        assert kind in vllm_metrics.FORMATS
        if isinstance(got, SpecDecodeCounts):
            assert got.num_draft_tokens > 0 and 0 <= got.acceptance_rate() <= 1
