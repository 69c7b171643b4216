"""The live page's model pairs: loaded once per server with st.cache_resource, shared by every session.

Every pair on one device shares that device's :class:`~gpu_demo.live.queue.TurnQueue`
(``gpu_demo.live.queue.device_queue``), and so does the roofline page's probe, so a probe cannot run beside a
race and skew its timings.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import streamlit as st

from gpu_demo import pairs
from gpu_demo.device import gpu_name
from gpu_demo.live.queue import CPU_DECODE_THREADS, decode_threads, device_queue
from gpu_demo.live.runner import SharedPair

ASSETS_ENV = "SPECDEC_BUILTIN_ASSETS"  # optional: another directory holding the built-in pair's weights
WEB_HF_REASON = ("not available on this page: it runs models that the server's operator names, and a web page "
                 "never chooses which model files the server opens")


def device_choices() -> tuple[list[str], str]:
    """Devices offered ("auto" first) and a sentence saying what auto picks and why."""
    name = gpu_name()
    if name is not None:
        return ["auto", "cuda", "cpu"], f"auto picks CUDA: PyTorch sees the GPU **{name}**."
    return ["auto", "cpu", "cuda"], (
        "auto picks the CPU: PyTorch sees no CUDA GPU here (`torch.cuda.is_available()` is False), so both "
        "models run on the CPU in float32."
    )


def resolve(device: str) -> tuple[str, str | None]:
    """('cpu'|'cuda', None) or ('cpu', why the asked device cannot be used)."""
    try:
        return pairs.resolve_device(device).type, None
    except ValueError as exc:
        return "cpu", str(exc)


@st.cache_data(ttl=600, show_spinner=False)
def pair_status(device: str) -> dict[str, tuple[bool, str]]:
    """For every registered pair: (can load here, reason if not). The 'hf' pair loads models named by whoever
    runs the command-line tool; a web page never chooses which model files the server opens, so it is off here."""
    status = {name: pairs.availability(name, device) for name in pairs.PAIRS}
    if "hf" in status:
        status["hf"] = (False, WEB_HF_REASON)
    return status


def pair_description(name: str) -> str:
    """The registry's one-line description, license and load cost."""
    spec = pairs.PAIRS[name]
    return f"{spec.description} License: {spec.license}. Load: {spec.load_cost}."


# One entry per (pair, device): cycling through every pair never evicts (and reloads) one. The SmolLM2 pairs
# also share one target per device (gpu_demo.models.smollm2.shared_target), so "once per server" holds.
PAIR_CACHE_ENTRIES = len(pairs.PAIRS) * len(("cpu", "cuda"))


@st.cache_resource(max_entries=PAIR_CACHE_ENTRIES,
                   show_spinner="Loading the model pair (once per server, shared by all sessions)...")
def shared_pair(name: str, device: str, assets: str | None) -> SharedPair:
    """Load pair `name` on `device` once per process and warm it up. A failure raises, and st.cache_resource
    keeps no exception, so the next page run retries (after the file is fixed, without a server restart)."""
    t0 = time.perf_counter()
    options = {"assets": Path(assets)} if (assets and name == "builtin") else {}
    pair = pairs.load_pair(name, device, **options)
    load_s = time.perf_counter() - t0
    with decode_threads(device):  # as the runs decode: extra OpenMP threads on a busy CPU slow the warm-up badly
        pairs.warm_up(pair)  # warm-up keeps the first run's c and v free of cold-start costs
    return SharedPair(name, device, pair, None, load_s, device_queue(device))


def get_pair(name: str, device: str) -> SharedPair:
    """The shared pair for (name, device), honouring the SPECDEC_BUILTIN_ASSETS override; a failed load comes
    back as a SharedPair whose error names the file (gpu_demo.pairs.damaged) and is not cached."""
    t0 = time.perf_counter()
    try:
        return shared_pair(name, device, os.environ.get(ASSETS_ENV) or None)
    except Exception as exc:  # any loader failure becomes a message on the page
        error = f"{type(exc).__name__}: {exc}"
        return SharedPair(name, device, None, error, time.perf_counter() - t0, device_queue(device))


def device_name(sp: SharedPair) -> str:
    """Human name of the device the pair sits on."""
    if sp.device == "cuda":
        return f"cuda ({gpu_name()})"
    return f"cpu ({CPU_DECODE_THREADS} thread{'s' if CPU_DECODE_THREADS > 1 else ''})"
