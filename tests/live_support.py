"""Support for the live-page tests: the built-in pair's weights, or a tiny stand-in when they are absent.

The built-in pair's trained weights live in gpu_demo/assets/. Where they are not there (a checkout
before training finished), the tests build a tiny untrained pair with the engine's own config classes
and the corpus alphabet, save it with the engine's own writer, and point the page at it through
SPECDEC_BUILTIN_ASSETS. Everything else (loader, decoder, page) is the real code path.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import torch

from gpu_demo.models.char import CharConfig, CharTransformer, WindowConfig, WindowMLP, save_char_model
from gpu_demo.pairs import ASSETS
from ui.live.pairs import ASSETS_ENV

# The corpus alphabet (sorted characters of the Austen asset, separator excluded).
ALPHABET = "\n !\"&'()*,-.0123456789:;?ABCDEFGHIJKLMNOPQRSTUVWXYZ[]_abcdefghijklmnopqrstuvwxyz\u00a3"
BAD_CHARS = "\u20ac@"  # characters the built-in alphabet lacks


def real_assets_present() -> bool:
    """True when the trained built-in pair is committed."""
    return all((ASSETS / f"{n}.{ext}").exists() for n in ("target", "draft") for ext in ("json", "safetensors"))


def build_tiny_pair(directory: Path, seed: int = 0) -> Path:
    """Write an untrained 2-layer, 64-dim target and a window-MLP draft over ALPHABET into directory."""
    torch.manual_seed(seed)
    v = len(ALPHABET)
    target = CharTransformer(CharConfig(vocab_size=v, n_layer=2, n_head=2, d_model=64, max_seq_len=256))
    draft = WindowMLP(WindowConfig(vocab_size=v, window=8, d_emb=8, d_hidden=64, max_seq_len=256))
    for name, model in (("target", target), ("draft", draft)):
        save_char_model(model, directory, name, {"name": name, "vocab": ALPHABET, "params": model.num_params(),
                                                 "note": "tiny untrained stand-in for tests"})
    return directory


def ensure_builtin_assets() -> str:
    """'real' when the trained pair is present; else build the tiny pair, export SPECDEC_BUILTIN_ASSETS, 'tiny'."""
    if real_assets_present() and not os.environ.get(ASSETS_ENV):
        return "real"
    if not os.environ.get(ASSETS_ENV):
        os.environ[ASSETS_ENV] = str(build_tiny_pair(Path(tempfile.mkdtemp(prefix="specdec-tiny-"))))
    return "tiny"
