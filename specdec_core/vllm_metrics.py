"""vLLM's speculative-decoding metrics in: its periodic log line or a Prometheus scrape -> SpecDecodeCounts.

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
Inconsistent numbers (rates that increase, counts that do not add up, accepted > drafted, NaN, negatives)
raise ValueError with a message meant for the user; so does anything unreadable.
"""

from __future__ import annotations

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

__all__ = ["SpecDecodeCounts", "VllmRates", "counts_from_rounds", "model_names", "parse", "parse_log_line",
           "parse_prometheus", "rates_from_alphas"]

_PREFIX = "vllm:spec_decode_num_"
_DRAFTS, _DRAFT_TOKENS, _ACCEPTED, _PER_POS = (
    _PREFIX + s for s in ("drafts", "draft_tokens", "accepted_tokens", "accepted_tokens_per_pos")
)
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


def _spec_samples(text: str) -> list[tuple[str, dict[str, str], float]]:
    """(counter name without _total, labels, value) for every vllm:spec_decode_num_* counter sample."""
    out = []
    for family in _families(text):
        for s in family.samples:
            name = s.name[: -len("_total")] if s.name.endswith("_total") else s.name
            if name in (_DRAFTS, _DRAFT_TOKENS, _ACCEPTED, _PER_POS):
                out.append((name, dict(s.labels), float(s.value)))
    if not out:
        raise ValueError(
            "No vllm:spec_decode_num_* counters in that text. Is speculative decoding enabled on the server, "
            "and is this the output of its /metrics endpoint?"
        )
    return out


def model_names(text: str) -> list[str]:
    """The model_name label values of the spec-decode counters in a scrape, sorted ([] for a log line)."""
    if _LOG_MARK in text and "vllm:spec_decode" not in text:
        return []
    return sorted({labels.get("model_name", "") for _, labels, _ in _spec_samples(text)})


def parse_prometheus(text: str, model_name: str | None = None) -> SpecDecodeCounts:
    """A Prometheus scrape -> SpecDecodeCounts, summed over engines (and any label but model_name).

    With several model_name values, model_name must name one of them.
    """
    samples = _spec_samples(text)
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
    missing = [n + "_total" for n in (_DRAFTS, _DRAFT_TOKENS, _ACCEPTED) if n not in totals]
    missing += [] if per_pos else [_PER_POS + "_total"]
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
