"""The workload: the committed chat prompts, speculation off and on, interleaved; counters differenced -> the algebra.

For each repeat (A B B A order, specdec_core.repeats.race_order) both sides send the same prompts with the same
token count, temperature and seed. The speculative side's counters are scraped before and after and differenced
(SpecDecodeCounts), giving alpha_j and E[N]; the speeds give the measured speedup; the algebra's prediction for those
alpha_j uses c from the draft's kind (1 for the target as its own draft, 0 for a lookup) and v = 1 (a verify pass
as cheap as one decode step: the memory-bound ideal). The gap is split as the live page splits ours
(specdec_core.repeats.gap_parts): the acceptance draw (tokens per target pass / E[N]: rounds without a draft
count here) and the per-round cost the algebra does not model.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field

import numpy as np

from engines.client import Completion, Endpoint, EngineError, chat, counter, scrape
from specdec_core import algebra
from specdec_core.formatting import fixed
from specdec_core.measure import Measured, fill_unreached
from specdec_core.repeats import RepeatSummary, check_repeats, race_order, summarise_repeats
from specdec_core.vllm_counts import SpecDecodeCounts, VllmRates, difference

Reading = SpecDecodeCounts | VllmRates
MAX_TOKENS = 256
MAX_PROMPTS = 10
MAX_URL_GAMMA = 64        # draft lengths a server may be told it runs (vLLM's num_speculative_tokens, ...)
MAX_RUNS = 2              # workloads running at once in this process (each holds a page session and a server)
WORKLOAD_DEADLINE_S = 600.0
_RUNS = threading.BoundedSemaphore(MAX_RUNS)


@contextmanager
def run_slot():
    """Hold one of the MAX_RUNS slots for a workload; EngineError at once when all are taken."""
    if not _RUNS.acquire(blocking=False):
        raise EngineError(f"{MAX_RUNS} workloads are already running on this server; try again when one finishes.")
    try:
        yield
    finally:
        _RUNS.release()


def check_gamma(gamma: object, hi: int = MAX_URL_GAMMA) -> int:
    """gamma if it is an integer draft length in [1, hi], else ValueError (before anything is sized by it)."""
    if isinstance(gamma, bool) or not isinstance(gamma, int) or not 1 <= gamma <= hi:
        raise ValueError(f"gamma must be an integer draft length in [1, {hi}]; got {gamma!r}")
    return gamma


def chat_prompts() -> tuple[str, ...]:
    """The benchmarks' held-out chat prompts (one home: gpu_demo.training.eagle_data)."""
    from gpu_demo.training.eagle_data import BENCH_CHAT_PROMPTS

    return tuple(BENCH_CHAT_PROMPTS)


@dataclass(frozen=True)
class Workload:
    """What is sent: n_prompts of the committed chat prompts, max_tokens each, at temperature, repeated."""

    n_prompts: int = 8
    max_tokens: int = 64
    temperature: float = 0.0
    repeats: int = 2
    seed: int = 0

    def __post_init__(self) -> None:
        for name, value, lo, hi in (("n_prompts", self.n_prompts, 1, MAX_PROMPTS),
                                    ("max_tokens", self.max_tokens, 1, MAX_TOKENS)):
            if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
                raise ValueError(f"{name} must be an integer in [{lo}, {hi}]; got {value!r}")
        if not (isinstance(self.temperature, (int, float)) and 0.0 <= self.temperature <= 2.0):
            raise ValueError(f"temperature must be in [0, 2]; got {self.temperature!r}")
        check_repeats(self.repeats)

    def prompts(self) -> tuple[str, ...]:
        return chat_prompts()[: self.n_prompts]


@dataclass(frozen=True)
class SideRun:
    """One side of one repeat: the replies, their tokens and wall seconds, and (speculative) the differenced counts."""

    completions: tuple[Completion, ...]
    counts: SpecDecodeCounts | VllmRates | None
    passes: int | None  # target passes over the run (llama.cpp's n_decode_total differenced), None if unknown

    @property
    def tokens(self) -> int:
        return sum(c.tokens for c in self.completions)

    @property
    def wall_s(self) -> float:
        return sum(c.wall_s for c in self.completions)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.wall_s if self.wall_s > 0 else math.nan


def run_side(endpoint: Endpoint, engine: str, work: Workload, speculative: bool,
             deadline: float | None = None) -> SideRun:
    """Send every prompt once; for the speculative side, scrape the counters before and after and difference them.
    Every request must finish before deadline (time.monotonic()), when given."""
    before = scrape(endpoint, engine, empty_ok=True, deadline=deadline) if speculative else None
    n0 = counter(endpoint, "llamacpp:n_decode_total", deadline) if engine == "llamacpp" else None
    done = tuple(chat(endpoint, p, work.max_tokens, work.temperature, work.seed + i, deadline=deadline)
                 for i, p in enumerate(work.prompts()))
    n1 = counter(endpoint, "llamacpp:n_decode_total", deadline) if engine == "llamacpp" else None
    counts = None
    if speculative:
        after = scrape(endpoint, engine, empty_ok=True, deadline=deadline)
        counts = _interval(after, before)
    passes = n1 - n0 if n0 is not None and n1 is not None else None
    if passes is not None and passes < 0:
        raise EngineError("llamacpp:n_decode_total went down during the run: was the server restarted?")
    return SideRun(done, counts, passes)


def _interval(after: Reading, before: Reading) -> Reading:
    """Counters over the run: differenced (vLLM, llama.cpp); TensorRT-LLM's stats are already the interval's;
    SGLang's gauges are the last interval's averages."""
    if isinstance(after, VllmRates) or after.source == "trtllm":
        return after
    try:
        return difference(after, before)
    except (ValueError, ArithmeticError) as exc:
        raise EngineError(str(exc)) from None


def measured_for(spec: SideRun, base: SideRun | None, gamma: int, c: float, v: float = 1.0) -> Measured:
    """The live page's Measured for one repeat of an engine run, so that gap_parts splits it the same way."""
    counts = spec.counts
    if not isinstance(counts, SpecDecodeCounts) or counts.gamma == 0:
        raise EngineError("The engine reports no per-position counts, so there are no alpha_j to predict from.")
    alphas = counts.conditional_alphas()  # (gamma,) NaN where unreached
    per = np.asarray(counts.accepted_per_position, dtype=np.int64)
    reached = np.concatenate([[counts.num_drafts], per[:-1]]).astype(np.int64)
    a_fill = fill_unreached(alphas)
    requests = len(spec.completions)
    passes = spec.passes if spec.passes else counts.num_drafts + requests
    tpp = spec.tokens / passes if passes else math.nan
    base_tps = base.tokens_per_s if base is not None else math.nan
    spec_tps = spec.tokens_per_s
    pooled = counts.num_accepted_tokens / reached.sum() if reached.sum() else math.nan
    a_const = 0.0 if math.isnan(pooled) else float(pooled)
    return Measured(
        gamma=gamma,
        rounds=passes,
        tokens=spec.tokens,
        alphas=alphas,
        reached=reached,
        alpha_const=float(pooled),
        length_counts=np.zeros(gamma + 1, dtype=np.int64),
        pmf_const=algebra.accepted_length_pmf(a_const, gamma),
        pmf_positional=algebra.accepted_length_pmf_positional(a_fill),
        tokens_per_pass=tpp,
        c=c,
        v=v,
        spec_tokens_per_s=spec_tps,
        base_tokens_per_s=base_tps,
        predicted_speedup=algebra.speedup_positional(a_fill, c, v),
        predicted_speedup_const=float(algebra.speedup(a_const, gamma, c, v)),
        measured_speedup=spec_tps / base_tps if math.isfinite(base_tps) and base_tps > 0 else math.nan,
        expected_tokens=algebra.expected_tokens_positional(a_fill),
        t_target_s=1.0 / base_tps if math.isfinite(base_tps) and base_tps > 0 else math.nan,
    )


@dataclass(frozen=True)
class WorkloadResult:
    """Every repeat's two sides, the pooled counts, the summary over repeats and the greedy agreement."""

    engine: str
    work: Workload
    gamma: int
    c: float
    v: float
    spec_runs: tuple[SideRun, ...]
    base_runs: tuple[SideRun, ...]
    summary: RepeatSummary | None
    pooled: SpecDecodeCounts | VllmRates | None
    same_text: tuple[int, int] = (0, 0)  # (prompts whose greedy text matched across sides, prompts compared)
    config: dict = field(default_factory=dict)


def _pool(runs: tuple[SideRun, ...]) -> SpecDecodeCounts | VllmRates | None:
    """Sum of the repeats' differenced counts (SGLang: the last repeat's gauges)."""
    counts = [r.counts for r in runs if r.counts is not None]
    if not counts or not all(isinstance(x, SpecDecodeCounts) for x in counts):
        return counts[-1] if counts else None
    total = counts[0]
    for x in counts[1:]:
        per = (
            tuple(a + b for a, b in zip(total.accepted_per_position or (), x.accepted_per_position or ()))
            if total.accepted_per_position is not None
            else None
        )
        total = SpecDecodeCounts(
            total.num_drafts + x.num_drafts,
            total.num_draft_tokens + x.num_draft_tokens,
            total.num_accepted_tokens + x.num_accepted_tokens,
            per,
            source=x.source,
        )
    return total


def run_workload(
    spec: Endpoint,
    engine: str,
    work: Workload,
    gamma: int,
    c: float,
    base: Endpoint | None = None,
    v: float = 1.0,
    config: dict | None = None,
    deadline_s: float = WORKLOAD_DEADLINE_S,
) -> WorkloadResult:
    """Interleaved repeats of both sides (A B B A); base None measures the speculative side alone.

    The whole run finishes within deadline_s seconds or is one EngineError; at most MAX_RUNS run at once."""
    check_gamma(gamma)
    if not (isinstance(c, (int, float)) and math.isfinite(c) and 0.0 <= c <= 100.0):
        raise ValueError(f"c must be a number in [0, 100] (draft cost per token in target steps); got {c!r}")
    deadline = time.monotonic() + deadline_s
    spec_runs, base_runs = [], []
    with run_slot():
        for base_first in race_order(work.repeats):
            order = [False, True] if not base_first else [True, False]
            for is_base in order:
                if is_base and base is not None:
                    base_runs.append(run_side(base, engine, work, speculative=False, deadline=deadline))
                elif not is_base:
                    spec_runs.append(run_side(spec, engine, work, speculative=True, deadline=deadline))
    pooled = _pool(tuple(spec_runs))
    if isinstance(pooled, SpecDecodeCounts) and pooled.num_drafts == 0:
        raise EngineError(
            "The server drafted nothing during the run: is speculative decoding enabled on it (for a "
            "lookup draft: did the replies repeat anything)?"
        )
    summary = None
    if isinstance(pooled, SpecDecodeCounts) and pooled.gamma:
        summary = summarise_repeats(
            [measured_for(s, b, gamma, c, v) for s, b in zip(spec_runs, base_runs or [None] * len(spec_runs))]
        )
    same = (0, 0)
    if work.temperature == 0.0 and base_runs:
        pairs = [(a.text, b.text) for s, b_ in zip(spec_runs, base_runs) for a, b in zip(s.completions, b_.completions)]
        same = (sum(a == b for a, b in pairs), len(pairs))
    return WorkloadResult(
        engine, work, gamma, c, v, tuple(spec_runs), tuple(base_runs), summary, pooled, same, dict(config or {})
    )


def run_embedded(mode, work: Workload) -> WorkloadResult:
    """The workload on the embedded llama.cpp: mode against the same server with no speculation, same threads."""
    from engines.embedded import Mode, shared_server

    if mode.kind == "none":
        raise ValueError("Choose a speculative mode to compare with no speculation.")
    spec = shared_server(mode)
    base = shared_server(Mode("none", mode.gamma, threads=mode.threads))
    config = {"engine": f"llama.cpp (xllamacpp {spec.version})", **mode.as_dict(), "command": mode.flags()}
    return run_workload(
        Endpoint(spec.url, embedded=True),
        "llamacpp",
        work,
        mode.gamma,
        mode.c,
        base=Endpoint(base.url, embedded=True),
        config=config,
    )


def rows(r: WorkloadResult) -> list[tuple[str, str]]:
    """(quantity, value) rows of the result table: medians with [min, max] over the repeats."""
    out = [
        ("engine", r.config.get("engine", r.engine)),
        ("prompts x tokens", f"{r.work.n_prompts} x {r.work.max_tokens}"),
        ("temperature", f"{r.work.temperature:g}"),
        ("repeats", str(r.work.repeats)),
    ]
    p = r.pooled
    if isinstance(p, SpecDecodeCounts):
        out += [
            ("drafts / drafted / accepted", f"{p.num_drafts} / {p.num_draft_tokens} / {p.num_accepted_tokens}"),
            ("acceptance rate", fixed(p.acceptance_rate(), 3, missing="-")),
            ("mean acceptance length E[N]", fixed(p.mean_acceptance_length(), 3, missing="-")),
        ]
        if p.gamma:
            out.append(("alpha_j", ", ".join(fixed(a, 3, missing="-") for a in p.conditional_alphas())))
    elif isinstance(p, VllmRates):
        out += [
            ("acceptance rate (last interval)", fixed(p.acceptance_rate, 3, missing="-")),
            ("E[N] (last interval)", fixed(p.mean_acceptance_length, 3, missing="-")),
        ]
    s = r.summary
    if s is not None:

        def sp(x, d=2):
            return f"{fixed(x.median, d, missing='-')} [{fixed(x.lo, d, missing='-')}, {fixed(x.hi, d, missing='-')}]"

        out += [
            ("tok/s speculation off", sp(s.base_tokens_per_s, 1)),
            ("tok/s speculation on", sp(s.spec_tokens_per_s, 1)),
            ("tokens per target pass", sp(s.tokens_per_pass)),
            ("measured speedup", sp(s.measured)),
            (f"predicted (c = {r.c:g}, v = {r.v:g})", sp(s.predicted)),
            ("gap: measured / predicted", sp(s.ratio)),
            ("  = acceptance draw", sp(s.accept)),
            ("  x per-round cost", sp(s.spec_round)),
        ]
    if r.same_text[1]:
        out.append(("greedy text identical on/off", f"{r.same_text[0]} of {r.same_text[1]}"))
    return out


def table(r: WorkloadResult) -> str:
    """The rows as an aligned two-column text table."""
    w = max(len(k) for k, _ in rows(r))
    return "\n".join(f"{k:<{w}}  {v}" for k, v in rows(r))


def as_dict(r: WorkloadResult) -> dict:
    """JSON-ready result: config, counts, the table's rows and every repeat's speeds."""
    return {
        "config": r.config,
        "workload": dataclasses.asdict(r.work),
        "counts": r.pooled.as_dict() if isinstance(r.pooled, SpecDecodeCounts) else None,
        "rows": dict(rows(r)),
        "spec_tokens_per_s": [x.tokens_per_s for x in r.spec_runs],
        "base_tokens_per_s": [x.tokens_per_s for x in r.base_runs],
        "same_text": list(r.same_text),
    }
