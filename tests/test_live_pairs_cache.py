"""The live page's model cache.

* Cycling through every registered pair loads each once: the cache holds an entry per pair and device
  (it held 3 for 4 pairs, so every cycle reloaded SmolLM2).
* Both SmolLM2 pairs share one target per device, loaded once even when both ask at the same moment
  (each used to load its own 540 MB copy).
* A failed load is not cached: after the file is fixed the next page run loads the pair, without a server
  restart; and the message names the damaged file.
"""

from __future__ import annotations

import shutil
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path

import pytest
from live_support import build_tiny_pair

from gpu_demo import pairs
from gpu_demo.models import smollm2
from ui.live import pairs as lpairs


def _fake_pair(name: str) -> pairs.Pair:
    return pairs.Pair(name, types.SimpleNamespace(), types.SimpleNamespace(), types.SimpleNamespace(), "cpu")


def test_cycling_every_pair_twice_loads_each_once(monkeypatch):
    calls: list[tuple[str, str]] = []

    def load(name, device, **options):
        calls.append((name, device))
        return _fake_pair(name)

    monkeypatch.setattr(pairs, "load_pair", load)
    monkeypatch.setattr(pairs, "warm_up", lambda pair: 0.0)
    lpairs.shared_pair.clear()
    try:
        for _ in range(2):
            for device in ("cpu", "cuda"):
                for name in pairs.PAIRS:
                    assert lpairs.get_pair(name, device).error is None
        assert sorted(calls) == sorted((n, d) for n in pairs.PAIRS for d in ("cpu", "cuda"))  # no reload
    finally:
        lpairs.shared_pair.clear()


def _fake_smol(loads: list[object], packs: list[int] | None = None, hold: Callable[[], None] = lambda: None):
    def load_smollm2(device, dtype, max_len):
        loads.append((device, dtype, max_len))
        hold()  # the racing test keeps the first load open until the second thread is in load_pair too
        model = types.SimpleNamespace(vocab_size=49152, max_seq_len=max_len, num_params=lambda: 134_515_008,
                                      pack_for_cpu=lambda: (packs if packs is not None else []).append(max_len),
                                      quantize_for_cpu=lambda fmt, q4=None: (packs if packs is not None else [])
                                      .append(max_len), weight_format="fp16")
        tok = types.SimpleNamespace(get_vocab_size=lambda: 49152, token_to_id=lambda name: None)
        return types.SimpleNamespace(model=model, tokenizer=tok, chat_template="", eos_token_id=2, load_seconds=0.0,
                                     from_cache=True)
    return load_smollm2


def test_both_smollm2_pairs_share_one_target_loaded_once(monkeypatch):
    from gpu_demo.training import smollm2_draft

    loads: list[object] = []
    packs: list[int] = []
    both_in = threading.Barrier(2)

    def hold() -> None:
        """The first load (which starts only once both threads are calling load_pair) stays open until the other
        thread loads too or 0.3 s pass: with the lock it waits at the lock (one load), without it it loads too (two),
        so a late thread can no longer find the cache filled and pass without the lock."""
        if len(loads) == 1:
            deadline = time.monotonic() + 0.3
            while len(loads) < 2 and time.monotonic() < deadline:
                time.sleep(0.001)

    def ask(name: str) -> None:
        both_in.wait(10)  # both threads call load_pair now: the first load starts after both have
        got[name] = pairs.load_pair(name, "cpu")

    monkeypatch.setattr(smollm2, "load_smollm2", _fake_smol(loads, packs, hold))
    monkeypatch.setattr(smollm2, "_TARGETS", {})
    draft = types.SimpleNamespace(num_params=lambda: 1, max_seq_len=2048)
    monkeypatch.setattr(smollm2_draft, "load_draft", lambda target, max_len=2048: draft)
    monkeypatch.setattr(smollm2, "ModelDrafter", lambda model, name: types.SimpleNamespace(model=model))
    got: dict[str, pairs.Pair] = {}
    threads = [threading.Thread(target=ask, args=(n,)) for n in ("smollm2-lookup", "smollm2-draft")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert len(loads) == 1, loads  # one load, though both pairs asked at once
    assert got["smollm2-lookup"].target is got["smollm2-draft"].target
    pairs.load_pair("smollm2-lookup", "cpu", max_len=512)  # another cache length is another target
    assert len(loads) == 2
    assert packs == [2048, 512]  # each loaded target packed once (for a CPU's verify passes), shared after


def test_a_failed_smollm2_load_is_not_kept(monkeypatch):
    loads: list[object] = []
    real = _fake_smol(loads)
    state = {"broken": True}

    def flaky(device, dtype, max_len):
        if state["broken"]:
            raise OSError("disk hiccup")
        return real(device, dtype, max_len)

    monkeypatch.setattr(smollm2, "load_smollm2", flaky)
    monkeypatch.setattr(smollm2, "_TARGETS", {})
    with pytest.raises(ValueError):
        smollm2.shared_target("cpu", "float32", 2048)
    state["broken"] = False
    assert smollm2.shared_target("cpu", "float32", 2048).model.max_seq_len == 2048


@pytest.fixture
def damaged_assets(tmp_path, monkeypatch) -> Path:
    """A tiny built-in pair in its own folder, the page pointed at it, its cache entry cleared."""
    folder = build_tiny_pair(tmp_path / "assets")
    monkeypatch.setenv(lpairs.ASSETS_ENV, str(folder))
    lpairs.shared_pair.clear()
    yield folder
    lpairs.shared_pair.clear()


def test_failed_load_names_the_file_and_is_retried_once_the_file_is_fixed(damaged_assets, tmp_path):
    weights = damaged_assets / "draft.safetensors"
    good = tmp_path / "good.safetensors"
    shutil.copy(weights, good)
    weights.write_bytes(good.read_bytes()[: good.stat().st_size // 2])  # a download cut in half
    first = lpairs.get_pair("builtin", "cpu")
    assert first.pair is None and str(weights) in first.error and "not fully covered" in first.error
    again = lpairs.get_pair("builtin", "cpu")
    assert again.pair is None and str(weights) in again.error  # still broken: still said, still not kept
    shutil.copy(good, weights)  # the operator fixes the file; no server restart
    fixed = lpairs.get_pair("builtin", "cpu")
    assert fixed.error is None and fixed.pair is not None
    assert lpairs.get_pair("builtin", "cpu") is fixed  # and from now on it is the cached pair


@pytest.mark.parametrize(("name", "content", "words"), [
    ("target.json", b"{", "JSONDecodeError"),
    ("target.safetensors", b"garbage", "header too small"),
    ("draft.json", None, "missing"),
])
def test_each_kind_of_damage_names_its_file(damaged_assets, name, content, words):
    path = damaged_assets / name
    if content is None:
        path.unlink()
    else:
        path.write_bytes(content)
    sp = lpairs.get_pair("builtin", "cpu")
    assert sp.pair is None and str(path) in sp.error and words in sp.error
    with pytest.raises(pairs.DamagedFile, match=str(path)):  # the CLI's loader says the same
        pairs.load_pair("builtin", "cpu", assets=damaged_assets)
