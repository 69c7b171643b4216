"""SmolLM2-135M-Instruct pairs for the registry: with the prompt-lookup draft, or with the trained draft.

Loader signature (gpu_demo.pairs): ``loader(device, **options) -> Pair``. Options: ``dtype``
(float32 by default on CPU, bfloat16 on CUDA), ``max_len`` (KV-cache capacity, default 2048), and for
the lookup pair ``max_ngram``/``min_ngram``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import torch

from gpu_demo.drafters import LookupDrafter, ModelDrafter
from gpu_demo.models.gguf import (
    LICENSE,
    SmolLM2,
    SmolLM2Unavailable,
    cache_dir,
    gguf_path,
    load_smollm2,
    q4_1_state,
    render_chat,
)
from gpu_demo.models.quant import FORMATS, cpu_weight_format
from gpu_demo.pairs import Pair, damaged

TURN_MARK = "<|im_start|>"  # opens every turn in SmolLM2's chat template
END_OF_TURN = "<|im_end|>"  # closes every turn: the assistant's reply ends here
# The template's markup tokens: any of them ends the assistant's turn (a model that skips <|im_end|> and opens
# a new turn, or ends the text, has finished its reply too), and none is ever shown as reply text.
MARKUP_NAMES: dict[str, str] = {END_OF_TURN: "[end of turn]", TURN_MARK: "[new turn]", "<|endoftext|>": "[end of text]"}


class SmolTokenizer:
    """gpu_demo's Tokenizer protocol over the BPE tokenizer rebuilt from the GGUF."""

    def __init__(self, tokenizer, chat_template: str, eos_token_id: int) -> None:
        self.tk = tokenizer
        self.vocab_size = tokenizer.get_vocab_size()
        self.chat_template = chat_template
        self.eos_token_id = eos_token_id
        ids = {name: tokenizer.token_to_id(name) for name in MARKUP_NAMES}
        self.markup: dict[int, str] = {int(i): MARKUP_NAMES[n] for n, i in ids.items() if i is not None}
        # (eos first: the GGUF's eos is <|im_end|>) the one stop set of every SmolLM2 run
        self.stop_tokens: tuple[int, ...] = (eos_token_id, *sorted(set(self.markup) - {eos_token_id}))

    def encode(self, text: str) -> list[int]:
        """Byte-level BPE ids (any text is representable; special tokens such as <|im_start|> are recognised)."""
        return self.tk.encode(text).ids

    def decode(self, ids: list[int] | tuple[int, ...]) -> str:
        """Text of ids, special tokens included."""
        return self.tk.decode(list(ids), skip_special_tokens=False)

    def piece(self, token_id: int) -> str:
        """Display text of one token (a partial UTF-8 byte shows as U+FFFD); a template markup token shows as
        its name in words ('[end of turn]'), never as '<|im_end|>'."""
        if int(token_id) in self.markup:
            return self.markup[int(token_id)]
        return self.tk.decode([int(token_id)], skip_special_tokens=False)

    def reply(self, ids: list[int] | tuple[int, ...]) -> str:
        """The reply's text: ids up to the first stop token (excluded), special tokens dropped."""
        cut = next((i for i, t in enumerate(ids) if t in self.stop_tokens), len(ids))
        return self.tk.decode(list(ids[:cut]), skip_special_tokens=True)

    def chat(self, user: str, system: str | None = None) -> str:
        """The chat-template prompt for one user turn, ready for the assistant's reply."""
        msgs = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}]
        return render_chat(self.chat_template, msgs)

    def user_turn(self, text: str) -> str:
        """text as one user turn (chat), unless it is already written in the template (it holds TURN_MARK)."""
        return text if TURN_MARK in text else self.chat(text)


def _dtype(device: torch.device, dtype: torch.dtype | str | None) -> torch.dtype:
    """float32 on CPU, bfloat16 on CUDA, unless given."""
    if isinstance(dtype, str):
        dtype = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[dtype]
    return dtype or (torch.bfloat16 if device.type == "cuda" else torch.float32)


_TARGETS: dict[tuple[str, str, int, str], SmolLM2] = {}
_TARGETS_LOCK = threading.Lock()
# The target's CPU format: fp16, TV 6e-4 from float32, whose verify pass batches its rows. int8 and int4 (ONNX
# Runtime's blocks, TV 0.03) decode plain faster but compute a verify pass's rows as single steps to keep greedy
# outputs exact, so speculation pays less on them (bench/quant_decode.py, gpu_demo.models.ort_blocks). bf16 (oneDNN,
# AMX tiles where the CPU has them) makes a verify pass's extra rows nearly free but its single step slower than
# fp16's on this repo's CPUs, so it is a choice (SPECDEC_CPU_WEIGHTS=bf16), not the default
# (bench/live_smollm2_eagle_bf16_xeon_t1.json).
CPU_WEIGHTS = "fp16"
WEIGHTS_ENV = "SPECDEC_CPU_WEIGHTS"


def target_weights(device: torch.device, dtype: torch.dtype, weights: str | None = None) -> tuple[str, str]:
    """(format, in words) of the target's linear maps: `weights`, else $SPECDEC_CPU_WEIGHTS, else CPU_WEIGHTS, on a
    CPU in float32 where its kernel runs here (gpu_demo.models.quant.cpu_weight_format); float32 elsewhere."""
    dtype = _dtype(torch.device(device), dtype)
    wanted = weights or os.environ.get(WEIGHTS_ENV, "").strip() or CPU_WEIGHTS
    if wanted not in FORMATS:
        raise ValueError(f"SmolLM2 weight format must be one of {FORMATS}; got {wanted!r}")
    if torch.device(device).type != "cpu" or dtype != torch.float32:
        return "float32", f"{str(dtype).replace('torch.', '')} weights (quantised kernels are CPU float32 only)"
    return cpu_weight_format(wanted)


def prepare_target(smol: SmolLM2, fmt: str, words: str) -> None:
    """Put the loaded target on `fmt` weights (float32: oneDNN-packed for 4+ rows, a no-op off the CPU; int4: the
    GGUF's Q4_1 blocks); `words` is what the pair's info shows."""
    smol.weights = words
    if fmt == "float32":
        smol.model.pack_for_cpu()
    else:
        smol.model.quantize_for_cpu(fmt, q4_1_state() if fmt == "int4" else None)


def shared_target(device: torch.device, dtype: torch.dtype, max_len: int, weights: str | None = None) -> SmolLM2:
    """SmolLM2 loaded once per process and (device, dtype, cache length, weight format), shared by the SmolLM2 pairs.

    Sharing one target is safe where runs on a device take turns (the live page's device queue) and
    every run resets the caches it uses (decode.prefill). A failed load is not kept: the next call retries.
    """
    fmt, words = target_weights(device, dtype, weights)
    key = (str(torch.device(device)), str(dtype), int(max_len), fmt)
    with _TARGETS_LOCK:  # held while loading, so two pairs asking at once load it once
        if key not in _TARGETS:
            try:
                smol = load_smollm2(device=device, dtype=dtype, max_len=max_len)
                prepare_target(smol, fmt, words)
                _TARGETS[key] = smol
            except SmolLM2Unavailable:
                raise
            except Exception as exc:  # the readers' own messages do not say which file
                files = [cache_dir(gguf_path()) / n for n in ("config.json", "model.safetensors", "tokenizer.json")]
                raise damaged(files, exc) from exc
        return _TARGETS[key]


def tokenizer_of(smol: SmolLM2) -> SmolTokenizer:
    """The pair's tokenizer, which holds the one stop set (stop_tokens) of every SmolLM2 run."""
    return SmolTokenizer(smol.tokenizer, smol.chat_template, smol.eos_token_id)


def pair_info(smol: SmolLM2, dtype: torch.dtype, draft: str) -> dict:
    """Facts for display; stop_tokens is what every caller (CLI, live page, race, constraint panel) stops at."""
    fmt = smol.model.weight_format
    return {
        "target": f"SmolLM2-135M-Instruct (Q4_1 GGUF, {fmt} weights)",
        "target_weights": smol.weights,
        "target_params": smol.model.num_params(),
        "draft": draft,
        "context": smol.model.max_seq_len,
        "dtype": str(dtype).replace("torch.", ""),
        "license": LICENSE,
        "load_s": round(smol.load_seconds, 2),
        "from_cache": smol.from_cache,
        "stop_tokens": list(tokenizer_of(smol).stop_tokens),
        "chat": True,
    }


def load_lookup_pair(
    device: torch.device, dtype: torch.dtype | str | None = None, max_len: int = 2048,
    max_ngram: int | str = 3, min_ngram: int | str = 1, weights: str | None = None,
) -> Pair:
    """SmolLM2 target (`weights`: a quant.FORMATS name, None for the CPU default) + prompt-lookup draft (q one-hot).

    Options may come as CLI strings.
    """
    dt = _dtype(device, dtype)
    max_len, max_ngram, min_ngram = int(max_len), int(max_ngram), int(min_ngram)
    smol = shared_target(device, dt, max_len, weights)
    tok = tokenizer_of(smol)
    drafter = LookupDrafter(smol.model.vocab_size, max_ngram=max_ngram, min_ngram=min_ngram)
    info = pair_info(smol, dt, f"prompt lookup (n-gram {min_ngram}..{max_ngram})")
    return Pair("smollm2-lookup", smol.model, drafter, tok, device, info)


def target_and_draft(
    device: torch.device, dtype: torch.dtype | str | None, max_len: int | str,
    load: Callable[..., torch.nn.Module], files: list[Path], weights: str | None = None,
) -> tuple[SmolLM2, torch.dtype, torch.nn.Module, SmolTokenizer]:
    """The shared SmolLM2 target (on `weights`), a draft built by load(target, max_len=...) from `files`, the tokenizer.

    A draft that cannot be read raises the error naming the first damaged or missing file.
    """
    dt = _dtype(device, dtype)
    smol = shared_target(device, dt, int(max_len), weights)
    try:
        draft = load(smol.model, max_len=int(max_len))
    except Exception as exc:  # the readers' own messages do not say which file
        raise damaged(files, exc) from exc
    return smol, dt, draft, tokenizer_of(smol)


def load_draft_pair(device: torch.device, dtype: torch.dtype | str | None = None, max_len: int | str = 2048) -> Pair:
    """SmolLM2 target + the distilled 2-layer draft committed in assets/smollm2_draft.*."""
    from gpu_demo.training.smollm2_draft import ASSETS, DRAFT_NAME, load_draft

    files = [ASSETS / f"{DRAFT_NAME}.json", ASSETS / f"{DRAFT_NAME}.safetensors"]
    smol, dt, draft, tok = target_and_draft(device, dtype, max_len, load_draft, files)
    info = pair_info(smol, dt, "distilled 2-layer Llama draft")
    info["draft_params"] = draft.num_params()
    return Pair("smollm2-draft", smol.model, ModelDrafter(draft, "distilled SmolLM2 draft"), tok, device, info)
