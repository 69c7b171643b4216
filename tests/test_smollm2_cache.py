"""A damaged SmolLM2 cache (a file missing, a chat template that is not the GGUF's, config.json broken) is found
and rebuilt from the GGUF, never loaded as it is; the shared cache is never touched (a temporary one is used)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gpu_demo.models import gguf

pytestmark = pytest.mark.skipif(gguf.importlib.util.find_spec("gguf") is None, reason="needs the gguf package")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """(the GGUF, a whole cache built from it in a temporary folder)."""
    try:
        path = gguf.gguf_path()
    except gguf.SmolLM2Unavailable as exc:
        pytest.skip(str(exc))
    folder = tmp_path_factory.mktemp("smol") / "cache"
    assert gguf.ensure_cache(path, folder) is False          # built, not found
    return path, folder


def _copy(folder: Path, tmp_path: Path) -> Path:
    out = tmp_path / "cache"
    shutil.copytree(folder, out)
    return out


def _recording(monkeypatch) -> list[Path]:
    calls: list[Path] = []
    real = gguf.build_cache
    monkeypatch.setattr(gguf, "build_cache", lambda p, f: (calls.append(f), real(p, f)))
    return calls


def test_a_whole_cache_is_used_as_it_is(built, tmp_path, monkeypatch):
    path, folder = built
    assert gguf.cache_damage(folder) is None
    calls = _recording(monkeypatch)
    assert gguf.ensure_cache(path, _copy(folder, tmp_path)) is True and calls == []


@pytest.mark.parametrize("damage", ["no weights", "looping template", "broken config"])
def test_a_damaged_cache_is_found_and_rebuilt(built, tmp_path, monkeypatch, damage):
    path, folder = built
    bad = _copy(folder, tmp_path)
    if damage == "no weights":
        (bad / "model.safetensors").unlink()
    elif damage == "looping template":
        meta = json.loads((bad / "config.json").read_text())
        meta["chat_template"] = "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}"
        (bad / "config.json").write_text(json.dumps(meta))
    else:
        (bad / "config.json").write_text("{not json")
    assert gguf.cache_damage(bad)
    calls = _recording(monkeypatch)
    assert gguf.ensure_cache(path, bad) is False and calls == [bad]
    assert gguf.cache_damage(bad) is None
    assert json.loads((bad / "config.json").read_text())["chat_template"] == \
        json.loads((folder / "config.json").read_text())["chat_template"]
