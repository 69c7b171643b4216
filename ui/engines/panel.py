"""The Engines page's parts: controls bound to the URL, the cached run of the embedded llama.cpp, and the result."""

from __future__ import annotations

import json
import math
import threading
from urllib.parse import urlencode

import pandas as pd
import streamlit as st

from engines.client import ENGINE_NAMES, Endpoint, EngineError, allowed_origins, recognise
from engines.embedded import KIND_LABELS, MAX_GAMMA, RULES, EngineUnavailable, Mode
from engines.workload import Workload, WorkloadResult, rows, run_embedded, run_workload
from specdec_core.pays import empty_fraction, pay_reading
from specdec_core.vllm_counts import SpecDecodeCounts
from ui.controls import bound_radio, bound_select, slider_input
from ui.pays_text import verdict_line
from ui.safe_text import md

KIND_BY_LABEL = {v: k for k, v in KIND_LABELS.items() if k != "none"}
RULE_LABELS = {"greedy": "sample-and-compare (greedy draft)", "probabilistic": "min(1, p/q) (probabilistic draft)"}
MAX_PAGE_PROMPTS, MAX_PAGE_TOKENS, MAX_PAGE_REPEATS = 4, 64, 3   # a page run stays under a minute here
RESULT = "engines.result"
_RUN_LOCK = threading.Lock()     # one workload at a time on this server: timings of two at once mean nothing


def controls() -> tuple[Mode, Workload]:
    """Mode (kind, gamma, rule) and the workload size, each bound to the page's URL."""
    c1, c2 = st.columns(2, gap="large")
    with c1:
        label = bound_select("Speculative mode", list(KIND_BY_LABEL), key="kind")
        gamma = slider_input("draft length gamma", "gamma", 1, MAX_GAMMA, 4, 1)
        rule = bound_radio("Draft rule", [RULE_LABELS[r] for r in RULES], key="rule",
                           help="llama.cpp's --spec-draft-sampling: greedy or probabilistic (draft model only).")
    with c2:
        temperature = slider_input("temperature", "T", 0.0, 1.5, 0.0, 0.1, "%.1f")
        n_prompts = slider_input("chat prompts", "prompts", 1, MAX_PAGE_PROMPTS, 2, 1)
        tokens = slider_input("new tokens per prompt", "tokens", 8, MAX_PAGE_TOKENS, 32, 8)
        repeats = slider_input("interleaved repeats", "repeats", 1, MAX_PAGE_REPEATS, 2, 1)
    rule_key = next(k for k, v in RULE_LABELS.items() if v == rule)
    mode = Mode(KIND_BY_LABEL[label], int(gamma), rule_key)
    return mode, Workload(int(n_prompts), int(tokens), float(temperature), int(repeats))


def run_button(mode: Mode, work: Workload) -> None:
    """Run the workload on click; the result (or its one-line error) is kept in the session."""
    if mode.kind == "ngram" and mode.rule == "probabilistic":
        st.caption("The draft rule applies to a draft model; an n-gram lookup has no q, so it is compared as drafted.")
    if not st.button("Run the workload", type="primary", key="engines.run"):
        return
    if not _RUN_LOCK.acquire(blocking=False):
        st.warning("Another workload is running on this server; try again in a moment.")
        return
    try:
        with st.spinner("Starting llama.cpp and running both sides..."):
            st.session_state[RESULT] = run_embedded(mode, work)
    except (EngineError, EngineUnavailable, ValueError) as exc:
        st.session_state[RESULT] = str(exc)
    finally:
        _RUN_LOCK.release()


def _links(r: WorkloadResult) -> None:
    """Carry the measured alpha_j, gamma, c and v to the Algebra page, and alpha and gamma to the Roofline page."""
    p = r.pooled
    if not isinstance(p, SpecDecodeCounts) or not p.gamma:
        return
    a = [0.0 if math.isnan(x) else float(x) for x in p.conditional_alphas()]
    rate = p.acceptance_rate()
    q = {"alpha": f"{rate:.4f}", "gamma": r.gamma, "c": f"{r.c:g}", "v": f"{r.v:g}", "mode": "table",
         "aj": ", ".join(f"{x:.4f}" for x in a)}
    st.page_link("views/algebra.py", label="These alpha_j on the Algebra page (best gamma, E[N], speedup)",
                 query_params=q, icon=":material/functions:")
    st.page_link("views/roofline.py", label="This acceptance on the Roofline page (where batch makes it stop paying)",
                 query_params={"alpha": f"{min(max(rate, 0.0), 1.0):.2f}", "gamma": min(r.gamma, 16)},
                 icon=":material/speed:")
    st.caption("Links: " + md("/algebra?" + urlencode(q)))


def target_passes(r: WorkloadResult) -> int:
    """Target passes of the speculative side over every repeat: the engine's counter where it has one, else one
    pass per draft plus one per request (the request's first token)."""
    p = r.pooled
    if all(s.passes for s in r.spec_runs):
        return sum(s.passes for s in r.spec_runs)
    return p.num_drafts + sum(len(s.completions) for s in r.spec_runs)


def prediction_and_verdict(r: WorkloadResult) -> list[str]:
    """The prediction with the passes that drafted nothing counted (each a plain step, one token), and one line on
    whether this mode pays here and why; empty when the engine gives no alpha_j or no summary."""
    p, s = r.pooled, r.summary
    if not isinstance(p, SpecDecodeCounts) or not p.gamma or s is None:
        return []
    passes = target_passes(r)
    f0 = empty_fraction(passes, p.num_drafts)
    alphas = p.conditional_alphas()
    reading = pay_reading(alphas, r.c, r.v, f0)
    measured = s.measured.median
    head = (f"**Predicted {reading.speedup:.2f}x** with every target pass counted: {passes - p.num_drafts} of "
            f"{passes} passes ({f0:.0%}) drafted nothing, and each of those is a plain step that yields one token "
            f"(specdec_core.pays). The table's predicted {s.predicted.median:.2f}x counts only the rounds that "
            f"drafted. Measured {measured:.2f}x.")
    verdict = verdict_line(KIND_LABELS.get(r.config.get("kind", ""), "This mode"), alphas,
                           p.acceptance_rate(), r.c, r.v, measured, f0)
    return [head, f"**Verdict.** {verdict}"] if verdict else [head]


def result_section(mode: Mode) -> None:
    """The last result of this session: the table, the configuration beside it, and the equivalent flags."""
    r = st.session_state.get(RESULT)
    if r is None:
        st.info("Choose a mode and run the workload: both sides send the same chat prompts, interleaved.")
        return
    if isinstance(r, str):
        st.error(md(r, 300))
        return
    left, right = st.columns([3, 2], gap="large")
    with left:
        st.dataframe(pd.DataFrame(rows(r), columns=["quantity", "value"]), hide_index=True, width="stretch")
        for line in prediction_and_verdict(r):
            st.markdown(line)   # the app's own words and numbers, no engine text
        _links(r)
    with right:
        st.markdown("**The engine's configuration**")
        st.code(r.config.get("command", ""), language="bash", wrap_lines=True)
        m = Mode(r.config.get("kind", mode.kind), r.gamma, r.config.get("rule", "greedy"))
        if m.vllm_config():
            st.markdown("**vLLM**, same draft length")
            st.code("vllm serve HuggingFaceTB/SmolLM2-135M-Instruct --speculative-config '"
                    + json.dumps(m.vllm_config()) + "'", language="bash", wrap_lines=True)
            st.markdown("**SGLang**, same draft length")
            st.code("python -m sglang.launch_server --model-path HuggingFaceTB/SmolLM2-135M-Instruct "
                    + m.sglang_flags(), language="bash", wrap_lines=True)


def own_server_section() -> None:
    """A URL to a running engine: only when this server's allow-list names its origin, and never from the URL bar."""
    allowed = sorted(allowed_origins())
    if not allowed:
        from ui.engines.text import OWN_SERVER_OFF

        st.info(OWN_SERVER_OFF)
        return
    url = st.selectbox("Allowed server", allowed, key="engines.url")   # chosen from the operator's list only
    gamma = st.number_input("its draft length gamma", 1, 16, 3, key="engines.url_gamma")
    if st.button("Run the workload on that server", key="engines.url_run"):
        try:
            e = Endpoint.from_url(url)
            engine = recognise(e)
            r = run_workload(e, engine, Workload(2, 32, 0.0, 1), int(gamma), 0.0,
                             config={"engine": ENGINE_NAMES[engine], "url": e.base})
            st.dataframe(pd.DataFrame(rows(r), columns=["quantity", "value"]), hide_index=True)
        except (EngineError, ValueError) as exc:
            st.error(md(exc, 300))
