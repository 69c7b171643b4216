"""What the decoder needs from a model, and the one static cache that every built-in model uses.

Every target and draft plugged into ``gpu_demo.decode`` implements :class:`DecoderLM`:

* ``forward(idx)`` with ``idx`` a LongTensor ``(B, T)`` of *new* tokens returns logits ``(B, T, V)``
  and appends those T positions to the cache at absolute positions ``cache_len .. cache_len + T - 1``
  (the causal mask is aligned to that offset: query i sees keys ``0 .. cache_len + i``);
* ``cache_len`` is the number of positions held; ``rollback(n)`` truncates to the first n in O(1);
* ``reset(batch_size=1)`` empties the cache (and reallocates it if the batch size changes);
* ``vocab_size``, ``max_seq_len`` and ``device`` describe the model.

:class:`StaticCache` owns the preallocated buffers, their capacity and batch checks, ``rollback(n)`` and
``reset``, in the spirit of gpt-fast's ``KVCache``; :class:`KVCache` holds per-layer keys and values,
:class:`TokenHistory` the token window of an MLP draft. A model holds one in ``self.cache`` and gets
``cache_len``, ``rollback`` and ``reset`` from :class:`CachedDecoder`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import torch


@runtime_checkable
class DecoderLM(Protocol):
    """What the decoder needs from a model: incremental forward over a KV cache that can roll back."""

    vocab_size: int
    max_seq_len: int

    @property
    def device(self) -> torch.device:
        """Device holding the weights and the cache."""
        ...

    @property
    def cache_len(self) -> int:
        """Number of positions currently held in the KV cache (the committed prefix)."""
        ...

    def reset(self, batch_size: int = 1) -> None:
        """Empty the cache (cache_len = 0), reallocating it for ``batch_size`` sequences if needed."""
        ...

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        """Logits (B, T, V) for T new tokens (B, T) appended at positions cache_len..cache_len+T-1."""
        ...

    def rollback(self, n: int) -> None:
        """Truncate the cache to its first n positions, 0 <= n <= cache_len, in O(1)."""
        ...


@runtime_checkable
class Tokenizer(Protocol):
    """Text <-> token ids. ``encode`` raises ValueError naming any characters it cannot represent."""

    vocab_size: int

    def encode(self, text: str) -> list[int]:
        """Token ids for text."""
        ...

    def decode(self, ids: list[int] | tuple[int, ...]) -> str:
        """Text for token ids."""
        ...

    def piece(self, token_id: int) -> str:
        """Display text of one token (for coloured output and top-5 tables)."""
        ...


class StaticCache:
    """A preallocated cache of ``capacity`` positions for ``batch`` sequences, of which ``length`` are committed.

    Rolling back only moves ``length``: the stale tail is overwritten by the next write. Every check runs
    before anything changes, so a refused write leaves the cache exactly as it was.
    """

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"cache capacity must be at least 1; got {capacity}")
        self.capacity = capacity
        self.batch = 0  # 0 = not allocated yet
        self.length = 0
        self.device: torch.device | None = None
        self.dtype: torch.dtype | None = None

    def _allocate(self, batch: int, device: torch.device, dtype: torch.dtype) -> None:
        """Create the buffers for `batch` sequences (subclasses)."""
        raise NotImplementedError

    def reset(self, batch: int, device: torch.device, dtype: torch.dtype) -> None:
        """Empty the cache; reallocate only when the batch size, device or dtype changes."""
        if (batch, device, dtype) != (self.batch, self.device, self.dtype):
            with torch.inference_mode(False):  # normal tensors: usable inside and outside inference mode
                self._allocate(batch, device, dtype)
            self.batch, self.device, self.dtype = batch, device, dtype
        self.length = 0

    def reserve(self, batch: int, t_new: int, device: torch.device, dtype: torch.dtype) -> int:
        """Check that t_new positions for `batch` sequences fit and return their start (= length).

        An empty cache adopts the new batch size; a non-empty one refuses a different batch size.
        """
        if self.length and batch != self.batch:
            raise ValueError(f"batch size changed from {self.batch} to {batch} with a non-empty cache; reset() first")
        if self.length + t_new > self.capacity:
            raise ValueError(
                f"sequence would reach {self.length + t_new} positions; this model's cache holds {self.capacity}"
            )
        if (batch, device, dtype) != (self.batch, self.device, self.dtype):
            self.reset(batch, device, dtype)
        return self.length

    def advance(self, t_new: int) -> None:
        """Commit t_new positions just written."""
        self.length += t_new

    def rollback(self, n: int) -> None:
        """Keep the first n positions, 0 <= n <= length, in O(1)."""
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= self.length:
            raise ValueError(f"rollback length must be an integer in [0, {self.length}]; got {n!r}")
        self.length = n

    def keep(self, start: int, slots: list[int]) -> None:
        """Keep positions 0..start-1, then the entries at `slots` (increasing, each >= start) moved to
        start..start+len(slots)-1: a token tree's accepted path, compacted. keep(n, []) is rollback(n)."""
        m = len(slots)
        if not 0 <= start <= self.length or any(not start + i <= s < self.length for i, s in enumerate(slots)) \
                or any(a >= b for a, b in zip(slots, slots[1:])):
            raise ValueError(f"keep needs 0 <= start <= {self.length} and increasing slots in [start, {self.length}); "
                             f"got start {start!r}, slots {slots!r}")
        if slots != list(range(start, start + m)):  # a contiguous path is already in place
            self._gather(start, torch.tensor(slots, dtype=torch.long, device=self.device))
        self.length = start + m

    def _gather(self, start: int, slots: torch.Tensor) -> None:
        """Copy the entries at slots (m,) to start..start+m-1 (subclasses)."""
        raise NotImplementedError


class KVCache(StaticCache):
    """Keys and values of every layer: ``k[i]``, ``v[i]`` of shape (B, n_heads, capacity, head_dim)."""

    def __init__(self, n_layers: int, n_heads: int, head_dim: int, capacity: int) -> None:
        super().__init__(capacity)
        self.n_layers, self.n_heads, self.head_dim = n_layers, n_heads, head_dim
        self.k: list[torch.Tensor] = []
        self.v: list[torch.Tensor] = []

    def _allocate(self, batch: int, device: torch.device, dtype: torch.dtype) -> None:
        """Zeroed (B, n_heads, capacity, head_dim) buffers per layer."""
        shape = (batch, self.n_heads, self.capacity, self.head_dim)
        self.k = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(self.n_layers)]
        self.v = [torch.zeros(shape, device=device, dtype=dtype) for _ in range(self.n_layers)]

    def _gather(self, start: int, slots: torch.Tensor) -> None:
        """Every layer's keys and values at slots (m,) copied to start..start+m-1 (index_select copies first)."""
        for buf in (*self.k, *self.v):
            buf[:, :, start : start + slots.numel()] = buf.index_select(2, slots)  # (B, nh, m, hd)

    def keys(self, layer: int) -> torch.Tensor:
        """Committed keys of one layer: (B, n_heads, length, head_dim) (a view)."""
        return self.k[layer][:, :, : self.length]

    def values(self, layer: int) -> torch.Tensor:
        """Committed values of one layer: (B, n_heads, length, head_dim) (a view)."""
        return self.v[layer][:, :, : self.length]


class TokenHistory(StaticCache):
    """The token ids seen so far, after ``window`` padding slots: ``ids`` of shape (B, window + capacity)."""

    def __init__(self, window: int, pad_id: int, capacity: int) -> None:
        super().__init__(capacity)
        self.window, self.pad_id = window, pad_id
        self.ids = torch.empty(0, dtype=torch.long)

    def _allocate(self, batch: int, device: torch.device, dtype: torch.dtype) -> None:
        """(B, window + capacity) filled with the padding id (dtype is ignored: ids are long)."""
        self.ids = torch.full((batch, self.window + self.capacity), self.pad_id, dtype=torch.long, device=device)

    def _gather(self, start: int, slots: torch.Tensor) -> None:
        """The ids at slots (m,) copied to start..start+m-1 (after the window's padding slots)."""
        w = self.window
        self.ids[:, w + start : w + start + slots.numel()] = self.ids.index_select(1, slots + w)  # (B, m)


class CachedDecoder:
    """``cache_len``, ``rollback`` and ``reset`` of a model that keeps its cache in ``self.cache``."""

    cache: StaticCache

    @property
    def cache_len(self) -> int:
        """Positions held in the cache."""
        return self.cache.length

    def rollback(self, n: int) -> None:
        """Keep the first n cached positions, 0 <= n <= cache_len, in O(1)."""
        self.cache.rollback(n)

    def keep(self, start: int, slots: list[int]) -> None:
        """Keep positions 0..start-1 and the cached entries at slots, moved to start.. (a tree's accepted path)."""
        self.cache.keep(start, slots)

    def reset(self, batch_size: int = 1) -> None:
        """Empty the cache, reallocating it when the batch size, device or dtype changed."""
        self.cache.reset(batch_size, self.device, self.dtype)  # type: ignore[attr-defined]

    def num_params(self) -> int:
        """Number of parameters (tied weights counted once)."""
        return sum(p.numel() for p in self.parameters())  # type: ignore[attr-defined]


def causal_mask_at_offset(start: int, t_new: int, device: torch.device) -> torch.Tensor:
    """Boolean mask (T_new, start + T_new): query i (absolute position start+i) sees keys j <= start+i."""
    q_pos = torch.arange(start, start + t_new, device=device)[:, None]  # (T, 1)
    k_pos = torch.arange(start + t_new, device=device)[None, :]  # (1, S)
    return k_pos <= q_pos  # (T, S)


def causal_bias_at_offset(start: int, t_new: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """Additive mask (T_new, start + T_new): 0 where key j <= start + i, -inf after (the same rule as above).

    Built once per forward and shared by every layer, so attention does not convert a boolean mask
    in each layer (on a CPU that conversion costs more than the attention over a few new tokens).
    """
    mask = torch.zeros(t_new, start + t_new, device=device, dtype=dtype)  # (T, S)
    return mask.masked_fill_(~causal_mask_at_offset(start, t_new, device), float("-inf"))


def tree_bias_at_offset(start: int, tree_mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Additive mask (T, start + T) for T new tokens at start..: tree_mask (T, S) says which of the last S keys
    (S <= start + T, the new tokens last) query i sees; every earlier key (the committed prefix) is seen by all."""
    t_new, s = tree_mask.shape
    bias = torch.zeros(t_new, start + t_new, device=tree_mask.device, dtype=dtype)  # (T, start+T)
    bias[:, start + t_new - s :].masked_fill_(~tree_mask, float("-inf"))
    return bias
