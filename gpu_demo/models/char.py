"""The built-in character-level pair: its tokenizer, a nanoGPT-style transformer, and a window-MLP draft.

:class:`CharTransformer` is a pre-LayerNorm transformer with learned absolute positions and a static
:class:`~gpu_demo.models.base.KVCache`; :class:`WindowMLP` keeps its token history in a
:class:`~gpu_demo.models.base.TokenHistory`. ``forward_train`` is the cache-free full-sequence path used for
training and for the "fresh full forward" reference in the cache tests.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from gpu_demo.models.base import CachedDecoder, KVCache, TokenHistory, causal_bias_at_offset, tree_bias_at_offset


class CharTokenizer:
    """One token per character of a fixed alphabet (the built-in pair's vocabulary)."""

    def __init__(self, chars: str) -> None:
        if len(set(chars)) != len(chars):
            raise ValueError("the alphabet has repeated characters")
        self.chars = chars
        self.vocab_size = len(chars)
        self._index = {ch: i for i, ch in enumerate(chars)}

    @classmethod
    def from_text(cls, text: str) -> CharTokenizer:
        """The alphabet of every character occurring in text, sorted by code point."""
        return cls("".join(sorted(set(text))))

    def encode(self, text: str) -> list[int]:
        """One id per character; ValueError listing every character outside the alphabet."""
        try:
            return [self._index[ch] for ch in text]
        except KeyError:
            bad = sorted({ch for ch in text if ch not in self._index})
            shown = ", ".join(repr(ch) for ch in bad[:20]) + (" ..." if len(bad) > 20 else "")
            raise ValueError(
                f"this model does not know {len(bad)} character(s) in the prompt: {shown}. "
                f"It knows only these {self.vocab_size}: {self.describe_alphabet()}"
            ) from None

    def describe_alphabet(self) -> str:
        """The alphabet, compactly: runs like A-Z written as ranges, whitespace named."""
        names = {"\n": "newline", " ": "space", "\t": "tab"}
        parts, chars, i = [], sorted(self.chars), 0
        while i < len(chars):
            j = i
            while (
                j + 1 < len(chars)
                and ord(chars[j + 1]) == ord(chars[j]) + 1
                and chars[j + 1].isalnum()
                and chars[j].isalnum()
            ):
                j += 1
            parts.append(f"{chars[i]}-{chars[j]}" if j - i >= 2 else "".join(chars[i : j + 1]))
            i = j + 1
        named = [names[c] for c in self.chars if c in names]
        return " ".join(named + [p for p in parts if p not in names])

    def decode(self, ids: list[int] | tuple[int, ...]) -> str:
        """Concatenated characters of ids."""
        return "".join(self.chars[i] for i in ids)

    def piece(self, token_id: int) -> str:
        """The character of one id."""
        return self.chars[token_id]


@dataclass(frozen=True)
class CharConfig:
    """Shape of a :class:`CharTransformer`."""

    vocab_size: int
    n_layer: int = 4
    n_head: int = 4
    d_model: int = 256
    max_seq_len: int = 512
    mlp_ratio: int = 4

    def to_json(self) -> str:
        """JSON text of the config (committed beside the weights)."""
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CharConfig:
        """Inverse of :meth:`to_json`."""
        return cls(**json.loads(text))


class Block(nn.Module):
    """Pre-LN transformer block: x + attn(ln1 x), then + mlp(ln2 x). Functional calls keep overhead low."""

    def __init__(self, cfg: CharConfig) -> None:
        super().__init__()
        d = cfg.d_model
        self.n_head = cfg.n_head
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, cfg.mlp_ratio * d)
        self.out = nn.Linear(cfg.mlp_ratio * d, d)

    def _qkv(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Split heads: three (B, nh, T, hs) tensors from x (B, T, d)."""
        B, T, d = x.shape
        h = F.layer_norm(x, (d,), self.ln1.weight, self.ln1.bias)
        qkv = F.linear(h, self.qkv.weight, self.qkv.bias)  # (B, T, 3d)
        qkv = qkv.view(B, T, 3, self.n_head, d // self.n_head).permute(2, 0, 3, 1, 4)  # (3, B, nh, T, hs)
        return qkv[0], qkv[1], qkv[2]

    def _finish(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Residual after attention output y (B, nh, T, hs), then the MLP."""
        B, T, d = x.shape
        y = y.transpose(1, 2).reshape(B, T, d)  # (B, T, d)
        x = x + F.linear(y, self.proj.weight, self.proj.bias)
        h = F.layer_norm(x, (d,), self.ln2.weight, self.ln2.bias)
        h = F.gelu(F.linear(h, self.fc.weight, self.fc.bias), approximate="tanh")  # (B, T, 4d)
        return x + F.linear(h, self.out.weight, self.out.bias)

    def forward_train(self, x: torch.Tensor) -> torch.Tensor:
        """Full causal self-attention from position 0 (T_q == T_k, so is_causal is aligned)."""
        q, k, v = self._qkv(x)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, nh, T, hs)
        return self._finish(x, y)

    def forward_cached(
        self,
        x: torch.Tensor,
        k_cache: torch.Tensor,
        v_cache: torch.Tensor,
        start: int,
        mask: torch.Tensor | None,
    ) -> torch.Tensor:
        """Write this block's k, v at positions start..start+T-1 of the cache, attend over 0..start+T-1."""
        q, k, v = self._qkv(x)  # (B, nh, T, hs)
        end = start + x.shape[1]
        k_cache[:, :, start:end] = k
        v_cache[:, :, start:end] = v
        y = F.scaled_dot_product_attention(q, k_cache[:, :, :end], v_cache[:, :, :end], attn_mask=mask)
        return self._finish(x, y)


class CharTransformer(CachedDecoder, nn.Module):
    """Character-level decoder-only transformer with a static KV cache (implements DecoderLM)."""

    def __init__(self, cfg: CharConfig) -> None:
        super().__init__()
        if cfg.d_model % cfg.n_head:
            raise ValueError(f"d_model ({cfg.d_model}) must be a multiple of n_head ({cfg.n_head})")
        self.cfg = cfg
        self.vocab_size = cfg.vocab_size
        self.max_seq_len = cfg.max_seq_len
        self.tok_emb = nn.Embedding(cfg.vocab_size, cfg.d_model)
        self.pos_emb = nn.Embedding(cfg.max_seq_len, cfg.d_model)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab_size, bias=False)
        self.cache = KVCache(cfg.n_layer, cfg.n_head, cfg.d_model // cfg.n_head, cfg.max_seq_len)
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # GPT-2 scaled init of residual projections
            if name.endswith("proj.weight") or name.endswith("out.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init_weights(m: nn.Module) -> None:
        """N(0, 0.02) weights, zero biases."""
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    @property
    def device(self) -> torch.device:
        """Device of the weights (the cache follows it)."""
        return self.tok_emb.weight.device

    @property
    def dtype(self) -> torch.dtype:
        """Weight dtype (the cache uses it too)."""
        return self.tok_emb.weight.dtype

    def forward(
        self, idx: torch.Tensor, positions: torch.Tensor | None = None, tree_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Logits (B, T, V) for new tokens idx (B, T) at positions cache_len..cache_len+T-1; appends to cache.

        A token tree passes positions (T,) (absolute, for the position embedding) and tree_mask (T, S): which of
        the last S cached keys each new token sees (see base.tree_bias_at_offset); the slots stay cache_len...
        """
        B, T = idx.shape
        start = self.cache.reserve(B, T, self.device, self.dtype)
        pos = self.pos_emb.weight[start : start + T] if positions is None else self.pos_emb(positions)  # (T, d)
        x = self.tok_emb(idx) + pos  # (B, T, d)
        if tree_mask is not None:
            mask = tree_bias_at_offset(start, tree_mask, x.dtype)  # (T, start+T)
        else:
            mask = None if T == 1 else causal_bias_at_offset(start, T, idx.device, x.dtype)  # (T, start+T)
        for blk, kc, vc in zip(self.blocks, self.cache.k, self.cache.v):
            x = blk.forward_cached(x, kc, vc, start, mask)
        self.cache.advance(T)
        x = F.layer_norm(x, (self.cfg.d_model,), self.ln_f.weight, self.ln_f.bias)
        return F.linear(x, self.head.weight)  # (B, T, V)

    def forward_train(self, idx: torch.Tensor) -> torch.Tensor:
        """Cache-free logits (B, T, V) for a full sequence starting at position 0 (training, reference)."""
        B, T = idx.shape
        if T > self.max_seq_len:
            raise ValueError(f"sequence length {T} exceeds this model's context {self.max_seq_len}")
        x = self.tok_emb(idx) + self.pos_emb.weight[:T]  # (B, T, d)
        for blk in self.blocks:
            x = blk.forward_train(x)
        x = F.layer_norm(x, (self.cfg.d_model,), self.ln_f.weight, self.ln_f.bias)
        return F.linear(x, self.head.weight)  # (B, T, V)


@dataclass(frozen=True)
class WindowConfig:
    """Shape of a :class:`WindowMLP` draft: an MLP over the last `window` characters' embeddings."""

    vocab_size: int
    window: int = 24
    d_emb: int = 32
    d_hidden: int = 512
    max_seq_len: int = 512


class WindowMLP(CachedDecoder, nn.Module):
    """Bengio-style window MLP draft: logits_t = W2 gelu(W1 [e(x_{t-w+1}); ...; e(x_t)]) (implements DecoderLM).

    Its "cache" is the token history, so rollback is O(1) and a decode step is ~5 tensor ops: that is
    what makes it cheap next to the transformer target on a CPU, where each op costs microseconds of
    dispatch whatever its size. Positions before the start of the text read a padding id (vocab_size).
    """

    def __init__(self, cfg: WindowConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.vocab_size = cfg.vocab_size
        self.max_seq_len = cfg.max_seq_len
        self.emb = nn.Embedding(cfg.vocab_size + 1, cfg.d_emb)  # last row = padding
        self.fc1 = nn.Linear(cfg.window * cfg.d_emb, cfg.d_hidden)
        self.fc2 = nn.Linear(cfg.d_hidden, cfg.d_hidden)
        self.head = nn.Linear(cfg.d_hidden, cfg.vocab_size)
        self.cache = TokenHistory(cfg.window, pad_id=cfg.vocab_size, capacity=cfg.max_seq_len)

    @property
    def device(self) -> torch.device:
        """Device of the weights."""
        return self.emb.weight.device

    @property
    def dtype(self) -> torch.dtype:
        """Weight dtype."""
        return self.emb.weight.dtype

    def fold(self) -> None:
        """Per window slot, table[i, x] = W1[:, iE:(i+1)E] e(x) (+ b1 in slot 0): layer 1 is a gather-sum.

        Exact algebra (b1 + sum_i W1_i e(x_i) = sum_i table[i, x_i]); used by the cached inference path only.
        """
        W, E = self.cfg.window, self.cfg.d_emb
        with torch.no_grad(), torch.inference_mode(False):
            w1 = self.fc1.weight.view(self.cfg.d_hidden, W, E)  # (H, W, E)
            table = torch.einsum("xe,hwe->wxh", self.emb.weight, w1)  # (W, V+1, H)
            table[0] += self.fc1.bias  # every window reads slot 0 exactly once: the bias rides along
            self._table = table.reshape(W * (self.cfg.vocab_size + 1), self.cfg.d_hidden).contiguous()
            self._slot_offset = torch.arange(W, device=self.device) * (self.cfg.vocab_size + 1)  # (W,)

    def _logits(self, windows: torch.Tensor, folded: bool = False) -> torch.Tensor:
        """Logits (B, T, V) from token windows (B, T, window)."""
        B, T, W = windows.shape
        if folded and getattr(self, "_table", None) is not None:
            rows = self._table.index_select(0, (windows + self._slot_offset).reshape(-1))  # (B*T*W, H)
            h = F.gelu(rows.view(B, T, W, -1).sum(2), approximate="tanh")  # (B, T, H), fc1 bias included
        else:
            h = self.emb(windows).view(B, T, W * self.cfg.d_emb)  # (B, T, W*E)
            h = F.gelu(F.linear(h, self.fc1.weight, self.fc1.bias), approximate="tanh")  # (B, T, H)
        h = h + F.gelu(F.linear(h, self.fc2.weight, self.fc2.bias), approximate="tanh")  # (B, T, H)
        return F.linear(h, self.head.weight, self.head.bias)  # (B, T, V)

    def forward(
        self, idx: torch.Tensor, positions: torch.Tensor | None = None, tree_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Logits (B, T, V) for new tokens idx (B, T) appended at positions cache_len..cache_len+T-1.

        With tree_mask (T, S) (see base.tree_bias_at_offset) each token's window is its own path: the committed
        ids, then the keys it sees in slot order (its ancestors and itself). positions is implied by the path.
        """
        B, T = idx.shape
        start, W = self.cache.reserve(B, T, self.device, self.dtype), self.cfg.window
        buf = self.cache.ids  # (B, W + capacity)
        buf[:, W + start : W + start + T] = idx
        self.cache.advance(T)
        if tree_mask is not None:
            windows = buf[:, self._path_windows(start + T, tree_mask)]  # (B, T, W)
        elif T == 1:
            windows = buf[:, start + 1 : start + 1 + W].unsqueeze(1)  # (B, 1, W)
        else:
            windows = buf[:, start + 1 : start + T + W].unfold(1, W, 1)  # (B, T, W)
        return self._logits(windows, folded=True)

    def _path_windows(self, end: int, tree_mask: torch.Tensor) -> torch.Tensor:
        """Buffer columns (T, W) of each new token's window. Row i sees m_i keys of the last S (its path, in slot
        order, at sequence positions p0..p0+m_i-1 with p0 = end - S); the window's earlier part is committed."""
        W, S = self.cfg.window, tree_mask.shape[1]
        p0 = end - S
        seen = torch.sort((~tree_mask).to(torch.int8), dim=1, stable=True).indices  # (T, S) seen offsets first
        m = tree_mask.sum(1, keepdim=True)  # (T, 1) path length within the tail
        t = p0 + m - W + torch.arange(W, device=tree_mask.device)  # (T, W) sequence positions of the window
        in_tail = seen.gather(1, (t - p0).clamp(0, S - 1)) + p0  # (T, W) slot of position t on the path
        return W + torch.where(t >= p0, in_tail, t)  # committed slot of position t is t (padding below 0)

    def forward_train(self, idx: torch.Tensor) -> torch.Tensor:
        """Cache-free logits (B, T, V) for a full sequence from position 0 (training, reference)."""
        B, T = idx.shape
        pad = torch.full((B, self.cfg.window), self.cfg.vocab_size, dtype=torch.long, device=idx.device)
        windows = torch.cat([pad, idx], dim=1)[:, 1:].unfold(1, self.cfg.window, 1)  # (B, T, W)
        return self._logits(windows)


def save_char_model(model: CharTransformer | WindowMLP, directory: Path, name: str, meta: dict) -> None:
    """Write <name>.safetensors (weights only, never pickle) and <name>.json (config + metadata)."""
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().to("cpu", torch.float32).contiguous() for k, v in model.state_dict().items()}
    save_file(tensors, str(directory / f"{name}.safetensors"))
    kind = "window" if isinstance(model, WindowMLP) else "transformer"
    doc = {"config": asdict(model.cfg), "kind": kind, **meta}
    (directory / f"{name}.json").write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")


def load_char_model(
    directory: Path, name: str, device: torch.device | str = "cpu", dtype: torch.dtype = torch.float32
) -> tuple[CharTransformer | WindowMLP | ExpertSumLM, dict]:
    """Read <name>.json and <name>.safetensors into an eval-mode model; returns (model, metadata)."""
    from gpu_demo.models.weights import load_safetensors

    meta = json.loads((directory / f"{name}.json").read_text())
    if meta.get("kind") == "window":
        model: CharTransformer | WindowMLP = WindowMLP(WindowConfig(**meta["config"]))
    else:
        model = CharTransformer(CharConfig(**meta["config"]))
    model.load_state_dict(load_safetensors(directory / f"{name}.safetensors"))
    model = model.to(device=device, dtype=dtype).eval()
    model.requires_grad_(False)
    if isinstance(model, WindowMLP):
        model.fold()
    if meta.get("expert"):  # a residual transformer over a separately stored expert
        expert, _ = load_char_model(directory, meta["expert"], device, dtype)
        model = ExpertSumLM(model, expert).eval()  # type: ignore[arg-type]
    model.reset(1)
    return model, meta


class ExpertSumLM(nn.Module):
    """logits = transformer(x) + expert(x): a transformer that learns a residual over a local expert.

    The built-in target: a CharTransformer trained on top of a frozen WindowMLP (the draft's weights),
    so the transformer spends its capacity on what the 24-character window cannot see. Both parts keep
    their own caches; forward, rollback and reset act on both (implements DecoderLM).
    """

    def __init__(self, transformer: CharTransformer, expert: WindowMLP) -> None:
        super().__init__()
        if transformer.vocab_size != expert.vocab_size:
            raise ValueError("transformer and expert must share one vocabulary")
        self.transformer = transformer
        self.expert = expert
        self.vocab_size = transformer.vocab_size
        self.max_seq_len = min(transformer.max_seq_len, expert.max_seq_len)

    @property
    def device(self) -> torch.device:
        """Device of the weights."""
        return self.transformer.device

    @property
    def cache_len(self) -> int:
        """Positions held (the same in both parts)."""
        return self.transformer.cache_len

    def num_params(self) -> int:
        """Parameters of both parts."""
        return self.transformer.num_params() + self.expert.num_params()

    def reset(self, batch_size: int = 1) -> None:
        """Empty both caches."""
        self.transformer.reset(batch_size)
        self.expert.reset(batch_size)

    def rollback(self, n: int) -> None:
        """Truncate both caches to n positions (O(1))."""
        self.transformer.rollback(n)
        self.expert.rollback(n)

    def keep(self, start: int, slots: list[int]) -> None:
        """Compact a tree's accepted path in both caches (see StaticCache.keep)."""
        self.transformer.keep(start, slots)
        self.expert.keep(start, slots)

    def forward(
        self, idx: torch.Tensor, positions: torch.Tensor | None = None, tree_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Logits (B, T, V) of the sum, appended at positions cache_len..cache_len+T-1 in both parts (a tree's
        positions and tree_mask go to both)."""
        return self.transformer.forward(idx, positions, tree_mask) + self.expert.forward(idx, positions, tree_mask)

    def forward_train(self, idx: torch.Tensor) -> torch.Tensor:
        """Cache-free logits (B, T, V) of the sum from position 0."""
        return self.transformer.forward_train(idx) + self.expert.forward_train(idx)
