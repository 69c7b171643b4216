"""The algebra page's vLLM parts: alpha_j against vLLM's per-position rates, and a paste box for a server's metrics
(vLLM, llama.cpp, SGLang or TensorRT-LLM: specdec_core.vllm_metrics.parse_any detects which and reads it).

Every number comes from specdec_core (algebra, vllm_metrics, measure); this module lays them out. User text is
never echoed into Markdown: parse errors are shown verbatim in st.code.
"""

from __future__ import annotations

import math

import numpy as np
import streamlit as st

from specdec_core import algebra, vllm_metrics
from specdec_core.formatting import fixed
from specdec_core.measure import fill_unreached

EXAMPLE_LINE = (   # vLLM's line for alpha_j = 0.9, 0.5, 0.2 over 100 drafts of 3 tokens
    "SpecDecoding metrics: Mean acceptance length: 2.44, Accepted throughput: 14.40 tokens/s, Drafted throughput: "
    "30.00 tokens/s, Accepted: 144 tokens, Drafted: 300 tokens, Per-position acceptance rate: 0.900, 0.450, 0.090, "
    "Avg Draft acceptance rate: 48.0%"
)
DEFINITIONS = (
    r"\text{acceptance rate} = \frac{\text{accepted tokens}}{\text{drafted tokens}}\qquad"
    r"\text{mean acceptance length} = 1 + \frac{\text{accepted tokens}}{\text{drafts}}\qquad "
    r"r_j = \frac{\text{accepted at position } j}{\text{drafts}} = \prod_{i\le j}\alpha_i"
)


PASTE_LIMIT = 200_000   # characters: a vLLM scrape is a few kB; 200 kB parses in well under a second here
LACKS = {   # what each engine's numbers do not give, for the formats without per-position counts
    "llamacpp_response": (
        "A llama.cpp response gives only timings.draft_n and timings.draft_n_accepted: the share of draft tokens "
        "accepted. It does not count the drafts, so it gives no mean acceptance length E[N], no per-position rates "
        "and no alpha_j, hence no speedup or best gamma here. The server's /metrics (llamacpp:spec_decode_*, the "
        "four counters vLLM has) gives all of them; paste that for the full table."
    ),
    "trtllm": (
        "TensorRT-LLM's iteration stats give three totals (drafts, drafted and accepted tokens), not per-position "
        "counts: E[N] = 1 + accepted / drafts and the acceptance rate are exact, but there are no alpha_j, so no "
        "speedup per gamma or best gamma here."
    ),
    "sglang": (
        "SGLang exports two gauges, each an average over its last logging interval, not counters: no counts, no "
        "per-position rates and no alpha_j, so no speedup per gamma or best gamma here; averages of an unknown "
        "number of drafts cannot be pooled over intervals either."
    ),
}


def positional_comparison(aj: np.ndarray, c: float, v: float) -> None:
    """The positional section: conditional alpha_j beside vLLM's unconditional r_j, and the constant alpha that
    gives the same E[N] (not the mean of the alpha_j)."""
    if aj.size == 0:
        return
    gap, rates = algebra.positional_gap(aj, c, v), vllm_metrics.rates_from_alphas(aj)
    st.dataframe(
        {
            "position j": list(range(1, aj.size + 1)),
            "alpha_j (conditional: accepted, given j was reached)": [fixed(a, 4, missing="not reached") for a in aj],
            "vLLM's per-position rate r_j = prod of alpha_i up to j": [
                fixed(r, 4, missing="not reached") for r in rates.per_position_rates
            ],
        },
        hide_index=True,
    )
    st.caption(
        f"vLLM would report these alpha_j (every draft {aj.size} tokens long) as acceptance rate "
        f"{rates.acceptance_rate:.3f} (= sum of r_j / gamma), mean acceptance length "
        f"{rates.mean_acceptance_length:.3f} (= E[N], the bonus token counted) and per-position rates r_j as in "
        "the last column, which are unconditional: divide each by the one before to get alpha_j back."
    )
    st.info(
        f"The constant alpha that gives the same E[N] = {gap['en_positional']:.3f} at gamma = {aj.size} is "
        f"alpha = {gap['alpha_equivalent']:.4f} (solved from (1 - alpha^(gamma+1)) / (1 - alpha) = E[N]). "
        f"The mean alpha_bar = {gap['alpha_bar']:.4f} is not it: at the mean the formula predicts E[N] = "
        f"{gap['en_constant']:.3f} and {gap['speedup_constant']:.2f}x against the per-position "
        f"{gap['speedup_positional']:.2f}x, off by {gap['rel_error']:+.1%}. E[N] = 1 + sum of the products "
        "alpha_1 ... alpha_i, so alpha_1 multiplies every term and alpha_gamma only the last; an average weighs "
        "them equally. The equivalent constant also changes with gamma, so it is no workload constant either."
    )


@st.cache_data(max_entries=8)
def _models(text: str) -> list[str]:
    """The model names in a scrape, parsed once per text; [] where there are none (parse() then says why)."""
    try:
        return vllm_metrics.model_names(text)
    except ValueError:
        return []


# (format key of vllm_metrics.FORMATS, its numbers)
Read = tuple[str, vllm_metrics.SpecDecodeCounts | vllm_metrics.VllmRates]


@st.cache_data(max_entries=8)
def _parsed(text: str, model: str | None) -> tuple[Read | None, str | None]:
    """((format, numbers), None) or (None, the reason): the pasted text detected and parsed once per (text, model)."""
    try:
        return vllm_metrics.parse_any(text, model_name=model), None
    except ValueError as exc:
        return None, str(exc)


def read_words(kind: str, got: vllm_metrics.SpecDecodeCounts | vllm_metrics.VllmRates) -> str:
    """'Read as <format>: ...' with the numbers that format gives (counts as counted, rates as exported)."""
    head = f"Read as {vllm_metrics.FORMATS[kind]}"
    if isinstance(got, vllm_metrics.VllmRates):
        rate = "not exported (older SGLang)" if math.isnan(got.acceptance_rate) else f"{got.acceptance_rate:.3f}"
        return f"{head}: mean acceptance length {got.mean_acceptance_length:.3f}, acceptance rate {rate}."
    drafts = "" if got.num_drafts is None else f"{got.num_drafts:,} draft{'' if got.num_drafts == 1 else 's'}, "
    per = f" over gamma = {got.gamma} positions" if got.gamma else ""
    return f"{head}: {drafts}{got.num_draft_tokens:,} drafted, {got.num_accepted_tokens:,} accepted{per}."


def _read(text: str) -> Read | None:
    """Detect and parse the pasted text (asking for the model when a scrape holds several); None after showing why
    not."""
    if len(text) > PASTE_LIMIT:
        st.warning(f"**That paste is too long:** more than {PASTE_LIMIT:,} characters, the most the box takes "
                   "(one log line, or one server's /metrics scrape). Nothing was parsed.", icon=":material/error:")
        return None
    models = _models(text)
    model = st.selectbox("Model in the scrape", models, key="vllm_model") if len(models) > 1 else None
    got, error = _parsed(text, model)
    if got is None:
        st.warning("**That text could not be used.** What is wrong with it:", icon=":material/error:")
        st.code(error, language=None, wrap_lines=True)
    return got


def _table(counts: vllm_metrics.SpecDecodeCounts) -> None:
    """Per position: vLLM's rate as given, the conditional alpha_j, and its rounding range or its count."""
    r, a = counts.per_position_rates(), counts.conditional_alphas()
    table = {
        "position j": list(range(1, counts.gamma + 1)),
        "vLLM's r_j (unconditional)": [fixed(x, 4, missing="not reached") for x in r],
        "alpha_j = r_j / r_(j-1) (conditional)": [fixed(x, 4, missing="not reached") for x in a],
    }
    if counts.accepted_per_position is not None:
        table["drafts accepted through j"] = list(counts.accepted_per_position)
    else:
        lo, hi = counts.conditional_alpha_bounds()
        table["alpha_j within the printed rounding"] = [
            "not reached" if math.isnan(x) else f"{x:.4f} to {y:.4f}" for x, y in zip(lo, hi)
        ]
    st.dataframe(table, hide_index=True)


@st.fragment
def paste_section(c: float, v: float, v_of_gamma: np.ndarray | None = None) -> None:
    """Paste an engine's metrics (vLLM, llama.cpp, SGLang, TensorRT-LLM): the format read, its numbers, and where
    it has per-position counts the conditional alpha_j, E[N], speedup and best gamma.

    v_of_gamma (v for gamma = 0, 1, ..., from a decoder shape) prices each draft length; else v is fixed. A
    fragment: a paste reruns this section alone, and the text is parsed once per content (cached).
    """
    st.subheader("An engine's numbers in: paste a server's spec-decode metrics")
    st.markdown(
        "vLLM reports three quantities. The first two are averages over all draft tokens or all drafts; the "
        "third, the per-position rate r_j, is **unconditional** (the share of all drafts whose first j tokens "
        "were accepted), while this page's alpha_j are conditional (given the first j - 1 were accepted)."
    )
    st.latex(DEFINITIONS)
    text = st.text_area(
        "vLLM's 'SpecDecoding metrics:' log line or /metrics text; llama.cpp's /metrics or a /completion response; "
        "SGLang's /metrics; TensorRT-LLM's /metrics JSON",
        key="vllm_paste",
        height=140,
        max_chars=PASTE_LIMIT + 1,          # one past the limit: a longer paste is cut there and refused below
        placeholder=EXAMPLE_LINE,
        help="One log line (lines from several intervals cannot be pooled: the line does not print its number "
        "of drafts), or a Prometheus scrape: engines of one model are summed. llama.cpp responses may be pasted "
        "one JSON object a line (their counts are summed). The engine is recognised from the text. Not kept in "
        "the URL.",
    )
    if not text.strip():
        st.caption("Paste a line or a scrape to see its alpha_j. The placeholder is vLLM's line for alpha_j = "
                   "0.9, 0.5, 0.2 over 100 drafts.")
        return
    got = _read(text)
    if got is None:
        return
    kind, numbers = got
    st.success(read_words(kind, numbers), icon=":material/check:")
    if isinstance(numbers, vllm_metrics.VllmRates):
        _rates_only(numbers)
    elif numbers.gamma == 0:
        _totals_only(kind, numbers)
    else:
        _derived(numbers, c, v, v_of_gamma)


def _rates_only(rates: vllm_metrics.VllmRates) -> None:
    """SGLang's two interval averages, and what they cannot give."""
    cols = st.columns(2)
    cols[0].metric("Mean acceptance length E[N] (interval average)", f"{rates.mean_acceptance_length:.3f}",
                   help="sglang:spec_accept_length: the bonus token counted")
    cols[1].metric("Acceptance rate (interval average)", "not exported" if math.isnan(rates.acceptance_rate)
                   else f"{rates.acceptance_rate:.3f}", help="sglang:spec_accept_rate: accepted / drafted tokens")
    st.caption(LACKS["sglang"])


def _totals_only(kind: str, counts: vllm_metrics.SpecDecodeCounts) -> None:
    """Totals without per-position counts (TensorRT-LLM; llama.cpp's response, without even a count of drafts)."""
    length = counts.mean_acceptance_length()
    cols = st.columns(3)
    cols[0].metric("Acceptance rate", f"{counts.acceptance_rate():.3f}",
                   help="accepted / drafted tokens: the mean share of a drafted token accepted")
    cols[1].metric("Mean acceptance length E[N]", "not given" if math.isnan(length) else f"{length:.3f}",
                   help="1 + accepted / drafts: needs the number of drafts")
    cols[2].metric("Drafts", "not given" if counts.num_drafts is None else f"{counts.num_drafts:,}")
    st.caption(LACKS[kind])


def _derived(counts: vllm_metrics.SpecDecodeCounts, c: float, v: float, v_of_gamma: np.ndarray | None) -> None:
    """The numbers a parsed input gives, and with the page's c and v the predicted speedup and best gamma."""
    g, a = counts.gamma, fill_unreached(counts.conditional_alphas())      # unreached adds nothing to E[N]
    rate, length = counts.acceptance_rate(), counts.mean_acceptance_length()
    en, eq = algebra.expected_tokens_positional(a), algebra.equivalent_alpha(a)
    vs = v if v_of_gamma is None or v_of_gamma.size <= g else v_of_gamma[: g + 1]     # v, or v(0..g)
    s = float(algebra.speedup_prefixes(a, c, vs)[g])
    best, s_best = algebra.best_gamma_positional(a, c, vs)
    _table(counts)
    cols = st.columns(4)
    cols[0].metric("Acceptance rate (vLLM)", f"{rate:.3f}", help="accepted / drafted tokens")
    cols[1].metric("Mean acceptance length (vLLM)", f"{length:.2f}" if counts.source == "log" else f"{length:.3f}",
                   help="1 + accepted / drafts: E[N], the bonus token counted")
    cols[2].metric("E[N] from the alpha_j", f"{en:.3f}", help="1 + sum_i prod_{j<=i} alpha_j = 1 + sum_j r_j")
    cols[3].metric("Constant alpha, same E[N]", f"{eq:.4f}", help=f"at gamma = {g}; not the mean of the alpha_j")
    cols = st.columns(3)
    cols[0].metric(f"Predicted speedup at gamma = {g}", f"{s:.2f}x", help="E[N] / (gamma c + v)")
    cols[1].metric(f"Best gamma (0..{g})", str(best), f"{s_best:.2f}x at best", delta_color="off")
    cols[2].metric("Drafts", "not printed" if counts.num_drafts is None else f"{counts.num_drafts:,}")
    if np.ndim(vs) == 0:
        costs = f"c = {c:g} and v = {v:g} (held fixed over gamma) are"
    else:
        costs = f"c = {c:g} and v(gamma), {vs[g]:.3f} at gamma = {g}, come from"
    st.caption(
        f"{costs} this page's controls. The best gamma is searched only up to the server's "
        f"gamma = {g}: its metrics say nothing about longer drafts. "
        + ("A slowdown at these costs. " if s < 1.0 else "")
        + (
            "From a log line: Accepted and Drafted are exact counts, so the acceptance rate is exact; the mean "
            "length is printed to 2 decimals and r_j to 3, so each alpha_j carries the range in the table."
            if counts.source == "log"
            else "From counters (since the server started; engines of one model summed): every number is exact."
        )
    )
    if counts.drafts_shorter_than_gamma():
        st.warning(
            f"Some drafts were shorter than gamma = {g} (a lookup drafter, or requests ending). vLLM counts every "
            "draft as reaching every position, so these alpha_j are lower bounds past the first position; E[N] "
            "is still the measured mean length."
        )
    wrong_r = algebra.expected_tokens_positional(counts.per_position_rates())
    wrong_rate = float(algebra.expected_tokens(rate, g))
    st.markdown(
        f"Two tempting misreadings: vLLM's r_j fed to 1 + sum prod alpha_j as if conditional give E[N] = "
        f"{wrong_r:.3f}, and its acceptance rate {rate:.3f} used as a constant alpha gives {wrong_rate:.3f}; "
        f"the measured E[N] is {en:.3f}."
    )
