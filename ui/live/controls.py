"""Controls of the live page, every one bound to the URL through ui.controls (the page owns its names)."""

from __future__ import annotations

import streamlit as st

from gpu_demo.decode import MAX_GAMMA
from gpu_demo.live.runner import Settings
from gpu_demo.models.eagle import FEATURE_REUSE
from specdec_core.repeats import MAX_REPEATS
from ui.controls import bound_select, bound_text, bound_toggle, get_value, number_box, set_value, slider_input

# Presets use only characters the built-in (Jane Austen) alphabet has, so they run on every pair.
from ui.live.pairs import device_choices, pair_description, pair_status, resolve

# Presets use only characters the built-in (Jane Austen) alphabet has, so they run on every pair.
PRESETS: dict[str, str] = {
    "open-ended": "It was a fine morning in the country, and Elizabeth walked out",
    "copy-heavy": (
        "It is a truth universally acknowledged, that a single man in possession of a good fortune, "
        "must be in want of a wife.\nAgain: It is a truth universally acknowledged, that a single man"
    ),
    "code-like": "def total(items):\n    return sum([x * 2 for x in items])\n\ndef mean(items):\n    return",
    "chat question": "Explain how a rainbow forms, in simple words.",
}
CUSTOM = "custom"
MAX_NEW = 400
MAX_PROMPT_CHARS = 4000


def _load_preset() -> None:
    """Callback: put the chosen preset's text into the prompt box."""
    name = get_value("preset")
    if name in PRESETS:
        set_value("prompt", PRESETS[name])


def pair_and_device() -> tuple[str, str, str | None, bool, str]:
    """(pair, device, device problem, pair available, availability reason)."""
    options, why = device_choices()
    left, right = st.columns([3, 1])
    with right:
        dev_asked = bound_select("device", options, key="dev", help=why)
    device, problem = resolve(dev_asked)
    status = pair_status(device)
    names = list(status)
    with left:
        pair = bound_select(
            "model pair", names, key="pair", default="builtin" if "builtin" in names else None,
            help="Every registered pair; one that cannot load here says why when chosen.",
        )
        off = [n for n in names if not status[n][0]]
        if off:  # a selectbox cannot grey out options (and a label suffix would leak into the URL)
            st.caption(
                "Unavailable here: " + ", ".join(f"~~{n}~~" for n in off) + " (reasons under 'all model pairs')."
            )
    ok, reason = status[pair]
    return pair, device, problem, ok, reason


def pairs_table(device: str) -> None:
    """Every registered pair, whether it loads here, and why not."""
    status = pair_status(device)
    st.dataframe(
        {
            "pair": list(status),
            "here": ["available" if ok else "unavailable" for ok, _ in status.values()],
            "reason / description": [pair_description(n) if ok else why for n, (ok, why) in status.items()],
        },
        hide_index=True,
        key="pairs_table",
    )
    st.caption(FEATURE_REUSE)


def prompt_box() -> str:
    """Preset picker and the prompt text area (both URL-bound)."""
    bound_select(
        "prompt preset",
        [*PRESETS, CUSTOM],
        key="preset",
        on_change=_load_preset,
        help="open-ended prose, a copy-heavy passage (the continuation repeats text), code-like text, "
        "a question for a chat model",
    )
    chosen = PRESETS.get(get_value("preset", ""), PRESETS["open-ended"])  # ?preset= without ?prompt=
    return bound_text("prompt", "prompt", chosen, max_len=MAX_PROMPT_CHARS, area=True, height=110,
                      help="A chat model (SmolLM2) gets this as one user turn in its chat template, so it answers; "
                      "text already written in the template (<|im_start|>...) is sent as typed.")


def sampling_controls() -> dict:
    """gamma, greedy, target temperature/top-k/top-p, optional draft settings, length and seed."""
    c1, c2 = st.columns(2, gap="large")
    with c1:
        gamma = slider_input(
            "draft length gamma", "gamma", 1, MAX_GAMMA, 4, 1, help="Draft tokens proposed per target pass."
        )
        max_new = slider_input("max new tokens", "maxnew", 1, MAX_NEW, 100, 1)
        seed = number_box("seed", "seed", 0, 2**31 - 1, 0, 1)
        repeats = slider_input(
            "repeats (interleaved)", "repeats", 1, MAX_REPEATS, 3, 1,
            help="Speculative run and baseline pairs per race (and per gamma in a sweep), in the order S B, B S, "
                 "S B, ...; the page quotes medians with their spread.",
        )
    with c2:
        greedy = bound_toggle("greedy (temperature 0: argmax, output equals plain greedy decoding)", "greedy")
        temp = slider_input("target temperature", "temp", 0.05, 2.0, 1.0, 0.05, "%.2f")
        tk, tp = st.columns(2)
        with tk:
            top_k = number_box("target top-k (0 = off)", "topk", 0, 100_000, 0, 1)
        with tp:
            top_p = number_box("target top-p (1 = off)", "topp", 0.01, 1.0, 1.0, 0.01)
    apart = bound_toggle("set the draft's sampling apart from the target's", "apart", disabled=greedy)
    d_temp, d_top_k, d_top_p = temp, top_k, top_p
    if apart and not greedy:
        st.warning(
            "The draft now samples from a different law q than the target's p. The engine verifies with the q the "
            "draft really sampled from, so the output is still exactly distributed as p, but fewer drafts are "
            "accepted. Verifying against the wrong law (q computed with the target's settings while the draft "
            "sampled with its own) would break exactness: the output would no longer follow p."
        )
        d1, d2, d3 = st.columns(3)
        with d1:
            d_temp = number_box("draft temperature", "dtemp", 0.05, 2.0, 1.0, 0.05)
        with d2:
            d_top_k = number_box("draft top-k", "dtopk", 0, 100_000, 0, 1)
        with d3:
            d_top_p = number_box("draft top-p", "dtopp", 0.01, 1.0, 1.0, 0.01)
    return dict(
        gamma=int(gamma),
        greedy=bool(greedy),
        temperature=float(temp),
        top_k=int(top_k),
        top_p=float(top_p),
        draft_apart=bool(apart and not greedy),
        d_temperature=float(d_temp),
        d_top_k=int(d_top_k),
        d_top_p=float(d_top_p),
        max_new=int(max_new),
        seed=int(seed),
        repeats=int(repeats),
    )


# The quick demo (issue 27): a short greedy reply, one repeat, on the pair that pays most on this device. Measured
# on this project's 2-core CPU (60 greedy tokens, 3 repeats pooled): builtin gamma 4 open-ended 1.45x (copy-heavy
# 1.14x); smollm2-lookup pays on copy-heavy prompts only (1.99x at gamma 4 on the fp16 target, 2 repeats,
# bench/live_smollm2_lookup.py --temperature 0), smollm2-draft below 1x. On CUDA the distilled SmolLM2 draft.
QUICK = {"preset": "open-ended", "maxnew": 60, "repeats": 1, "greedy": True, "gamma": 4}
FULL = {"maxnew": 200, "repeats": 3}
QUICK_RUN = "live_quick_run"    # set by a demo button: the next run of the page starts the race by itself


def quick_pair(device: str) -> str | None:
    """The quick demo's pair on this device (None if none loads here)."""
    status = pair_status(device)
    for name in (("smollm2-draft", "builtin") if device == "cuda" else ("builtin", "smollm2-lookup")):
        if name in status and status[name][0]:
            return name
    return None


def _apply(values: dict, device: str, pair: str | None = None) -> None:
    """Callback: set these controls (URL-bound), the preset's prompt, and start the race on the next run."""
    for key, value in values.items():
        set_value(key, value)
    if "preset" in values:
        set_value("prompt", PRESETS[values["preset"]])
    if pair is not None:
        set_value("pair", pair)
    st.session_state[QUICK_RUN] = True


def demo_buttons(device: str) -> None:
    """Quick demo and full race, beside the prompt: one click each, both run at once."""
    pair = quick_pair(device)
    q, f, note = st.columns([1, 1, 2.4], vertical_alignment="center")
    q.button("Quick demo", key="quick_btn", type="primary", icon=":material/bolt:", disabled=pair is None,
             on_click=_apply, args=(QUICK, device, pair),
             help=f"{QUICK['maxnew']} greedy tokens, {QUICK['repeats']} repeat, gamma {QUICK['gamma']}, the "
                  f"open-ended prompt, on {pair or 'no pair'}: a speedup in seconds.")
    f.button("Full race", key="full_btn", icon=":material/sports_score:", on_click=_apply, args=(FULL, device),
             help=f"These settings with {FULL['maxnew']} tokens and {FULL['repeats']} interleaved repeats.")
    note.caption(f"Quick demo: {pair or 'no pair loads here'}, {QUICK['maxnew']} tokens, one repeat. Full race: "
                 f"{FULL['maxnew']} tokens, {FULL['repeats']} repeats. Every setting is below.")


def all_controls() -> tuple[Settings, bool, str, str | None]:
    """Every control; returns (settings, pair available, unavailability reason, device problem)."""
    pair, device, problem, ok, reason = pair_and_device()
    prompt = prompt_box()
    demo_buttons(device)
    with st.expander("sampling, gamma, length and seed", expanded=True):
        rest = sampling_controls()
    return Settings(pair=pair, device=device, prompt=prompt, **rest), ok, reason, problem
