"""The live page's constrained-decoding section: a grammar masks both laws, the parser rolls back.

A request is the page's pair, gamma, sampling and seed plus a constraint (a preset, or a regex / JSON schema /
Lark grammar typed in). It runs speculatively under the constraint, once more without it on the same prompt
(alpha with and without), and, when a bug demonstration is on, once more with the rollback done (what the
output should have been). The runs and their summary carry no Streamlit (``run_request``); ``render`` draws.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

import pandas as pd
import streamlit as st

from gpu_demo import constraints
from gpu_demo.decode import Forget, RoundEvent, speculative
from gpu_demo.live.queue import decode_threads
from gpu_demo.live.runner import Settings, SharedPair, prompt_ids, stop_tokens
from gpu_demo.measure.stats import mean_accepted_length, overall_alpha
from specdec_core.algebra import expected_tokens
from specdec_core.measure import acceptance_probability
from ui.controls import bound_radio, bound_select, bound_text, bound_toggle, get_value, number_box
from ui.live import tokens as live_tokens
from ui.safe_text import md

OWN = "own"
KIND_LABELS = {"regex": "regex", "json": "JSON schema", "lark": "Lark grammar"}
MAX_NEW = 120
STATE_TEXT = {"complete": "complete: the text satisfies the constraint and has ended",
              "unfinished": "valid so far, cut at the token limit before the constraint was complete",
              "violated": "VIOLATES the constraint"}


# ------------------------------------------------------------------------------------- runs (no Streamlit)


@dataclass
class Outcome:
    """One run: its events, the parser's error if it stopped with one, and the output's check."""

    events: list[RoundEvent] = field(default_factory=list)
    error: str = ""
    state: str = ""
    detail: str = ""
    value: object = None  # a JSON-schema run's parsed text, set only when its check is 'complete'

    @property
    def tokens(self) -> list[int]:
        return [t for e in self.events for t in e.emitted]

    def alpha(self) -> float:
        """Measured: accepted drafts / drafted positions reached."""
        return overall_alpha(self.events)

    def alpha_expected(self) -> float:
        """Mean min(1, p(x)/q(x)) over reached drafted tokens: an unbiased estimate of 1 - TV of the laws used."""
        p = [v for e in self.events for v in e.p_x[: min(e.k, e.n_accepted + 1)]]
        q = [v for e in self.events for v in e.q_x[: min(e.k, e.n_accepted + 1)]]
        return float(acceptance_probability(p, q).mean()) if p else math.nan


@dataclass
class Request:
    """What was asked and what came back: the shown run, the correct run (bug demos) and the free run."""

    pair: str
    label: str
    user_prompt: str
    kind: str
    source: str
    gamma: int
    forget: Forget
    prompt_len: int
    end_token: int
    shown: Outcome
    correct: Outcome | None
    free: Outcome


def decode(sp: SharedPair, ids: list[int], s: Settings, constraint: constraints.Constraint | None, forget: Forget,
           n_new: int) -> Outcome:
    """One speculative run; a parser refusal (the bug demos) ends it with the error and keeps its rounds."""
    pair = sp.pair
    out = Outcome()
    try:
        for ev in speculative(pair.target, pair.drafter, ids, n_new, s.gamma, s.target_sampling(),
                              s.draft_sampling(), seed=s.seed, stop_tokens=stop_tokens(sp),
                              constraint=constraint, forget=forget):
            out.events.append(ev)
    except constraints.ConstraintError as exc:
        out.error = str(exc)
    if constraint is not None and constraint.kind == "json":
        out.state, out.detail, out.value = constraint.check_json(out.tokens, pair.tokenizer.decode)
    elif constraint is not None:
        out.state, out.detail = constraint.check(out.tokens)
    if out.error:
        out.state, out.value = "violated", None
    return out


def run_request(sp: SharedPair, s: Settings, label: str, user_prompt: str, kind: str, source: str, forget: Forget,
                n_new: int, on_wait) -> Request:
    """Build the constraint (ValueError with a plain message) and run the request's runs under the model's turn.

    A raw-text pair (the character pair) continues the prompt, so the prompt is the start of the constrained
    text; a chat model's reply is constrained from its first token.
    """
    if not user_prompt:
        raise ValueError("the prompt is empty")
    ids = prompt_ids(sp, user_prompt)
    chat = bool(sp.pair.info.get("chat"))
    constraint = constraints.build(
        kind, source, sp.pair.tokenizer, sp.pair.target.vocab_size, prefix=() if chat else ids
    )
    with sp.queue.turn(on_wait), decode_threads(sp.device):
        shown = decode(sp, ids, s, constraint, forget, n_new)
        correct = decode(sp, ids, s, constraint, Forget(), n_new) if forget != Forget() else None
        free = decode(sp, ids, s, None, Forget(), n_new)
    return Request(
        sp.name, label, user_prompt, kind, source, s.gamma, forget, len(ids), constraint.end_token, shown, correct, free
    )


def rounds_table(out: Outcome, prompt_len: int) -> pd.DataFrame:
    """Per round: drafted, accepted, parser position before / after drafting / after the rollback, the allowed-set
    sizes, and the KV-cache lengths beside the committed length (the target's cache should hold all but y)."""
    committed, rows = prompt_len, []
    for e in out.events:
        committed += len(e.emitted)
        rows.append(
            {
                "round": e.round + 1,
                "drafted k": e.k,
                "accepted n": e.n_accepted,
                "emitted": ", ".join(e.kinds),
                "parser before": e.parser_before,
                "parser after drafting": e.parser_drafted,
                "parser after rollback + y": e.parser_after,
                "allowed tokens per position": " ".join(map(str, e.mask_sizes)),
                "mask ms": 1e3 * e.mask_s,
                "committed": committed,
                "target KV": e.kv_target,
                "draft KV": e.kv_draft if e.kv_draft >= 0 else None,
            }
        )
    return pd.DataFrame(rows)


def step_table(ev: RoundEvent, piece) -> pd.DataFrame:
    """Per drafted token of a round: the allowed-set size, q(x), p(x) masked, min(1, p/q), the verdict."""
    return pd.DataFrame(
        {
            "position": range(1, ev.k + 1),
            "draft token": [repr(piece(t)) for t in ev.drafted],
            "allowed tokens": ev.mask_sizes[: ev.k],
            "q(x) masked": ev.q_x,
            "p(x) masked": ev.p_x,
            "min(1, p/q)": acceptance_probability(ev.p_x, ev.q_x),
            "verdict": ev.verdicts(),
        }
    )


# ----------------------------------------------------------------------------------------------- drawing


def _controls(sp: SharedPair) -> tuple[str, str, str, str, Forget, int]:
    """Preset or own constraint, bug toggles and length: (label, prompt, kind, source, forget, n_new)."""
    chat = bool(sp.pair.info.get("chat"))
    presets = constraints.CHAT_PRESETS if chat else constraints.CHAR_PRESETS
    options = [*presets, OWN]
    key = bound_select(
        "constraint",
        options,
        "cpreset",
        default=options[0] if chat else "short",
        format_func=lambda k: "your own regex, JSON schema or grammar" if k == OWN else presets[k].label,
    )
    if key == OWN:
        kind = bound_radio("kind", list(KIND_LABELS), "ckind", format_func=KIND_LABELS.get)
        source = bound_text(f"your {KIND_LABELS[kind]}", "csource", "", area=True, height=120)
        prompt = bound_text("prompt for this request", "cprompt", next(iter(presets.values())).prompt)
        label = f"your {KIND_LABELS[kind]}"
    else:
        p = presets[key]
        kind, source, prompt, label = p.kind, p.source, p.prompt, p.label
        st.caption(f"Prompt: {md(prompt)}")
        st.code(source, language="json" if kind == "json" else None, wrap_lines=True)
    c1, c2, c3 = st.columns([1.4, 1.4, 1])
    with c1:
        parser = bound_toggle("BUG DEMO: forget to roll back the parser", "cforget_parser")
    with c2:
        kv = bound_toggle("BUG DEMO: forget to roll back the KV cache", "cforget_kv")
    with c3:
        n_new = number_box("tokens", "cmaxnew", 1, MAX_NEW, 40 if chat else 80, 1)
    return label, prompt, kind, source, Forget(parser=parser, kv_cache=kv), int(n_new)


def _outcome_text(req: Request, out: Outcome, piece) -> None:
    """The coloured tokens and the check of one run."""
    st.html(live_tokens.stream_html(req.user_prompt + ("\n" if req.pair != "builtin" else ""), out.events, piece))
    if out.error:
        st.error(f"The parser stopped the run: {md(out.error, 400)}")
    (st.success if out.state == "complete" else st.info if out.state == "unfinished" else st.error)(
        f"Constraint check: {STATE_TEXT.get(out.state, out.state)}"
        + (f" ({md(out.detail, 300)})" if out.state == "violated" else "")
    )


def _json_view(out: Outcome) -> None:
    """The parsed JSON of a complete run (the constraint check's own verdict, Constraint.check_json); else nothing."""
    if out.state == "complete":
        st.success("Valid JSON (json.loads of the constrained text):")
        st.json(json.dumps(out.value))  # any JSON value (a bare string or number too), as text


def _alpha_row(req: Request) -> None:
    """alpha with and without the constraint, measured and expected, and E[N] beside the algebra's."""
    good = req.correct or req.shown
    cols = st.columns(4)
    for col, (name, out) in zip(cols[:2], (("with the constraint", good), ("without it", req.free))):
        a, ae = out.alpha(), out.alpha_expected()
        col.metric(
            f"alpha {name}", "—" if math.isnan(a) else f"{a:.3f}", help="accepted drafts / drafted positions reached"
        )
        col.caption("expected 1 - TV of the laws used: " + ("—" if math.isnan(ae) else f"{ae:.3f}"))
    a = good.alpha()
    cols[2].metric("tokens per pass (constrained)", f"{mean_accepted_length(good.events):.2f}")
    cols[2].caption(
        "algebra E[N] = (1 - alpha^(gamma+1)) / (1 - alpha): "
        + ("—" if math.isnan(a) else f"{float(expected_tokens(a, req.gamma)):.2f}")
    )
    masks = [e.mask_s for e in good.events]
    rounds = [e.draft_s + e.verify_s for e in good.events]
    cols[3].metric("mask ms per round", f"{1e3 * sum(masks) / max(1, len(masks)):.2f}")
    cols[3].caption(f"{100 * sum(masks) / max(1e-12, sum(rounds)):.1f}% of the rounds' time (llguidance on the CPU)")


def show(req: Request, tokenizer, step_mode: bool) -> None:
    """A finished request: the output, its check, the bug's effect, alpha with and without, the rounds."""
    piece = tokenizer.piece
    bug = req.forget != Forget()
    if bug:
        what = " and ".join(
            n for n, on in (("the parser", req.forget.parser), ("the KV cache", req.forget.kv_cache)) if on
        )
        st.warning(f"Bug demonstration: this run forgot to roll back {what} after each verdict.")
    _outcome_text(req, req.shown, piece)
    if req.kind == "json":
        _json_view(req.shown)
    if req.correct is not None:
        same = req.correct.tokens == req.shown.tokens
        st.markdown("**With the rollback done** (the same request, seed and settings):")
        _outcome_text(req, req.correct, piece)
        st.caption(
            (
                "The outputs are identical: this run happened to hit no rejection that mattered."
                if same
                else "The outputs differ: the bug changed what was generated."
            )
            + (
                " With the KV cache not rolled back, the target attends to rejected drafts' keys and "
                "values, and its cache runs ahead of the committed text (table below)."
                if req.forget.kv_cache
                else ""
            )
        )
    _alpha_row(req)
    st.caption(
        "Both laws are renormalised over the same allowed set, so alpha is 1 - TV of the masked laws: a "
        "constraint that forces tokens (quotes, braces) raises it where the draft can follow, and lowers "
        "it where the draft's shortlist has no allowed token (then the draft stops and the target supplies "
        "the token)."
    )
    out = req.shown
    if out.events:
        st.dataframe(rounds_table(out, req.prompt_len), hide_index=True, key="constraint_rounds")
        if step_mode:
            r = number_box("round of the constrained run", "cround", 1, len(out.events), 1, 1)
            ev = out.events[min(int(r), len(out.events)) - 1]
            st.markdown(
                f"Round {ev.round + 1}: parser at {ev.parser_before} before, {ev.parser_drafted} after "
                f"drafting {ev.k}, {ev.parser_after} after rolling back to the {ev.n_accepted} accepted "
                "and taking y."
            )
            st.dataframe(step_table(ev, piece), hide_index=True, key="constraint_step")


def render(settings: Settings, sp: SharedPair | None, on_wait) -> None:
    """The section: controls, Run, and the last request's results (kept in the session)."""
    st.subheader("Constrained decoding: a grammar masks both laws, the parser rolls back")
    st.markdown(
        "Structured output (JSON schemas, regexes, grammars) is how most production requests are made. The "
        "constraint engine is **llguidance** over the model's own tokenizer. The draft samples from its own "
        "*masked*, renormalised law q; at verification each position's target law p is masked with the mask of "
        "its own prefix; after the verdict the parser **rolls back** to the accepted prefix and takes the "
        "correction or bonus, exactly as the target's KV cache rolls back. The output's law is then the "
        "constrained target law, and at temperature 0 it equals constrained greedy decoding."
    )
    if sp is None or sp.pair is None:
        st.caption("Load a pair above to run a constrained request.")
        return
    if sp.name not in ("builtin", "smollm2-lookup", "smollm2-draft"):
        st.caption(f"Constraints run on the built-in and SmolLM2 pairs; **{md(sp.name)}** is not one of them.")
        return
    if sp.name == "builtin":
        st.caption(
            "The character pair's alphabet has no end-of-text symbol: under a constraint the newline ends "
            "the text (so a constrained text is one line), and the prompt is the start of the constrained "
            "text."
        )
    label, prompt, kind, source, forget, n_new = _controls(sp)
    if st.button("Run the constrained request", key="constraint_btn", type="primary"):
        try:
            st.session_state["live_constraint"] = run_request(
                sp, settings, label, prompt, kind, source, forget, n_new, on_wait
            )
        except ValueError as exc:
            st.session_state.pop("live_constraint", None)
            st.error(f"This constraint cannot run: {md(exc, 600)}")
    req: Request | None = st.session_state.get("live_constraint")
    if req is not None and req.pair == sp.name:
        show(req, sp.pair.tokenizer, bool(get_value("step", False)))
