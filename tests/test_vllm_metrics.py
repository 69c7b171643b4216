"""vLLM's spec-decode metrics: hand computations, both input formats round-tripped, and bad input as ValueError."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, generate_latest

from specdec_core import algebra, measure, vllm_metrics

FAST = settings(max_examples=150, deadline=None)
NAMES = ("drafts", "draft_tokens", "accepted_tokens")


VLLM_FORMAT = (   # SpecDecodingLogging.log's format string, behind a logger prefix
    "INFO 05-12 10:00:00 [metrics.py:95] SpecDecoding metrics: Mean acceptance length: %.2f, "
    "Accepted throughput: %.2f tokens/s, Drafted throughput: %.2f tokens/s, Accepted: %d tokens, "
    "Drafted: %d tokens, Per-position acceptance rate: %s, Avg Draft acceptance rate: %.1f%%"
)


def log_line(drafts: int, drafted: int, accepted: int, per_pos: list[int]) -> str:
    """The line exactly as vLLM's SpecDecodingLogging.log formats it (same format string, same rounding)."""
    rates = ", ".join(f"{x / drafts:.3f}" for x in per_pos)
    pct = accepted / drafted * 100 if drafted else float("nan")
    return VLLM_FORMAT % (1 + accepted / drafts, accepted / 10, drafted / 10, accepted, drafted, rates, pct)


def scrape(engines: dict[tuple[str, str], tuple[int, int, int, list[int]]]) -> str:
    """A /metrics text from prometheus_client itself, with vLLM's counter names and labels, one set per engine."""
    reg = CollectorRegistry()
    labels = ["model_name", "engine"]
    counters = {n: Counter(f"vllm:spec_decode_num_{n}", n, labels, registry=reg) for n in NAMES}
    per_pos = Counter("vllm:spec_decode_num_accepted_tokens_per_pos", "per pos", [*labels, "position"], registry=reg)
    for (model, engine), (drafts, drafted, accepted, per) in engines.items():
        for name, value in zip(NAMES, (drafts, drafted, accepted)):
            counters[name].labels(model, engine).inc(value)
        for pos, value in enumerate(per):
            per_pos.labels(model, engine, str(pos)).inc(value)
    return generate_latest(reg).decode()


# alpha_j = (0.9, 0.5, 0.2) over 100 drafts of 3 tokens: 10 stop at N - 1 = 0, 45 at 1, 36 at 2, 9 at 3.
ROUNDS_K = [3] * 100
ROUNDS_N = [0] * 10 + [1] * 45 + [2] * 36 + [3] * 9
HAND = {"drafts": 100, "drafted": 300, "accepted": 45 + 72 + 27, "per_pos": [90, 45, 9]}


def assert_hand(c: vllm_metrics.SpecDecodeCounts) -> None:
    """The hand computation: r = 0.9, 0.45, 0.09; rate 144/300 = 0.48; length 1 + 144/100 = 2.44."""
    assert c.gamma == 3
    assert c.acceptance_rate() == pytest.approx(0.48, abs=1e-15)
    assert c.mean_acceptance_length() == pytest.approx(2.44, abs=1e-15)
    np.testing.assert_allclose(c.per_position_rates(), [0.9, 0.45, 0.09], atol=1e-15)
    np.testing.assert_allclose(c.conditional_alphas(), [0.9, 0.5, 0.2], atol=1e-12)
    assert algebra.expected_tokens_positional(c.conditional_alphas()) == pytest.approx(2.44, abs=1e-12)
    assert not c.drafts_shorter_than_gamma()


def test_hand_example_from_rounds_counts_and_rates():
    c = vllm_metrics.counts_from_rounds(ROUNDS_K, ROUNDS_N, 3)
    assert (c.num_drafts, c.num_draft_tokens, c.num_accepted_tokens) == (100, 300, 144)
    assert c.accepted_per_position == (90, 45, 9)
    assert_hand(c)
    assert_hand(vllm_metrics.SpecDecodeCounts(100, 300, 144, (90, 45, 9)))
    r = vllm_metrics.rates_from_alphas([0.9, 0.5, 0.2])                   # what vLLM would report, in expectation
    assert r.acceptance_rate == pytest.approx(0.48) and r.mean_acceptance_length == pytest.approx(2.44)
    np.testing.assert_allclose(r.per_position_rates, [0.9, 0.45, 0.09])
    # The two tempting misreadings give other numbers: unconditional rates as alpha_j, the rate as constant alpha.
    assert algebra.expected_tokens_positional([0.9, 0.45, 0.09]) == pytest.approx(1 + 0.9 + 0.405 + 0.03645)
    assert algebra.expected_tokens(0.48, 3) == pytest.approx(1 + 0.48 + 0.48**2 + 0.48**3)


def test_hand_example_round_trips_through_the_log_line():
    line = log_line(HAND["drafts"], HAND["drafted"], HAND["accepted"], HAND["per_pos"])
    assert "Per-position acceptance rate: 0.900, 0.450, 0.090, Avg Draft acceptance rate: 48.0%" in line
    c = vllm_metrics.parse(line)
    assert c.source == "log" and c.num_drafts is None and c.accepted_per_position is None
    assert (c.num_draft_tokens, c.num_accepted_tokens) == (300, 144)
    assert c.rounding == 0.0005
    assert_hand(c)
    lo, hi = c.conditional_alpha_bounds()                      # the printed rounding, carried to alpha_j
    assert np.all(lo <= [0.9, 0.5, 0.2]) and np.all(hi >= [0.9, 0.5, 0.2]) and np.all(hi - lo < 0.02)
    wrapped = line.replace("Drafted throughput", "\nDrafted throughput")   # a terminal wrapped it
    assert vllm_metrics.parse(wrapped).rates() == c.rates()


def test_hand_example_round_trips_through_a_scrape_of_two_engines():
    text = scrape({("m", "0"): (60, 180, 86, [50, 30, 6]), ("m", "1"): (40, 120, 58, [40, 15, 3])})
    assert "vllm:spec_decode_num_drafts_total{" in text and 'position="0"' in text
    c = vllm_metrics.parse(text)
    assert c.source == "prometheus" and c.accepted_per_position == (90, 45, 9)
    assert_hand(c)
    assert vllm_metrics.model_names(text) == ["m"]
    hand_written = "\n".join([
        "# TYPE vllm:spec_decode_num_drafts counter",
        'vllm:spec_decode_num_drafts_total{model_name="m",engine="0"} 100.0',
        'vllm:spec_decode_num_draft_tokens_total{model_name="m",engine="0"} 300.0',
        'vllm:spec_decode_num_accepted_tokens_total{model_name="m",engine="0"} 144.0',
        *(f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{model_name="m",engine="0",position="{j}"}} {x}'
          for j, x in enumerate([90, 45, 9])),
    ])
    assert vllm_metrics.parse(hand_written) == c


def test_several_models_need_a_choice():
    text = scrape({("a", "0"): (100, 300, 144, [90, 45, 9]), ("b", "0"): (10, 20, 5, [4, 1])})
    assert vllm_metrics.model_names(text) == ["a", "b"]
    with pytest.raises(ValueError, match="2 models"):
        vllm_metrics.parse(text)
    assert_hand(vllm_metrics.parse(text, model_name="a"))
    b = vllm_metrics.parse(text, model_name="b")
    assert b.gamma == 2 and b.mean_acceptance_length() == pytest.approx(1.5)
    with pytest.raises(ValueError, match="'c'"):
        vllm_metrics.parse(text, model_name="c")


def test_conditional_alphas_equal_the_live_pages_when_drafts_are_full():
    rng = np.random.default_rng(0)
    n = rng.binomial(1, 0.8, (500, 5)).cumprod(axis=1).sum(axis=1)        # accepted prefix lengths
    k = np.full(500, 5)
    c = vllm_metrics.counts_from_rounds(k, n, 5)
    np.testing.assert_allclose(c.conditional_alphas(), measure.alpha_by_position(k, n, 5), rtol=1e-12)
    assert c.mean_acceptance_length() == pytest.approx(1 + n.mean())


def test_short_drafts_give_lower_bounds_and_the_exact_mean_length():
    k, n = [3, 3, 1, 1], [3, 2, 1, 1]        # two drafts stopped at 1 token, both accepted
    c = vllm_metrics.counts_from_rounds(k, n, 3)
    assert c.drafts_shorter_than_gamma()
    live = measure.alpha_by_position(k, n, 3)                  # conditional on position j being drafted
    np.testing.assert_allclose(live, [1.0, 1.0, 0.5])
    np.testing.assert_allclose(c.conditional_alphas(), [1.0, 0.5, 0.5])   # 2 of 4 reached position 2 in vLLM's count
    assert np.all(c.conditional_alphas() <= live)
    assert algebra.expected_tokens_positional(c.conditional_alphas()) == pytest.approx(c.mean_acceptance_length())
    line = vllm_metrics.parse(log_line(4, 8, 7, [4, 2, 1]))
    assert line.drafts_shorter_than_gamma()


def test_unreached_positions_and_empty_runs():
    c = vllm_metrics.SpecDecodeCounts(5, 15, 2, (2, 0, 0))
    a = c.conditional_alphas()
    assert a[0] == pytest.approx(0.4) and a[1] == 0.0 and math.isnan(a[2])
    empty = vllm_metrics.counts_from_rounds([0, 0], [0, 0], 4)            # a lookup drafter that never matched
    assert empty.num_drafts == 0 and math.isnan(empty.acceptance_rate()) and math.isnan(empty.mean_acceptance_length())
    d = empty.as_dict()
    json.dumps(d, allow_nan=False)                              # NaN becomes null, so the bench JSON stays valid
    assert d["acceptance_rate"] is None and d["conditional_alphas"] == [None] * 4
    full = vllm_metrics.counts_from_rounds(ROUNDS_K, ROUNDS_N, 3).as_dict()
    assert full["mean_acceptance_length"] == pytest.approx(2.44) and full["accepted_per_position"] == [90, 45, 9]
    empty = vllm_metrics.rates_from_alphas([])
    assert math.isnan(empty.acceptance_rate) and empty.mean_acceptance_length == 1


GOOD = log_line(100, 300, 144, [90, 45, 9])


@pytest.mark.parametrize(
    "text, message",
    [
        (GOOD.replace("0.900, 0.450, 0.090", "0.900, 0.450, 0.500"), "cannot increase"),
        (GOOD.replace("0.900, 0.450, 0.090", "0.900, nan, 0.090"), r"\[0, 1\]"),
        (GOOD.replace("0.900, 0.450, 0.090", "0.900, -0.450, 0.090"), r"\[0, 1\]"),
        (GOOD.replace("Mean acceptance length: 2.44", "Mean acceptance length: 2.60"), "do not add up"),
        (GOOD.replace("48.0%", "52.0%"), "do not add up"),
        (GOOD.replace("Accepted: 144", "Accepted: 344"), "More tokens accepted"),
        (GOOD.replace("Drafted: 300", "Drafted: -300"), "whole number"),
        (GOOD.replace("Drafted: 300", "Drafted: 900").replace("48.0%", "16.0%"), "at most"),
        (GOOD + "\n" + GOOD, "exactly one"),
        (GOOD.replace(", Avg Draft acceptance rate: 48.0%", ""), "Avg Draft acceptance rate"),
        (
            "SpecDecoding metrics: Draft acceptance rate: 48.0%, Accepted: 144 tokens, Drafted: 300 tokens",
            "Mean acceptance length",
        ),
        (log_line(1, 0, 0, [0, 0]), "no drafts"),
        ("hello", "Neither"),
        ("   ", "Nothing to read"),
        (GOOD + "\nvllm:spec_decode_num_drafts_total 3", "both"),
    ],
)
def test_bad_log_lines_are_refused_with_a_message(text, message):
    with pytest.raises(ValueError, match=message):
        vllm_metrics.parse(text)


def _prom(drafts="100", drafted="300", accepted="144", per=("90", "45", "9"), extra=""):
    lines = [
        f"vllm:spec_decode_num_drafts_total {drafts}",
        f"vllm:spec_decode_num_draft_tokens_total {drafted}",
        f"vllm:spec_decode_num_accepted_tokens_total {accepted}",
    ]
    lines += [f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{position="{j}"}} {x}' for j, x in enumerate(per)]
    return "\n".join(lines) + extra + "\n"


def test_bare_scrape_is_read():
    assert_hand(vllm_metrics.parse(_prom()))


@pytest.mark.parametrize(
    "text, message",
    [
        (_prom(per=("90", "45", "60")), "cannot increase"),
        (_prom(per=("90", "45", "10")), "add up to 145"),
        (_prom(accepted="400", per=("200", "150", "50")), "More tokens accepted"),
        (_prom(per=("120", "20", "4")), "exceeds the number of drafts"),
        (_prom(drafted="500"), "does not add up"),
        (_prom(drafts="0"), "not drafted anything"),
        (_prom(drafts="NaN"), "whole number"),
        (_prom(drafts="-100"), "whole number"),
        (_prom(drafts="100.5"), "whole number"),
        (_prom(drafts="+Inf"), "whole number"),
        (_prom().replace('position="1"', 'position="4"'), "0..gamma-1"),
        (_prom().replace('position="1"', 'position="x"'), "integer position"),
        (_prom().replace("vllm:spec_decode_num_draft_tokens_total 300\n", ""), "lacks vllm:spec_decode_num_draft_tok"),
        (_prom(extra="\nvllm:spec_decode_num_drafts_total 100"), "twice"),
        (_prom(extra="\nvllm:spec_decode_num_drafts_total{ 1"), "Prometheus"),
        ("vllm:spec_decode_other_total 3\n", "No vllm:spec_decode_num"),
    ],
)
def test_bad_scrapes_are_refused_with_a_message(text, message):
    with pytest.raises(ValueError, match=message):
        vllm_metrics.parse(text)


def test_counts_from_rounds_refuses_impossible_rounds():
    with pytest.raises(ValueError, match="more than gamma"):
        vllm_metrics.counts_from_rounds([4], [1], 3)
    with pytest.raises(ValueError, match="accepted <= drafted"):
        vllm_metrics.counts_from_rounds([2], [3], 3)


rounds = st.integers(1, 8).flatmap(
    lambda g: st.tuples(st.just(g), st.lists(st.tuples(st.integers(1, g), st.integers(0, g)), min_size=1, max_size=60))
)


@FAST
@given(rounds)
def test_any_real_run_round_trips_both_formats(case):
    """Rounds as vLLM would count them -> its log line and its scrape -> parse: never refused, numbers agree."""
    g, pairs = case
    k = [kk for kk, _ in pairs]
    n = [min(nn, kk) for kk, nn in pairs]
    c = vllm_metrics.counts_from_rounds(k, n, g)
    prom = vllm_metrics.parse(
        scrape({("m", "0"): (c.num_drafts, c.num_draft_tokens, c.num_accepted_tokens, list(c.accepted_per_position))})
    )
    assert prom == vllm_metrics.SpecDecodeCounts(
        c.num_drafts, c.num_draft_tokens, c.num_accepted_tokens, c.accepted_per_position, source="prometheus"
    )
    line = vllm_metrics.parse(
        log_line(c.num_drafts, c.num_draft_tokens, c.num_accepted_tokens, list(c.accepted_per_position))
    )
    assert line.acceptance_rate() == c.acceptance_rate()  # exact counts in the line
    assert abs(line.mean_acceptance_length() - c.mean_acceptance_length()) <= 0.005 + 1e-12
    assert np.all(np.abs(line.per_position_rates() - c.per_position_rates()) <= 0.0005 + 1e-12)
    lo, hi = line.conditional_alpha_bounds()
    exact = c.conditional_alphas()
    known = ~np.isnan(lo)
    assert np.all(lo[known] <= exact[known] + 1e-12) and np.all(exact[known] <= hi[known] + 1e-12)
    if line.drafts_shorter_than_gamma():  # never claims short drafts that were not there
        assert c.drafts_shorter_than_gamma()


FRAGMENTS = [
    "SpecDecoding metrics:",
    " Mean acceptance length:",
    " Accepted:",
    " Drafted:",
    " tokens",
    ",",
    " ",
    " Per-position acceptance rate:",
    " Avg Draft acceptance rate:",
    "%",
    "nan",
    "-1",
    "0.5",
    "2.44",
    "1e400",
    "144",
    "300",
    "\n",
    "vllm:spec_decode_num_drafts_total",
    "vllm:spec_decode_num_accepted_tokens_per_pos",
    "_total",
    "{",
    "}",
    'position="0"',
    'model_name="m"',
    "# TYPE x counter",
    "\\",
    '"',
    "=",
    "+Inf",
]


@FAST
@given(
    st.one_of(
        st.text(max_size=200),
        st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=5), max_size=40).map("".join),
        st.tuples(st.sampled_from([GOOD, _prom()]), st.integers(0, 400), st.text(max_size=8)).map(
            lambda t: t[0][: t[1]] + t[2] + t[0][t[1] + len(t[2]) :]
        ),
    )
)
def test_parse_raises_only_value_error(text):
    try:
        c = vllm_metrics.parse(text)
    except ValueError as exc:
        assert str(exc)
    else:
        assert c.num_draft_tokens > 0 and 0 <= c.acceptance_rate() <= 1
        assert 1 <= c.mean_acceptance_length() <= c.gamma + 1 + 0.005


def test_negative_control_without_the_rounding_allowance_a_real_line_is_refused(monkeypatch):
    """The tolerances are needed: with none, vLLM's own line for 1 accepted of 3 drafts (1.33 vs 0.333) fails."""
    from specdec_core import vllm_counts

    line = log_line(3, 3, 1, [1])
    assert vllm_metrics.parse(line).per_position_rates()[0] == 0.333
    monkeypatch.setattr(vllm_counts, "LOG_LENGTH_ROUNDING", 0.0)
    monkeypatch.setattr(vllm_counts, "LOG_RATE_ROUNDING", 0.0)
    with pytest.raises(ValueError, match="do not add up"):
        vllm_metrics.parse(line)
