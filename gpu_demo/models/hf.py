"""Any Hugging Face causal-LM pair as a target/draft for the same decoder (optional `transformers`).

Security: weights load only from safetensors (`use_safetensors=True`, never a pickle) and never run
repository code (`trust_remote_code=False`). A model id or path comes only from the command line or
the app's config, never from a page text box.

The pair must share one tokenizer (same token -> id map); otherwise it is refused. When one model's
embedding is padded past the other's (a common 128-multiple padding), logits are sliced to the shared
vocabulary min(V_target, V_draft), which still covers every real token. Rollback uses the library's
cache cropping (`DynamicCache.crop` with a negative count, valid in transformers 4.x and 5.x).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from gpu_demo.device import resolve_device

INSTALL_TRANSFORMERS = "pip install transformers==5.23.0"
LICENSE_NOTE = "the models' own licenses apply (see each model card)"


class HFUnavailable(ValueError):
    """transformers is missing or a model cannot be loaded; the message says what to do (a ValueError for the CLI)."""


class TokenizerMismatch(ValueError):
    """Target and draft tokenizers map tokens to ids differently, so draft ids mean nothing to the target."""


def require_transformers():
    """Import transformers or explain how to install it."""
    try:
        import transformers
    except ImportError as exc:
        raise HFUnavailable(
            f"The Hugging Face pair needs the optional transformers package: {INSTALL_TRANSFORMERS}"
        ) from exc
    return transformers


def check_same_tokenizer(target_tok: Any, draft_tok: Any) -> int:
    """Refuse tokenizers whose token -> id maps differ; returns the tokenizer's size (ids 0..n-1)."""
    tv, dv = target_tok.get_vocab(), draft_tok.get_vocab()
    if tv != dv:
        only_t = sorted(set(tv) - set(dv))
        only_d = sorted(set(dv) - set(tv))
        moved = sorted(k for k in set(tv) & set(dv) if tv[k] != dv[k])
        examples = []
        if moved:
            k = moved[0]
            examples.append(f"{k!r} is id {tv[k]} in the target but {dv[k]} in the draft")
        if only_t:
            examples.append(f"{only_t[0]!r} is only in the target")
        if only_d:
            examples.append(f"{only_d[0]!r} is only in the draft")
        raise TokenizerMismatch(
            f"target and draft tokenizers differ (target {len(tv)} tokens, draft {len(dv)}; "
            f"{len(moved)} shared tokens have different ids, {len(only_t)} only in the target, "
            f"{len(only_d)} only in the draft; e.g. {'; '.join(examples)}). Speculative decoding needs "
            "the draft to propose ids in the target's vocabulary: pick a draft from the same model family."
        )
    return len(tv)


class HFCausalLM:
    """A transformers causal LM behind gpu_demo's DecoderLM protocol: incremental forward, rollback by crop."""

    def __init__(self, model: Any, vocab_size: int, max_seq_len: int | None = None) -> None:
        self.model = model
        self.vocab_size = vocab_size  # logits are sliced to this shared vocabulary
        cfg = model.config
        self.max_seq_len = int(max_seq_len or getattr(cfg, "max_position_embeddings", 2048))
        self._cache = None
        self._len = 0
        self._batch = 0

    @property
    def device(self) -> torch.device:
        """Device of the weights (the cache follows it)."""
        return next(self.model.parameters()).device

    @property
    def cache_len(self) -> int:
        """Positions held in the library's cache."""
        return self._len

    def reset(self, batch_size: int = 1) -> None:
        """Start a fresh DynamicCache."""
        from transformers import DynamicCache

        self._cache = DynamicCache(config=self.model.config)
        self._len, self._batch = 0, batch_size

    def rollback(self, n: int) -> None:
        """Keep the first n positions: DynamicCache.crop(n - cache_len) drops the tail."""
        if not 0 <= n <= self._len:
            raise ValueError(f"rollback length must be in [0, {self._len}]; got {n}")
        if n < self._len:
            if not getattr(self._cache, "is_croppable", True):
                raise ValueError("this model's cache cannot be cropped, so it cannot roll back")
            self._cache.crop(n - self._len)
        self._len = n

    @torch.inference_mode()
    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits (B, T, V_shared) float32 for idx (B, T) at positions cache_len..cache_len+T-1."""
        B, T = idx.shape
        if self._cache is None or (B != self._batch and self._len == 0):
            self.reset(B)
        if self._len + T > self.max_seq_len:
            raise ValueError(
                f"sequence would reach {self._len + T} positions; this model's context is {self.max_seq_len}"
            )
        pos = torch.arange(self._len, self._len + T, device=idx.device)
        out = self.model(
            input_ids=idx,
            past_key_values=self._cache,
            use_cache=True,
            position_ids=pos[None].expand(B, T),
            cache_position=pos,
        )
        self._len += T
        return out.logits[..., : self.vocab_size].float()  # (B, T, V_shared)

    __call__ = forward


@dataclass
class HFPair:
    """Target and draft sharing one tokenizer."""

    target: HFCausalLM
    draft: HFCausalLM
    tokenizer: Any
    vocab_size: int
    dtype: torch.dtype
    names: tuple[str, str]


def pick_dtype(device: torch.device, dtype: str | torch.dtype | None = None) -> torch.dtype:
    """bf16 on CUDA, float32 on CPU, unless given."""
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype in (None, "auto"):
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    table = {
        "float32": torch.float32,
        "fp32": torch.float32,
        "bfloat16": torch.bfloat16,
        "bf16": torch.bfloat16,
        "float16": torch.float16,
        "fp16": torch.float16,
    }
    if dtype not in table:
        raise ValueError(f"dtype must be one of {sorted(table)} or 'auto'; got {dtype!r}")
    return table[dtype]


def _load_model(transformers, name: str, device: torch.device, dtype: torch.dtype):
    """AutoModelForCausalLM from safetensors only, no remote code."""
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(
            name, dtype=dtype, use_safetensors=True, trust_remote_code=False
        )
    except (OSError, ValueError) as exc:
        raise HFUnavailable(
            f"cannot load {name!r} as a causal LM from safetensors ({type(exc).__name__}: {exc}). Pass a local "
            "folder holding config.json and model.safetensors, or a hub id already in the local cache."
        ) from exc
    return model.to(device).eval().requires_grad_(False)


def load_hf_pair(
    target: str,
    draft: str,
    device: str | torch.device = "auto",
    dtype: str | torch.dtype | None = None,
    max_seq_len: int | None = None,
) -> HFPair:
    """Load a target and a draft (local paths or hub ids) that share a tokenizer, for gpu_demo's decoder."""
    transformers = require_transformers()
    dev = resolve_device(device)
    dt = pick_dtype(dev, dtype)
    try:
        t_tok = transformers.AutoTokenizer.from_pretrained(target, trust_remote_code=False)
        d_tok = transformers.AutoTokenizer.from_pretrained(draft, trust_remote_code=False)
    except (OSError, ValueError) as exc:
        raise HFUnavailable(f"cannot load the tokenizers of {target!r} / {draft!r}: {exc}") from exc
    n_tok = check_same_tokenizer(t_tok, d_tok)
    t_model = _load_model(transformers, target, dev, dt)
    d_model = _load_model(transformers, draft, dev, dt)
    vt, vd = t_model.get_output_embeddings().weight.shape[0], d_model.get_output_embeddings().weight.shape[0]
    shared = min(vt, vd)
    if shared < n_tok:
        raise TokenizerMismatch(
            f"the models score {vt} (target) and {vd} (draft) ids but the tokenizer has {n_tok} tokens"
        )
    return HFPair(
        target=HFCausalLM(t_model, shared, max_seq_len),
        draft=HFCausalLM(d_model, shared, max_seq_len),
        tokenizer=t_tok,
        vocab_size=shared,
        dtype=dt,
        names=(target, draft),
    )


class HFTokenizer:
    """gpu_demo's Tokenizer protocol over a transformers tokenizer."""

    def __init__(self, tok: Any, vocab_size: int) -> None:
        self.tok = tok
        self.vocab_size = vocab_size

    def encode(self, text: str) -> list[int]:
        """Token ids of text, without added special tokens."""
        return list(self.tok.encode(text, add_special_tokens=False))

    def decode(self, ids: list[int] | tuple[int, ...]) -> str:
        """Text of ids."""
        return self.tok.decode(list(ids))

    def piece(self, token_id: int) -> str:
        """Display text of one token."""
        return self.tok.decode([int(token_id)])


def load_pair(
    device: torch.device,
    target: str | None = None,
    draft: str | None = None,
    dtype: str | torch.dtype | None = None,
    max_len: int | None = None,
):
    """Registry loader for pair 'hf': target and draft ids/paths come from the command line or config only."""
    from gpu_demo.drafters import ModelDrafter
    from gpu_demo.pairs import Pair

    if not target or not draft:
        raise ValueError("pair 'hf' needs a target and a draft: --hf-target PATH_OR_ID --hf-draft PATH_OR_ID")
    pair = load_hf_pair(target, draft, device=device, dtype=dtype, max_seq_len=max_len)
    eos = pair.tokenizer.eos_token_id
    info = {
        "target": target,
        "draft": draft,
        "dtype": str(pair.dtype).replace("torch.", ""),
        "vocab": pair.vocab_size,
        "context": pair.target.max_seq_len,
        "license": LICENSE_NOTE,
        "stop_tokens": [eos] if eos is not None else [],
    }
    return Pair(
        "hf",
        pair.target,
        ModelDrafter(pair.draft, f"HF draft {draft}"),
        HFTokenizer(pair.tokenizer, pair.vocab_size),
        torch.device(device),
        info,
    )
