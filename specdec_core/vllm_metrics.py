"""Engines' speculative-decoding metrics in: vLLM's log line or scrape, llama.cpp's scrape and per-response timings,
SGLang's gauges and TensorRT-LLM's iteration stats -> SpecDecodeCounts (SGLang: its two interval averages).

Public API: parse(text, model_name=None) -> SpecDecodeCounts, with .acceptance_rate(), .mean_acceptance_length(),
.per_position_rates() (unconditional) and .conditional_alphas(); counts_from_rounds and rates_from_alphas turn the
app's own rounds or alpha_j into vLLM's quantities (definitions in specdec_core.vllm_counts).

Inputs, in vLLM's formats (vllm/v1/spec_decode/metrics.py):
- the log line ``SpecDecoding metrics: Mean acceptance length: %.2f, ..., Accepted: %d tokens, Drafted: %d
  tokens, Per-position acceptance rate: %.3f, ..., Avg Draft acceptance rate: %.1f%%``. Accepted and Drafted
  are exact counts; num_drafts is not printed; the rates are kept as printed. One line only: lines from
  several intervals cannot be pooled exactly without their numbers of drafts.
- a Prometheus text scrape of the server's /metrics (the counters with the client library's ``_total``
  suffix), read with prometheus_client's parser. Aggregation: series that differ only in labels other than
  ``model_name`` (engines, data-parallel ranks, scrape targets) are summed, which pools their counts exactly;
  a scrape with several model names needs ``model_name=`` (``model_names(text)`` lists them), because pooling
  two drafts' counts describes neither.
- llama.cpp's server (tools/server: server_context's metrics) exports the same four counters under
  ``llamacpp:spec_decode_num_*_total`` (per position 0-based, no model_name label): ``parse_prometheus(text,
  engine="llamacpp")``; each completion's ``timings`` carries ``draft_n`` and ``draft_n_accepted`` for that request.
- SGLang (srt/metrics/collector.py) exports gauges, not counters: ``sglang:spec_accept_length`` (mean accepted
  length over the last logging interval, bonus token included: E[N]) and ``sglang:spec_accept_rate`` (accepted /
  drafted in that interval). Averages of an unknown number of drafts cannot be differenced or pooled:
  ``parse_sglang`` returns them as VllmRates with no per-position rates.
- TensorRT-LLM's ``trtllm-serve`` answers ``/metrics`` with JSON: a list of iteration stats, each with
  ``specDecodingStats`` {numDraftTokens, numAcceptedTokens, numRequestsWithDraftTokens, acceptanceLength, ...}
  for the iterations since the previous call. Summed over iterations they are the three totals (no per-position
  counts): ``parse_trtllm``.
Which of these a text is: ``detect_engine(text)`` (a key of FORMATS, by the text's marks); ``parse_any(text,
model_name=None)`` detects and reads it in one call (the algebra page's paste box).
Inconsistent numbers (rates that increase, counts that do not add up, accepted > drafted, NaN, negatives)
raise ValueError with a message meant for the user; so does anything unreadable.
"""

from __future__ import annotations

import json
import math
import re

from specdec_core.vllm_counts import (
    EPS,
    LOG_PERCENT_ROUNDING,
    SpecDecodeCounts,
    VllmRates,
    counts_from_rounds,
    rates_from_alphas,
    whole_count,
)

__all__ = ["FORMATS", "SpecDecodeCounts", "VllmRates", "counts_from_rounds", "detect_engine", "model_names", "parse",
           "parse_any", "parse_llamacpp_timings", "parse_log_line", "parse_prometheus", "parse_sglang", "parse_trtllm",
           "rates_from_alphas"]

_PREFIX = "vllm:spec_decode_num_"
_COUNTERS = ("drafts", "draft_tokens", "accepted_tokens", "accepted_tokens_per_pos")
_DRAFTS, _DRAFT_TOKENS, _ACCEPTED, _PER_POS = (_PREFIX + s for s in _COUNTERS)
PREFIXES = {"vllm": "vllm:", "llamacpp": "llamacpp:"}   # engines exporting vLLM's four counters, by name prefix
MAX_TEXT = 4_000_000    # characters: a scrape past this is not a metrics page (bounded parsing)
_LOG_MARK = "SpecDecoding metrics:"
_NUM = r"[-+]?(?:nan|inf|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)"
_LOG_FIELDS = {
    "Mean acceptance length": re.compile(rf"Mean acceptance length:\s*({_NUM})", re.IGNORECASE),
    "Accepted": re.compile(rf"\bAccepted:\s*({_NUM})\s*tokens", re.IGNORECASE),
    "Drafted": re.compile(rf"\bDrafted:\s*({_NUM})\s*tokens", re.IGNORECASE),
    "Per-position acceptance rate": re.compile(
        rf"Per-position acceptance rate:\s*({_NUM}(?:\s*,\s*{_NUM})*)", re.IGNORECASE
    ),
    "Avg Draft acceptance rate": re.compile(rf"Avg Draft acceptance rate:\s*({_NUM})\s*%", re.IGNORECASE),
}


def parse_log_line(text: str) -> SpecDecodeCounts:
    """The one ``SpecDecoding metrics:`` line in text -> SpecDecodeCounts with the rates as printed (rounded)."""
    if text.count(_LOG_MARK) != 1:
        raise ValueError(
            f"Paste exactly one '{_LOG_MARK}' line (found {text.count(_LOG_MARK)}): lines from different "
            "intervals cannot be pooled exactly, because the line does not print its number of drafts."
        )
    line = " ".join(text[text.index(_LOG_MARK):].splitlines())     # a terminal may have wrapped the line
    found = {}
    for name, pattern in _LOG_FIELDS.items():
        m = pattern.search(line)
        if m is None:
            raise ValueError(
                f"The line has no '{name}: ...' field. Expected vLLM's format: Mean acceptance length, Accepted, "
                "Drafted, Per-position acceptance rate and Avg Draft acceptance rate (as the V1 engine logs them)."
            )
        found[name] = m.group(1)
    rates = tuple(float(x) for x in found["Per-position acceptance rate"].split(","))  # numbers only (the patterns)
    accepted = whole_count(float(found["Accepted"]), "Accepted")
    drafted = whole_count(float(found["Drafted"]), "Drafted")
    pct = float(found["Avg Draft acceptance rate"])
    counts = SpecDecodeCounts(None, drafted, accepted, None,
                              logged_mean_length=float(found["Mean acceptance length"]),
                              logged_position_rates=rates, source="log")
    if not abs(pct - 100.0 * accepted / drafted) <= LOG_PERCENT_ROUNDING + EPS:     # also catches nan
        raise ValueError(
            f"Avg Draft acceptance rate {pct:g}% should be 100 x Accepted / Drafted = "
            f"{100.0 * accepted / drafted:.2f}% (printed to 0.1%); the numbers do not add up."
        )
    return counts


def _families(text: str) -> list:
    """prometheus_client's parse of a text scrape, every failure as ValueError."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        return list(text_string_to_metric_families(text))
    except Exception as exc:  # broad on purpose: the parser raises several types on malformed text
        raise ValueError(f"Could not read the text as a Prometheus scrape: {exc}") from exc


def _engine_prefix(engine: str) -> str:
    """The metric-name prefix of an engine that exports vLLM's counters; ValueError for any other engine."""
    if engine not in PREFIXES:
        raise ValueError(f"Unknown engine {engine!r}: counters are read for {sorted(PREFIXES)}.")
    return PREFIXES[engine]


def _spec_samples(text: str, engine: str = "vllm", empty_ok: bool = False) -> list[tuple[str, dict[str, str], float]]:
    """(counter name without _total and engine prefix, as vLLM's, labels, value) for every spec-decode counter."""
    prefix = _engine_prefix(engine)
    if len(text) > MAX_TEXT:
        raise ValueError(f"The metrics text is {len(text):,} characters, more than {MAX_TEXT:,}: not a metrics page.")
    out = []
    for family in _families(text):
        for s in family.samples:
            name = s.name[: -len("_total")] if s.name.endswith("_total") else s.name
            as_vllm = "vllm:" + name[len(prefix):] if name.startswith(prefix) else ""
            if as_vllm in (_DRAFTS, _DRAFT_TOKENS, _ACCEPTED, _PER_POS):
                out.append((as_vllm, dict(s.labels), float(s.value)))
    if not out and not empty_ok:
        raise ValueError(
            f"No {prefix}spec_decode_num_* counters in that text. Is speculative decoding enabled on the server, "
            "and is this the output of its /metrics endpoint?"
        )
    return out


def model_names(text: str) -> list[str]:
    """The model_name label values in a vLLM or SGLang scrape, sorted ([] for any other format detect_engine reads)."""
    kind = detect_engine(text)
    if kind == "sglang":
        return sorted(_sglang_gauges(text))
    if kind != "vllm":
        return []
    return sorted({labels.get("model_name", "") for _, labels, _ in _spec_samples(text)})


def parse_prometheus(
    text: str, model_name: str | None = None, engine: str = "vllm", empty_ok: bool = False
) -> SpecDecodeCounts:
    """A Prometheus scrape -> SpecDecodeCounts, summed over engines (and any label but model_name).

    With several model_name values, model_name must name one of them. engine picks the name prefix (vLLM's
    counters under "vllm:" or llama.cpp's "llamacpp:"); empty_ok: a server that has not drafted yet (no
    counters, or num_drafts 0) gives zero counts instead of an error: the "before" of a differenced interval.
    """
    samples = _spec_samples(text, engine, empty_ok)
    if not samples:
        return SpecDecodeCounts(0, 0, 0, (), source="prometheus")
    models = sorted({labels.get("model_name", "") for _, labels, _ in samples})
    if model_name is not None:
        if model_name not in models:
            raise ValueError(f"No spec-decode counters for model {model_name!r}; the scrape has {models}.")
        samples = [s for s in samples if s[1].get("model_name", "") == model_name]
    elif len(models) > 1:
        raise ValueError(f"The scrape holds {len(models)} models {models}: choose one; their drafts differ.")
    totals: dict[str, float] = {}
    per_pos: dict[int, float] = {}
    seen, engines = set(), {}
    for name, labels, value in samples:
        key = (name, tuple(sorted(labels.items())))
        if key in seen:
            raise ValueError(f"The series {name}{labels} appears twice in the text.")
        seen.add(key)
        value = whole_count(value, name + "_total")
        if name == _PER_POS:
            try:
                pos = int(labels.get("position", ""))
            except ValueError:
                raise ValueError(f"{name} needs an integer position label; got {labels}.") from None
            per_pos[pos] = per_pos.get(pos, 0) + value
            rest = tuple(sorted((k, v) for k, v in labels.items() if k != "position"))
            engines.setdefault(rest, set()).add(pos)
        else:
            totals[name] = totals.get(name, 0) + value
    if empty_ok and totals.get(_DRAFTS, 0) == 0 and not any(per_pos.values()):
        return SpecDecodeCounts(0, int(totals.get(_DRAFT_TOKENS, 0)), int(totals.get(_ACCEPTED, 0)), (),
                                source="prometheus")
    if totals.get(_DRAFTS) == 0:
        raise ValueError("The server has not drafted anything yet (num_drafts is 0): send it some requests first.")
    own = _engine_prefix(engine)
    missing = [own + n[len("vllm:"):] + "_total" for n in (_DRAFTS, _DRAFT_TOKENS, _ACCEPTED) if n not in totals]
    missing += [] if per_pos else [own + _PER_POS[len("vllm:"):] + "_total"]
    if missing:
        raise ValueError(f"The scrape lacks {', '.join(missing)}: all four spec-decode counters are needed.")
    if sorted(per_pos) != list(range(len(per_pos))) or len({frozenset(p) for p in engines.values()}) != 1:
        raise ValueError(
            f"Positions must run 0..gamma-1 for every engine; got {sorted(per_pos)} "
            f"over {len(engines)} engine(s)."
        )
    if totals[_DRAFTS] == 0:
        raise ValueError("The server has not drafted anything yet (num_drafts is 0): send it some requests first.")
    return SpecDecodeCounts(int(totals[_DRAFTS]), int(totals[_DRAFT_TOKENS]), int(totals[_ACCEPTED]),
                            tuple(int(per_pos[j]) for j in range(len(per_pos))), source="prometheus")


def parse(text: str, model_name: str | None = None) -> SpecDecodeCounts:
    """A vLLM ``SpecDecoding metrics:`` log line or a Prometheus scrape -> SpecDecodeCounts; ValueError otherwise."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("Nothing to read: paste a 'SpecDecoding metrics:' log line or a Prometheus scrape.")
    has_log, has_prom = _LOG_MARK in text, "vllm:spec_decode" in text
    if has_log and has_prom:
        raise ValueError("The text holds both a log line and Prometheus counters: paste one or the other.")
    if has_log:
        return parse_log_line(text)
    if has_prom:
        return parse_prometheus(text, model_name)
    raise ValueError(
        f"Neither a '{_LOG_MARK}' log line nor vllm:spec_decode_* Prometheus counters were found in the text."
    )


def parse_llamacpp_timings(response: object) -> tuple[int, int]:
    """One llama.cpp completion's ``timings`` -> (draft_n, draft_n_accepted); (0, 0) when the request drafted nothing.

    The server adds both keys only when the request drafted; accepted > drafted or a non-count is a ValueError.
    """
    timings = response.get("timings") if isinstance(response, dict) else None
    if not isinstance(timings, dict):
        raise ValueError("The response has no 'timings' object: not a llama.cpp server completion.")
    drafted = whole_count(timings.get("draft_n", 0), "timings.draft_n")
    accepted = whole_count(timings.get("draft_n_accepted", 0), "timings.draft_n_accepted")
    if accepted > drafted:
        raise ValueError(f"timings: {accepted} draft tokens accepted of {drafted} drafted: impossible.")
    return drafted, accepted


_SGLANG = ("sglang:spec_accept_length", "sglang:spec_accept_rate")


def _sglang_gauges(text: str) -> dict[str, dict[str, float]]:
    """{model_name: {gauge name: value}} for SGLang's two spec-decode gauges in a scrape ({} when there are none)."""
    if len(text) > MAX_TEXT:
        raise ValueError(f"The metrics text is {len(text):,} characters, more than {MAX_TEXT:,}: not a metrics page.")
    found: dict[str, dict[str, float]] = {}
    for family in _families(text):
        for s in family.samples:
            if s.name in _SGLANG:
                found.setdefault(s.labels.get("model_name", ""), {})[s.name] = float(s.value)
    return found


def parse_sglang(text: str, model_name: str | None = None) -> VllmRates:
    """SGLang's two gauges -> VllmRates(acceptance rate, mean acceptance length E[N], ()): the last interval's
    averages (no counts, so no per-position rates and no differencing). The rate is NaN when only the length is
    exported (older SGLang); a length < 1, a rate outside [0, 1] or several models without model_name: ValueError.
    """
    found = _sglang_gauges(text)
    if not found:
        raise ValueError("No sglang:spec_accept_length gauge: is speculative decoding enabled on that SGLang server?")
    if model_name is None and len(found) > 1:
        raise ValueError(f"The scrape holds {len(found)} models {sorted(found)}: choose one; their drafts differ.")
    g = found.get(model_name if model_name is not None else next(iter(found)))
    if g is None or _SGLANG[0] not in g:
        raise ValueError(f"No sglang:spec_accept_length for model {model_name!r}; the scrape has {sorted(found)}.")
    length, rate = g[_SGLANG[0]], g.get(_SGLANG[1], math.nan)
    if not (math.isfinite(length) and length >= 1.0):
        raise ValueError(f"sglang:spec_accept_length is {length:g}: a mean acceptance length is at least 1.")
    if not math.isnan(rate) and not 0.0 <= rate <= 1.0:
        raise ValueError(f"sglang:spec_accept_rate is {rate:g}: an acceptance rate lies in [0, 1].")
    return VllmRates(rate, length, ())


def _trtllm_stats(text: str) -> list[dict]:
    """The JSON list of iteration stats (a list of objects, or a list of JSON strings), ValueError otherwise."""
    if len(text) > MAX_TEXT:
        raise ValueError(f"The metrics text is {len(text):,} characters, more than {MAX_TEXT:,}: not a metrics page.")
    try:
        raw = json.loads(text)
        stats = [json.loads(x) if isinstance(x, str) else x for x in raw] if isinstance(raw, list) else None
    except (json.JSONDecodeError, TypeError, RecursionError) as exc:
        raise ValueError(f"Could not read TensorRT-LLM's /metrics as JSON: {exc}") from None
    if stats is None or not all(isinstance(x, dict) for x in stats):
        raise ValueError("TensorRT-LLM's /metrics is a JSON list of iteration stats; this is something else.")
    return stats


def parse_trtllm(text: str) -> SpecDecodeCounts:
    """TensorRT-LLM iteration stats -> totals-only SpecDecodeCounts: sums of numRequestsWithDraftTokens (drafts),
    numDraftTokens and numAcceptedTokens over the iterations; [] (no iteration since the last call) is zero counts.
    Each iteration's acceptanceLength must equal 1 + accepted / requests (within 1e-6) where it drafted.
    """
    drafts = drafted = accepted = 0
    for i, it in enumerate(_trtllm_stats(text)):
        spec = it.get("specDecodingStats")
        if spec is None:
            continue
        if not isinstance(spec, dict):
            raise ValueError(f"Iteration {i}: specDecodingStats is not an object.")
        n_req = whole_count(spec.get("numRequestsWithDraftTokens", 0), "numRequestsWithDraftTokens")
        n_dft = whole_count(spec.get("numDraftTokens", 0), "numDraftTokens")
        n_acc = whole_count(spec.get("numAcceptedTokens", 0), "numAcceptedTokens")
        length = spec.get("acceptanceLength")
        if n_req and isinstance(length, (int, float)) and abs(length - (1 + n_acc / n_req)) > 1e-6:
            raise ValueError(f"Iteration {i}: acceptanceLength {length:g} is not 1 + {n_acc}/{n_req}; the stats "
                             "do not add up.")
        drafts, drafted, accepted = drafts + n_req, drafted + n_dft, accepted + n_acc
    return SpecDecodeCounts(drafts, drafted, accepted, None, source="trtllm")


# ------------------------------------------------------------------------------- any engine's text, detected --
FORMATS: dict[str, str] = {      # what detect_engine returns -> the words for what was read
    "vllm_log": "a vLLM 'SpecDecoding metrics:' log line",
    "vllm": "a vLLM /metrics scrape",
    "llamacpp": "a llama.cpp server /metrics scrape",
    "llamacpp_response": "a llama.cpp /completion response",
    "sglang": "an SGLang /metrics scrape",
    "trtllm": "TensorRT-LLM's /metrics iteration stats",
}
_MARKS = (("vllm_log", _LOG_MARK), ("vllm", "vllm:spec_decode"), ("llamacpp", "llamacpp:spec_decode"),
          ("sglang", "sglang:spec_accept"))
_NEITHER = (
    "Neither a vLLM 'SpecDecoding metrics:' log line or /metrics scrape, nor a llama.cpp /metrics scrape or "
    "/completion response (JSON with timings.draft_n), an SGLang scrape (sglang:spec_accept_*) or TensorRT-LLM's "
    "/metrics (a JSON list of iteration stats) was found in the text"
)


def _refuse_constant(name: str) -> float:
    """json.loads' parse_constant: NaN and Infinity are no count a server reports."""
    raise ValueError(f"{name} is not a number a server reports")


def _json_values(text: str) -> list[object] | None:
    """text as one JSON value, or as JSON Lines (one object per line); None when it is neither (ValueError when a
    line of what starts as JSON Lines is not JSON, or when nesting is too deep for any engine's output)."""
    try:
        try:
            return [json.loads(text, parse_constant=_refuse_constant)]
        except json.JSONDecodeError as exc:
            lines = [ln for ln in text.splitlines() if ln.strip()]
            if exc.msg != "Extra data" or len(lines) < 2:
                return None
            try:
                return [json.loads(ln, parse_constant=_refuse_constant) for ln in lines]
            except json.JSONDecodeError:
                raise ValueError(f"The text starts as JSON but is neither one JSON value nor one JSON object a line "
                                 f"(after the first value: {exc}).") from None
    except RecursionError:
        raise ValueError("The JSON is nested too deeply to be an engine's output.") from None
    except ValueError as exc:
        if "digits" in str(exc):         # Python's int-conversion limit (4,300 digits)
            raise ValueError("The JSON holds a number thousands of digits long: no engine counts that high.") from None
        raise


def _detect(text: str) -> tuple[str, list[object] | None]:
    """(format key, the JSON values where the text is JSON): see detect_engine."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError("Nothing to read: paste an engine's spec-decode metrics (a log line, a scrape or a response).")
    if len(text) > MAX_TEXT:
        raise ValueError(f"The text is {len(text):,} characters, more than {MAX_TEXT:,}: no engine's metrics are.")
    values = _json_values(text) if text.lstrip()[:1] in ("{", "[") else None
    if values is not None:
        if len(values) == 1 and isinstance(values[0], list):
            return "trtllm", values
        if all(isinstance(v, dict) and "timings" in v for v in values):
            return "llamacpp_response", values
        raise ValueError(f"{_NEITHER}: this JSON is neither a llama.cpp response with a 'timings' object (one, or "
                         "one a line) nor TensorRT-LLM's list of iteration stats.")
    found = [key for key, mark in _MARKS if mark in text]
    if not found:
        raise ValueError(f"{_NEITHER}.")
    if len(found) > 1:
        raise ValueError(f"The text mixes {' and '.join(FORMATS[k] for k in found)}: paste one of them.")
    return found[0], None


def detect_engine(text: str) -> str:
    """Which engine's output text is: a key of FORMATS, by the text's marks; ValueError naming the formats otherwise.

    JSON decides first (an object with 'timings', or one such object a line: llama.cpp's responses; a list:
    TensorRT-LLM's stats); then the marks: vLLM's log line, and the vllm:, llamacpp: and sglang: metric names, of
    which exactly one must occur. Work is linear in the text (substring scans and one JSON parse), at most MAX_TEXT.
    """
    return _detect(text)[0]


def _llamacpp_responses(values: list[object]) -> SpecDecodeCounts:
    """llama.cpp responses -> tokens-only counts: sum of draft_n, sum of draft_n_accepted (no number of drafts)."""
    drafted = accepted = 0
    for reply in values:
        d, a = parse_llamacpp_timings(reply)
        drafted, accepted = drafted + d, accepted + a
    if drafted == 0:
        raise ValueError("The response's timings have no draft_n: the request drafted nothing. Is the server started "
                         "with a draft model (--model-draft) or another speculative mode?")
    return SpecDecodeCounts(None, drafted, accepted, None, source="llamacpp_response")


def parse_any(text: str, model_name: str | None = None) -> tuple[str, SpecDecodeCounts | VllmRates]:
    """(detect_engine(text), its numbers): SpecDecodeCounts for vLLM, llama.cpp and TensorRT-LLM (per-position, totals
    or tokens only, as each engine gives), VllmRates for SGLang's interval averages. ValueError, one message for the
    user, for anything unreadable, inconsistent, or without a drafted token.
    """
    kind, values = _detect(text)
    try:
        if kind == "vllm_log":
            return kind, parse_log_line(text)
        if kind in ("vllm", "llamacpp"):
            return kind, parse_prometheus(text, model_name, engine=kind)
        if kind == "sglang":
            return kind, parse_sglang(text, model_name)
        if kind == "llamacpp_response":
            return kind, _llamacpp_responses(values or [])
        counts = parse_trtllm(text)
    except (ArithmeticError, RecursionError) as exc:      # a count too large for a float, nesting too deep
        raise ValueError(f"Read as {FORMATS[kind]}, but it holds a number no engine reports ({exc}).") from None
    if counts.num_draft_tokens == 0:
        raise ValueError("No iteration in these stats drafted a token (numDraftTokens 0 or absent throughout): is "
                         "speculative decoding on, and did requests run since the last call to /metrics?")
    return kind, counts
