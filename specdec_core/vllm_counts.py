"""vLLM's speculative-decoding counters and the three quantities it reports, against the app's alpha_j.

vLLM (vllm/v1/spec_decode/metrics.py) counts, per interval (log) or since start (Prometheus counters):
  num_drafts             rounds that proposed at least one token (one per request per engine step)
  num_draft_tokens       tokens proposed
  num_accepted_tokens    draft tokens accepted (the bonus or correction token is not counted)
  accepted_per_position  entry j-1: drafts whose first j tokens were all accepted, j = 1..gamma
                         (Prometheus labels it position="j-1", 0-based)
and reports three quantities:
  acceptance rate         = num_accepted_tokens / num_draft_tokens
  mean acceptance length  = 1 + num_accepted_tokens / num_drafts          (counts the bonus token: it is E[N])
  per-position rate r_j   = accepted_per_position[j-1] / num_drafts       (unconditional: P(N - 1 >= j))
The app's alpha_j are conditional: alpha_j = r_j / r_(j-1) with r_0 = 1, so r_j = prod_{i<=j} alpha_i and
1 + sum_j r_j = E[N] = the mean acceptance length. Feeding vLLM's r_j to 1 + sum_i prod_{j<=i} alpha_j is wrong.
When some drafts are shorter than gamma (a lookup drafter, a request ending), r_j / r_(j-1) counts those drafts
as reaching position j, so it is a lower bound on the conditional rate there; E[N] stays exact.

A log line prints rates, not counts: it is kept as printed (mean length to 2 decimals, r_j to 3), with
num_drafts and accepted_per_position None; ``rounding`` says how far r_j may be from the true value.
Parsing text (the log line, a Prometheus scrape) lives in specdec_core.vllm_metrics.

The same counts describe every engine the app reads: llama.cpp's server counts exactly vLLM's four counters
(``llamacpp:spec_decode_*``, position labels 0-based), TensorRT-LLM's iteration stats give the three totals but no
per-position counts (a totals-only SpecDecodeCounts: E[N] and the acceptance rate, no alpha_j), and counters
scraped before and after a workload are differenced with ``difference``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from specdec_core.measure import positional_counts
from specdec_core.validate import check_alphas, check_gamma

LOG_RATE_ROUNDING = 0.0005     # half a unit of "%.3f"
LOG_LENGTH_ROUNDING = 0.005    # half a unit of "%.2f"
LOG_PERCENT_ROUNDING = 0.05    # half a unit of "%.1f%%"
EPS = 1e-9                     # slack for float arithmetic on top of the printed rounding

class VllmRates(NamedTuple):
    """vLLM's three quantities: acceptance rate, mean acceptance length, per-position (unconditional) rates."""

    acceptance_rate: float
    mean_acceptance_length: float
    per_position_rates: tuple[float, ...]


def whole_count(x: float, name: str) -> int:
    """A counter value: finite, >= 0 and a whole number (vLLM only adds integers to these counters)."""
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a whole number >= 0; got {x!r}")
    if not math.isfinite(x) or x < 0 or x != math.floor(x):
        raise ValueError(f"{name} must be a whole number >= 0; got {x!r}")
    return int(x)


@dataclass(frozen=True)
class SpecDecodeCounts:
    """What vLLM reports over one interval; construction checks that the numbers are consistent (ValueError).

    From counts (a scrape or the app's rounds) num_drafts and accepted_per_position are set; from a log line
    they are None and logged_mean_length / logged_position_rates hold the printed, rounded values; totals only
    (TensorRT-LLM) sets num_drafts with neither, and then gamma is 0 and there are no alpha_j; tokens only (a
    llama.cpp response's timings) sets none of the three: an acceptance rate, and no E[N].
    """

    num_drafts: int | None
    num_draft_tokens: int
    num_accepted_tokens: int
    accepted_per_position: tuple[int, ...] | None
    logged_mean_length: float | None = None
    logged_position_rates: tuple[float, ...] | None = None
    source: str = "counts"

    def __post_init__(self) -> None:
        drafted = whole_count(self.num_draft_tokens, "Drafted tokens (num_draft_tokens)")
        accepted = whole_count(self.num_accepted_tokens, "Accepted tokens (num_accepted_tokens)")
        if accepted > drafted:
            raise ValueError(f"More tokens accepted ({accepted}) than drafted ({drafted}): impossible.")
        if self.accepted_per_position is not None and self.logged_position_rates is not None:
            raise ValueError("Give per-position counts (with num_drafts) or a log line's rates: not both.")
        if self.accepted_per_position is not None:
            self._check_counts(drafted, accepted)
        elif self.logged_position_rates is not None:
            self._check_logged(drafted, accepted)
        else:
            self._check_totals(drafted, accepted)

    def _check_totals(self, drafted: int, accepted: int) -> None:
        """Totals only: accepted <= drafted (checked above) and drafts <= drafted (each draft proposes a token);
        num_drafts None is tokens only (a llama.cpp response's draft_n and draft_n_accepted: no E[N])."""
        if self.logged_mean_length is not None:
            raise ValueError("Totals without per-position counts come without a logged mean length.")
        if self.num_drafts is None:
            return
        drafts = whole_count(self.num_drafts, "Drafts (num_drafts)")
        if drafts > drafted:
            raise ValueError(f"{drafts} drafts but only {drafted} drafted tokens: each draft proposes at least one.")

    def _check_counts(self, drafted: int, accepted: int) -> None:
        """sum_j accepted_j = accepted, accepted_j non-increasing, accepted_1 <= drafts <= drafted <= gamma drafts."""
        if self.num_drafts is None or self.logged_mean_length is not None:
            raise ValueError("Per-position counts come with num_drafts and without a logged mean length.")
        drafts = whole_count(self.num_drafts, "Drafts (num_drafts)")
        per = [whole_count(x, f"Accepted at position {j}") for j, x in enumerate(self.accepted_per_position, 1)]
        for j in range(1, len(per)):
            if per[j] > per[j - 1]:
                raise ValueError(
                    f"Accepted at position {j + 1} ({per[j]}) exceeds position {j} ({per[j - 1]}): a token is "
                    "only accepted after every earlier one was, so these counts cannot increase."
                )
        if per and per[0] > drafts:
            raise ValueError(f"Accepted at position 1 ({per[0]}) exceeds the number of drafts ({drafts}).")
        if sum(per) != accepted:
            raise ValueError(
                f"The per-position counts add up to {sum(per)} but Accepted is {accepted}: they must be equal, "
                "since a draft with n accepted tokens adds one to each of positions 1..n."
            )
        if drafts > drafted or drafted > len(per) * drafts:
            raise ValueError(
                f"{drafted} drafted tokens over {drafts} drafts of at most gamma = {len(per)} tokens does not add "
                f"up: each draft proposes 1 to {len(per)} tokens."
            )

    def _check_logged(self, drafted: int, accepted: int) -> None:
        """Printed rates in [0, 1], non-increasing, summing to mean length - 1 within the printed rounding."""
        if self.num_drafts is not None or self.logged_mean_length is None:
            raise ValueError("A log line's rates come with its mean acceptance length and without num_drafts.")
        mean = self.logged_mean_length
        if not math.isfinite(mean) or drafted == 0:
            raise ValueError("The line reports no drafts in its interval (Drafted: 0 tokens or nan): nothing to use.")
        r = np.asarray(self.logged_position_rates, dtype=np.float64)
        if r.size == 0 or not np.all(np.isfinite(r)) or np.any((r < 0) | (r > 1)):
            raise ValueError(f"Per-position acceptance rates must be numbers in [0, 1]; got {_fmt(r)}.")
        if np.any(np.diff(r) > 0):
            j = int(np.argmax(np.diff(r) > 0)) + 1
            raise ValueError(
                f"Per-position acceptance rate {j + 1} ({r[j]:g}) exceeds rate {j} ({r[j - 1]:g}): vLLM's rates "
                "are unconditional (the share of drafts with the first j tokens accepted), so they cannot increase."
            )
        tol = LOG_LENGTH_ROUNDING + r.size * LOG_RATE_ROUNDING + EPS
        if abs(mean - 1.0 - r.sum()) > tol:
            raise ValueError(
                f"Mean acceptance length {mean:g} should be 1 + the sum of the per-position rates = "
                f"{1 + r.sum():.4f} (within {tol:.4f} of rounding); the numbers do not add up."
            )
        if mean - 1.0 - LOG_LENGTH_ROUNDING > r.size * accepted / drafted + EPS:
            raise ValueError(
                f"Mean acceptance length {mean:g} says {mean - 1:.2f} tokens accepted per draft, but with at most "
                f"{r.size} tokens per draft and Accepted / Drafted = {accepted}/{drafted} there can be at most "
                f"{r.size * accepted / drafted:.3f}."
            )

    @property
    def gamma(self) -> int:
        """The number of draft positions vLLM reports (its num_speculative_tokens)."""
        if self.accepted_per_position is not None:
            return len(self.accepted_per_position)
        return len(self.logged_position_rates) if self.logged_position_rates is not None else 0

    @property
    def rounding(self) -> float:
        """Half-width of the rounding on per_position_rates: 0 from counts, 0.0005 from a log line."""
        return LOG_RATE_ROUNDING if self.logged_position_rates is not None else 0.0

    def acceptance_rate(self) -> float:
        """num_accepted_tokens / num_draft_tokens (exact in both sources); NaN when nothing was drafted."""
        return self.num_accepted_tokens / self.num_draft_tokens if self.num_draft_tokens else math.nan

    def mean_acceptance_length(self) -> float:
        """1 + num_accepted_tokens / num_drafts (the log line's printed value); NaN when there were no drafts."""
        if self.logged_mean_length is not None:
            return float(self.logged_mean_length)
        return 1.0 + self.num_accepted_tokens / self.num_drafts if self.num_drafts else math.nan

    def per_position_rates(self) -> NDArray[np.float64]:
        """r_j = accepted at position j / num_drafts, j = 1..gamma (unconditional; the log line's printed values)."""
        if self.logged_position_rates is not None:
            return np.asarray(self.logged_position_rates, dtype=np.float64)
        if self.accepted_per_position is None:
            return np.zeros(0)
        per = np.asarray(self.accepted_per_position, dtype=np.float64)
        return per / self.num_drafts if self.num_drafts else np.full(per.size, math.nan)

    def conditional_alphas(self) -> NDArray[np.float64]:
        """alpha_j = r_j / r_(j-1), r_0 = 1 (ratios of counts when counts exist); NaN where r_(j-1) = 0."""
        if self.accepted_per_position is None and self.logged_position_rates is None:
            return np.zeros(0)
        if self.accepted_per_position is not None:
            num = np.asarray(self.accepted_per_position, dtype=np.float64)
            den = np.concatenate([[self.num_drafts or 0], num[:-1]]).astype(np.float64)
        else:
            num = self.per_position_rates()
            den = np.concatenate([[1.0], num[:-1]])
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(den > 0, num / np.where(den > 0, den, 1.0), math.nan)

    def conditional_alpha_bounds(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """(lo, hi) of alpha_j given the rounding: [(r_j - h) / (r_(j-1) + h), (r_j + h) / (r_(j-1) - h)] in [0, 1].

        lo == hi == conditional_alphas() from counts; NaN where alpha_j is undefined.
        """
        a, h = self.conditional_alphas(), self.rounding
        if h == 0.0:
            return a, a
        r = self.per_position_rates()
        prev = np.concatenate([[1.0], r[:-1]])
        prev_lo = np.concatenate([[1.0], np.maximum(r[:-1] - h, 0.0)])        # r_0 = 1 is exact
        with np.errstate(divide="ignore", invalid="ignore"):
            lo = np.maximum(r - h, 0.0) / (prev + np.where(np.arange(r.size) > 0, h, 0.0))
            hi = np.where(prev_lo > 0, (r + h) / np.where(prev_lo > 0, prev_lo, 1.0), 1.0)
        nan = np.isnan(a)
        return np.where(nan, math.nan, np.clip(lo, 0.0, 1.0)), np.where(nan, math.nan, np.clip(hi, 0.0, 1.0))

    def drafts_shorter_than_gamma(self) -> bool:
        """True when the numbers show some drafts with fewer than gamma tokens (num_draft_tokens < gamma drafts).

        A log line lacks num_drafts (= Accepted / sum_j r_j): True only when the fewest drafts its rounding allows
        still exceed Drafted / gamma, i.e. Drafted (sum_j r_j + gamma h) < gamma Accepted.
        """
        if self.num_drafts is not None:
            return self.num_draft_tokens < self.gamma * self.num_drafts
        s = float(self.per_position_rates().sum()) + self.gamma * LOG_RATE_ROUNDING
        return self.num_accepted_tokens > 0 and self.num_draft_tokens * s < self.gamma * self.num_accepted_tokens

    def rates(self) -> VllmRates:
        """vLLM's three quantities from these numbers."""
        r = tuple(float(x) for x in self.per_position_rates())
        return VllmRates(self.acceptance_rate(), self.mean_acceptance_length(), r)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready: the counts, vLLM's three quantities and the conditional alpha_j (None where undefined)."""
        def clean(xs: ArrayLike) -> list[float | None]:
            return [None if math.isnan(x) else float(x) for x in np.asarray(xs, dtype=np.float64)]

        rate, length = self.acceptance_rate(), self.mean_acceptance_length()
        return {
            "source": self.source,
            "num_drafts": self.num_drafts,
            "num_draft_tokens": self.num_draft_tokens,
            "num_accepted_tokens": self.num_accepted_tokens,
            "accepted_per_position": None if self.accepted_per_position is None else list(self.accepted_per_position),
            "acceptance_rate": None if math.isnan(rate) else rate,
            "mean_acceptance_length": None if math.isnan(length) else length,
            "per_position_rates": clean(self.per_position_rates()),
            "conditional_alphas": clean(self.conditional_alphas()),
        }


def _fmt(values: ArrayLike, limit: int = 8) -> str:
    """A short rendering of numbers for a message (at most ``limit`` of them)."""
    xs = [f"{x:g}" for x in np.asarray(values, dtype=np.float64).reshape(-1)]
    return ", ".join(xs[:limit]) + (", ..." if len(xs) > limit else "")


def counts_from_rounds(drafted: Sequence[int], accepted: Sequence[int], gamma: int) -> SpecDecodeCounts:
    """vLLM's counters for the app's rounds (k drafted, n accepted, 0 <= n <= k <= gamma), as vLLM counts them.

    num_drafts = rounds with k > 0, num_draft_tokens = sum k, num_accepted_tokens = sum n,
    accepted_per_position[j-1] = rounds with n >= j. A round that drafted nothing is not a draft.
    """
    g = int(check_gamma(gamma))
    _, acc = positional_counts(drafted, accepted, g)
    k, n = np.asarray(list(drafted), dtype=np.int64), np.asarray(list(accepted), dtype=np.int64)
    if np.any(k > g):
        raise ValueError(f"a round drafted {int(k.max())} tokens, more than gamma = {g}")
    return SpecDecodeCounts(int((k > 0).sum()), int(k.sum()), int(n.sum()), tuple(int(x) for x in acc),
                            source="rounds")


def rates_from_alphas(alphas: ArrayLike) -> VllmRates:
    """vLLM's quantities expected under conditional alpha_j when every draft has gamma tokens:
    r_j = prod_{i<=j} alpha_i, mean length = 1 + sum_j r_j = E[N], acceptance rate = sum_j r_j / gamma (NaN at gamma 0).
    """
    r = np.cumprod(check_alphas(alphas))
    return VllmRates(float(r.sum() / r.size) if r.size else math.nan, float(1.0 + r.sum()), tuple(float(x) for x in r))


def difference(after: SpecDecodeCounts, before: SpecDecodeCounts) -> SpecDecodeCounts:
    """Counters over an interval: after - before, per counter and position; ValueError if any went backwards.

    A counter that decreased means the server restarted between the scrapes; the interval's counts are then unknown.
    """
    if after.num_drafts is None or before.num_drafts is None or after.logged_position_rates is not None:
        raise ValueError("Only counters (a scrape) can be differenced, not a log line's rates.")
    a_per, b_per = after.accepted_per_position or (), before.accepted_per_position or ()
    if (after.accepted_per_position is None) != (before.accepted_per_position is None) or (
        b_per and len(a_per) != len(b_per)
    ):
        raise ValueError(f"The two scrapes have different draft positions ({len(b_per)} then {len(a_per)}).")
    pairs = [(after.num_drafts, before.num_drafts), (after.num_draft_tokens, before.num_draft_tokens),
             (after.num_accepted_tokens, before.num_accepted_tokens), *zip(a_per, b_per)]
    if any(x < y for x, y in pairs):
        raise ValueError("A counter went down between the two scrapes: the server restarted; run the workload again.")
    per = None if after.accepted_per_position is None else tuple(x - y for x, y in zip(a_per, b_per))
    if per is not None and not b_per:
        per = tuple(a_per)
    return SpecDecodeCounts(after.num_drafts - before.num_drafts, after.num_draft_tokens - before.num_draft_tokens,
                            after.num_accepted_tokens - before.num_accepted_tokens, per, source=after.source)
