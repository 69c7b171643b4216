"""Controls of the live page, every one bound to the URL through ui.controls (the page owns its names)."""

from __future__ import annotations

import streamlit as st

from gpu_demo.decode import MAX_GAMMA
from gpu_demo.live.prompts import PRESETS, preset_forms, preset_text
from gpu_demo.live.runner import Settings
from gpu_demo.models.eagle import FEATURE_REUSE
from gpu_demo.pairs import PAIRS
from specdec_core.repeats import MAX_REPEATS
from ui.controls import bound_select, bound_text, bound_toggle, get_value, number_box, set_value, slider_input

# Presets use only characters the built-in (Jane Austen) alphabet has, so they run on every pair.
from ui.live.pairs import device_choices, pair_description, pair_status, resolve

CUSTOM = "custom"
MAX_NEW = 400
MAX_PROMPT_CHARS = 4000


def is_chat(pair: str | None) -> bool:
    """Whether the registered pair is a chat model (its prompt goes in as one user turn)."""
    spec = PAIRS.get(pair or "")
    return bool(spec and spec.chat)


def _load_preset() -> None:
    """Callback: put the chosen preset's text, in the form for the chosen pair, into the prompt box."""
    name = get_value("preset")
    if name in PRESETS:
        set_value("prompt", preset_text(name, is_chat(get_value("pair"))))


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


def prompt_box(pair: str | None = None) -> str:
    """Preset picker and the prompt text area (both URL-bound); a preset's text follows the pair's kind (chat or
    text continuation) while the prompt still holds one of its forms."""
    bound_select(
        "prompt preset",
        [*PRESETS, CUSTOM],
        key="preset",
        on_change=_load_preset,
        help="open-ended prose; copy-heavy: an edit task (correct a paragraph's spelling and return it in full), "
        "whose reply copies the prompt, so prompt lookup pays; code-like text; a question for a chat model",
    )
    name = get_value("preset", "")
    name = name if name in PRESETS else "open-ended"
    chosen = preset_text(name, is_chat(pair))  # ?preset= without ?prompt=
    if get_value("prompt") in preset_forms(name) and get_value("prompt") != chosen:
        set_value("prompt", chosen)
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


# The quick demo: a greedy reply on the pair that pays most, long enough for the page's own rules (at least
# MIN_ROUNDS rounds per repeat, 3 repeats for a spread). SmolLM2 with prompt lookup leads, on the edit preset
# (its greedy reply copies the paragraph back); the built-in pair stands in where SmolLM2 does not load. The
# measurements are in bench/live_smollm2_lookup_edit.json (and _xeon.json) and bench/live_quick_demo.json.
QUICK_PAIRS = ("smollm2-lookup", "builtin")
QUICK_BY_PAIR = {
    "smollm2-lookup": {"preset": "copy-heavy", "maxnew": 200, "repeats": 3, "greedy": True, "gamma": 4},
    "builtin": {"preset": "open-ended", "maxnew": 200, "repeats": 3, "greedy": True, "gamma": 4},
}
QUICK_LABEL = {"smollm2-lookup": "SmolLM2-135M (a real chat LM) with prompt lookup, asked to correct a paragraph's "
                                 "spelling: its reply copies the paragraph, so the lookup draft is accepted",
               "builtin": "the built-in character-level pair (a toy model, not a chat LM) continuing prose"}
FULL = {"maxnew": 200, "repeats": 3}
QUICK_RUN = "live_quick_run"    # set by a demo button: the next run of the page starts the race by itself


def quick_pair(device: str) -> str | None:
    """The quick demo's pair on this device (None if none loads here)."""
    status = pair_status(device)
    for name in QUICK_PAIRS:
        if name in status and status[name][0]:
            return name
    return None


def quick_settings(pair: str | None) -> dict:
    """The quick demo's settings for its pair (the built-in pair's when none loads)."""
    return QUICK_BY_PAIR.get(pair or "builtin", QUICK_BY_PAIR["builtin"])


def _apply(values: dict, device: str, pair: str | None = None) -> None:
    """Callback: set these controls (URL-bound), the preset's prompt, and start the race on the next run."""
    for key, value in values.items():
        set_value(key, value)
    if "preset" in values:
        set_value("prompt", preset_text(values["preset"], is_chat(pair or get_value("pair"))))
    if pair is not None:
        set_value("pair", pair)
    st.session_state[QUICK_RUN] = True


def demo_buttons(device: str) -> None:
    """Quick demo and full race, beside the prompt: one click each, both run at once."""
    pair = quick_pair(device)
    quick = quick_settings(pair)
    what = QUICK_LABEL.get(pair or "", "no pair loads here")
    q, f, note = st.columns([1, 1, 2.4], vertical_alignment="center")
    q.button("Quick demo", key="quick_btn", type="primary", icon=":material/bolt:", disabled=pair is None,
             on_click=_apply, args=(quick, device, pair),
             help=f"Up to {quick['maxnew']} greedy tokens, {quick['repeats']} interleaved repeats, gamma "
                  f"{quick['gamma']}, the {quick['preset']} prompt, on {pair or 'no pair'}: {what}.")
    f.button("Full race", key="full_btn", icon=":material/sports_score:", on_click=_apply, args=(FULL, device),
             help=f"These settings with {FULL['maxnew']} tokens and {FULL['repeats']} interleaved repeats.")
    note.caption(f"Quick demo: {pair or 'no pair loads here'} ({what}), up to {quick['maxnew']} greedy tokens, "
                 f"{quick['repeats']} repeats. Full race: these settings, {FULL['maxnew']} tokens, "
                 f"{FULL['repeats']} repeats. Every setting is below.")


def all_controls() -> tuple[Settings, bool, str, str | None]:
    """Every control; returns (settings, pair available, unavailability reason, device problem)."""
    pair, device, problem, ok, reason = pair_and_device()
    prompt = prompt_box(pair)
    demo_buttons(device)
    with st.expander("sampling, gamma, length and seed", expanded=True):
        rest = sampling_controls()
    return Settings(pair=pair, device=device, prompt=prompt, **rest), ok, reason, problem
