"""A Llama-style decoder (SmolLM2's shape) with a preallocated KV cache that rolls back in O(1).

RMSNorm, rotary position embedding in GGUF's q/k layout (adjacent pairs (2i, 2i+1) rotate together,
which is what llama.cpp's converter produces by permuting Hugging Face's half-split rows),
grouped-query attention, a SwiGLU feed-forward and an output head tied to the token embedding.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn.functional as F
from torch import nn

from gpu_demo.models.base import CachedDecoder, KVCache, causal_bias_at_offset, tree_bias_at_offset
from gpu_demo.models.llama_step import PLAN_FORMATS, StepPlan, build_plan, rms_norm, step_tokens
from gpu_demo.models.ort_step import OrtStep, build_ort_step
from gpu_demo.models.packed import (
    PACK_MIN_ROWS,
    PackedLinear,
    pack_linears,
    packed_linear,
    packing_available,
    unpack_linears,
)
from gpu_demo.models.quant import ROWWISE_FORMATS, QuantLinear, dequantize_linears, fused, quantize_linears


@dataclass(frozen=True)
class LlamaConfig:
    """Shape of a Llama-style decoder; the defaults are SmolLM2-135M's."""

    vocab_size: int = 49152
    dim: int = 576
    n_layers: int = 30
    n_heads: int = 9
    n_kv_heads: int = 3
    hidden_dim: int = 1536
    norm_eps: float = 1e-5
    rope_base: float = 100000.0
    max_seq_len: int = 8192  # the model's trained context
    tie_embeddings: bool = True
    n_out: int = 0  # > 0: the head scores only these many token ids (buffer out_ids); others get -inf

    @property
    def head_dim(self) -> int:
        """dim / n_heads."""
        return self.dim // self.n_heads

    def to_dict(self) -> dict:
        """Plain dict (JSON-serialisable)."""
        return asdict(self)

    def __post_init__(self) -> None:
        if self.n_out and self.tie_embeddings:
            raise ValueError("a sub-vocabulary head (n_out > 0) cannot be tied to the embedding")
        if self.dim % self.n_heads or self.n_heads % self.n_kv_heads or self.head_dim % 2:
            raise ValueError(
                "dim must be divisible by n_heads, n_heads by n_kv_heads, and head_dim must be even; "
                f"got dim={self.dim}, n_heads={self.n_heads}, n_kv_heads={self.n_kv_heads}"
            )


class RMSNorm(nn.Module):
    """y = x / sqrt(mean(x^2) + eps) * w, computed in float32."""

    def __init__(self, dim: int, eps: float) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """In float32 (llama_step.rms_norm: F.rms_norm's ops, bit for bit, at half its cost on a CPU decode step)."""
        return rms_norm(x.float(), self.weight.float(), self.eps).to(x.dtype)


def rope_tables(head_dim: int, length: int, base: float, device=None) -> tuple[torch.Tensor, torch.Tensor]:
    """cos, sin of angle t * base^(-2i/d) for t < length, i < d/2; each (length, d/2), float32."""
    inv_freq = base ** (-torch.arange(0, head_dim, 2, dtype=torch.float64, device=device) / head_dim)
    angles = torch.arange(length, dtype=torch.float64, device=device)[:, None] * inv_freq[None, :]
    return torch.cos(angles).float(), torch.sin(angles).float()


def apply_rope_pairs(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate adjacent pairs: (x0, x1) -> (x0 cos - x1 sin, x0 sin + x1 cos). x (B, H, T, D); cos (T, D/2)."""
    B, H, T, D = x.shape
    xc = torch.view_as_complex(x.float().reshape(B, H, T, D // 2, 2))  # (B, H, T, D/2): x0 + i x1
    return torch.view_as_real(xc * torch.complex(cos, sin)).reshape(B, H, T, D).to(x.dtype)  # (x0 + i x1) e^{i t}


class Attention(nn.Module):
    """Grouped-query attention that writes its keys and values into a shared preallocated cache."""

    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        hd = cfg.head_dim
        self.n_heads, self.n_kv_heads, self.head_dim = cfg.n_heads, cfg.n_kv_heads, hd
        self.wq = nn.Linear(cfg.dim, cfg.n_heads * hd, bias=False)
        self.wk = nn.Linear(cfg.dim, cfg.n_kv_heads * hd, bias=False)
        self.wv = nn.Linear(cfg.dim, cfg.n_kv_heads * hd, bias=False)
        self.wo = nn.Linear(cfg.n_heads * hd, cfg.dim, bias=False)
        self.qkv: tuple[QuantLinear, ...] = ()  # (W = [wq; wk; wv] quantised,) on a quantised CPU target

    def forward(
        self,
        x: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        start: int,
        cos: torch.Tensor,
        sin: torch.Tensor,
        mask: torch.Tensor | None,
    ) -> torch.Tensor:
        """x (B, T, C) at positions start..start+T-1 -> (B, T, C); fills cache[:, :, start:start+T]."""
        B, T, _ = x.shape
        q, k, v = self._qkv_rotated(x, cos, sin)  # (B, nh, T, hd), (B, nkv, T, hd) x2
        cache_k[:B, :, start : start + T] = k
        cache_v[:B, :, start : start + T] = v
        return self._attend(q, cache_k[:B, :, : start + T], cache_v[:B, :, : start + T], mask)

    def forward_at(
        self,
        x: torch.Tensor,
        cache_k: torch.Tensor,
        cache_v: torch.Tensor,
        slots: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        bias: torch.Tensor | None,
        kv_len: int | None,
    ) -> torch.Tensor:
        """x (B, T, C) -> (B, T, C) with every position a device tensor: k, v go to cache slots (T,) in place
        (index_copy_), and attention reads the first kv_len keys, or the whole cache (None: a fixed shape, so one
        captured graph serves every position) under bias (T, kv_len or capacity)."""
        B = x.shape[0]
        q, k, v = self._qkv_rotated(x, cos, sin)  # (B, nh, T, hd), (B, nkv, T, hd) x2
        cache_k[:B].index_copy_(2, slots, k)
        cache_v[:B].index_copy_(2, slots, v)
        if kv_len is None:
            return self._attend(q, cache_k[:B], cache_v[:B], bias)
        return self._attend(q, cache_k[:B, :, :kv_len], cache_v[:B, :, :kv_len], bias)

    def _attend(self, q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                mask: torch.Tensor | None) -> torch.Tensor:
        """softmax(q k^T / sqrt(d) + mask) v over keys (B, nkv, S, hd) for q (B, nh, T, hd), then wo: (B, T, C)."""
        B, _, T, _ = q.shape
        y = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, enable_gqa=True)  # (B, nh, T, hd)
        return self.wo(y.transpose(1, 2).reshape(B, T, self.n_heads * self.head_dim))

    def _qkv_rotated(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """x (B, T, C) -> RoPE(q) (B, nh, T, hd), RoPE(k), v (B, nkv, T, hd): one fused map and one rotation
        where the target is quantised (a decode step is many small calls on a CPU), three maps otherwise."""
        B, T, _ = x.shape
        nh, nkv, hd = self.n_heads, self.n_kv_heads, self.head_dim
        if self.qkv and self.qkv[0].use_quant(x):
            qkv = self.qkv[0](x).view(B, T, nh + 2 * nkv, hd).transpose(1, 2)  # (B, nh + 2 nkv, T, hd)
            qk = apply_rope_pairs(qkv[:, : nh + nkv], cos, sin)  # (B, nh + nkv, T, hd)
            return qk[:, :nh], qk[:, nh:], qkv[:, nh + nkv :]
        q = self.wq(x).view(B, T, nh, hd).transpose(1, 2)  # (B, nh, T, hd)
        k = self.wk(x).view(B, T, nkv, hd).transpose(1, 2)  # (B, nkv, T, hd)
        v = self.wv(x).view(B, T, nkv, hd).transpose(1, 2)  # (B, nkv, T, hd)
        return apply_rope_pairs(q, cos, sin), apply_rope_pairs(k, cos, sin), v


class FeedForward(nn.Module):
    """SwiGLU: w2(silu(w1 x) * w3 x)."""

    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.w1 = nn.Linear(cfg.dim, cfg.hidden_dim, bias=False)  # gate
        self.w3 = nn.Linear(cfg.dim, cfg.hidden_dim, bias=False)  # up
        self.w2 = nn.Linear(cfg.hidden_dim, cfg.dim, bias=False)  # down
        self.gate_up: tuple[QuantLinear, ...] = ()  # (W = [w1; w3] quantised,) on a quantised CPU target

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (B, T, C) -> (B, T, C); gate and up as one fused map where the target is quantised."""
        if self.gate_up and self.gate_up[0].use_quant(x):
            g, u = self.gate_up[0](x).chunk(2, dim=-1)  # (B, T, H) each
            return self.w2(F.silu(g) * u)
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    """Pre-norm residual block: x + attn(norm(x)), then + ffn(norm(x))."""

    def __init__(self, cfg: LlamaConfig) -> None:
        super().__init__()
        self.attention_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.attention = Attention(cfg)
        self.ffn_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.feed_forward = FeedForward(cfg)

    def forward(self, x, cache_k, cache_v, start, cos, sin, mask) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), cache_k, cache_v, start, cos, sin, mask)
        return x + self.feed_forward(self.ffn_norm(x))

    def forward_at(self, x, cache_k, cache_v, slots, cos, sin, bias, kv_len) -> torch.Tensor:
        """forward with positions as device tensors (Attention.forward_at)."""
        x = x + self.attention.forward_at(self.attention_norm(x), cache_k, cache_v, slots, cos, sin, bias, kv_len)
        return x + self.feed_forward(self.ffn_norm(x))


class Llama(CachedDecoder, nn.Module):
    """Decoder-only Llama with a static KV cache (implements gpu_demo.models.base.DecoderLM).

    forward over T new tokens returns logits for all T; the cache holds `cache_len` committed
    positions out of `max_seq_len` preallocated, and `rollback(n)` keeps the first n in O(1)
    (later positions are simply overwritten by the next forward).
    """

    def __init__(self, cfg: LlamaConfig, max_len: int = 2048) -> None:
        super().__init__()
        if not 1 <= max_len <= cfg.max_seq_len:
            raise ValueError(f"max_len must be in [1, {cfg.max_seq_len}]; got {max_len}")
        self.cfg = cfg
        self.vocab_size = cfg.vocab_size
        self.max_seq_len = max_len  # cache capacity (the trained context is cfg.max_seq_len)
        self.tok_embeddings = nn.Embedding(cfg.vocab_size, cfg.dim)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.output = None if cfg.tie_embeddings else nn.Linear(cfg.dim, cfg.n_out or cfg.vocab_size, bias=False)
        if cfg.n_out:
            self.register_buffer("out_ids", torch.arange(cfg.n_out))  # (n_out,) token ids the head scores
        else:
            self.out_ids = None
        self.cache = KVCache(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, max_len)
        self._cos = self._sin = None  # RoPE tables (max_len, hd/2), built on the weights' device
        self.last_hidden: torch.Tensor | None = None  # (B, T, C) last forward's pre-norm states (EAGLE)
        self._packed_head: tuple[PackedLinear, ...] = ()  # set by pack_for_cpu
        self._quant_head: tuple[QuantLinear, ...] = ()  # set by quantize_for_cpu
        self.weight_format = "float32"  # of the linear maps' inference path (quantize_for_cpu)
        self._step_plan: StepPlan | None = None  # batch-1 decode step over fp16/bf16 maps (quantize_for_cpu)
        self._ort_step: OrtStep | None = None  # batch-1 decode step as one graph over int8/int4 maps (likewise)
        self.static_steps = None  # fixed-shape steps, CUDA graphs on a GPU (gpu_demo.models.graphs.use_static_steps)

    # ------------------------------------------------------------------ properties --
    @property
    def device(self) -> torch.device:
        """Device of the weights (the cache follows it)."""
        return self.tok_embeddings.weight.device

    @property
    def dtype(self) -> torch.dtype:
        """Weight dtype (the cache uses it too)."""
        return self.tok_embeddings.weight.dtype

    def _rope(self, start: int, t_new: int) -> tuple[torch.Tensor, torch.Tensor]:
        """RoPE cos and sin (T, hd/2) for positions start..start+T-1 (tables built once per device)."""
        if self._cos is None or self._cos.device != self.device:
            self._cos, self._sin = rope_tables(self.cfg.head_dim, self.max_seq_len, self.cfg.rope_base, self.device)
        return self._cos[start : start + t_new], self._sin[start : start + t_new]

    def set_weight_layout(self, transposed: bool) -> None:
        """Keep every linear weight W (out, in) as a view of a contiguous W^T (transposed) or contiguous (not).

        Same values and the same y = x W^T; only the memory order changes, and with it the BLAS kernel a CPU
        picks for a few rows: bench/verify_cost.py measures a verify pass of T tokens in both layouts.
        """
        with torch.no_grad():
            for mod in self.modules():
                if isinstance(mod, nn.Linear):
                    w = mod.weight.t().contiguous().t() if transposed else mod.weight.contiguous()  # (out, in)
                    mod.weight = nn.Parameter(w, requires_grad=mod.weight.requires_grad)

    def pack_for_cpu(self, min_rows: int | None = PACK_MIN_ROWS) -> int:
        """Give every linear map (the tied head too) a oneDNN-packed copy used for >= min_rows rows (None: undo).

        Same y = x W^T; on a CPU the packed kernel makes a verify pass of 4-16 tokens much cheaper than the BLAS
        does (gpu_demo.models.packed, bench/verify_cost.py). Returns the number of maps packed (or unpacked).
        The packed copies are made from the weights as they are now: pack after loading, and not before training.
        """
        if min_rows is None:
            self._packed_head = ()
            return unpack_linears(self)
        if self.device.type != "cpu" or self.dtype != torch.float32 or not packing_available():
            return 0
        self.set_weight_layout(False)
        w = self.tok_embeddings.weight if self.output is None else self.output.weight
        self._packed_head = (PackedLinear(w.detach(), min_rows),)  # a tuple: not a submodule, not in the state dict
        return pack_linears(self, min_rows) + 1

    def quantize_for_cpu(self, fmt: str, q4: dict[str, tuple[torch.Tensor, ...]] | None = None) -> int:
        """Run every linear map's inference on `fmt` weights (gpu_demo.models.quant.FORMATS); returns how many.

        "float32" undoes any quantisation and packs as pack_for_cpu does. int4 takes each map's blocks (q, d, m)
        from q4 (the GGUF's own, by state-dict name) where given; the tied head, stored in the GGUF as Q8_0,
        runs int8 (the same blocks of 32) in the int8 and int4 formats, fp16 in fp16 and bf16 in bf16. The float32
        weights stay (training, state dict).
        """
        self.pack_for_cpu(None)
        dequantize_linears(self)
        self._quant_head, self.weight_format, self._step_plan, self._ort_step = (), "float32", None, None
        for layer in self.layers:
            layer.attention.qkv = layer.feed_forward.gate_up = ()
        if fmt == "float32":
            return self.pack_for_cpu()
        if self.device.type != "cpu" or self.dtype != torch.float32:
            return 0
        self.set_weight_layout(False)
        w = self.tok_embeddings.weight if self.output is None else self.output.weight
        head_fmt = fmt if fmt in PLAN_FORMATS else "int8"  # the GGUF's Q8_0 head stays 8-bit in int8 and int4
        self._quant_head = (QuantLinear(head_fmt, w.detach()),)  # a tuple: no submodule
        self.weight_format = fmt
        n = quantize_linears(self, fmt, q4) + 1
        for layer in self.layers:  # the decode path's fused maps
            a, f = layer.attention, layer.feed_forward
            a.qkv, f.gate_up = fused(fmt, [a.wq, a.wk, a.wv]), fused(fmt, [f.w1, f.w3])
        self._step_plan, self._ort_step = build_plan(self), build_ort_step(self)
        return n

    # --------------------------------------------------------------------- forward --
    def head(self, h: torch.Tensor) -> torch.Tensor:
        """Final norm and output projection (tied to the embedding by default): (B, T, C) -> (B, T, V) float32.

        With a sub-vocabulary head, ids outside out_ids get logit -inf (probability 0).
        """
        h = self.norm(h)
        w = self.tok_embeddings.weight if self.output is None else self.output.weight
        ph = self._packed_head[0] if self._packed_head else None
        if self._quant_head:
            logits = self._quant_head[0](h).float()
        else:
            logits = (packed_linear(h, ph.packed) if ph is not None and ph.use_packed(h) else F.linear(h, w)).float()
        if self.out_ids is None:
            return logits
        full = logits.new_full((*logits.shape[:-1], self.vocab_size), float("-inf"))  # (B, T, V)
        return full.index_copy_(-1, self.out_ids, logits)

    def _as_steps(self, idx: torch.Tensor) -> torch.Tensor:
        """idx (1, T) -> logits (1, T, V) computed as T single-token steps, last_hidden (1, T, C) likewise.

        Rounding activations is a step function: a last-bit difference between a batched pass and a step (the
        attention and the kernels sum in another order) can move a value a whole step, and on SmolLM2 moved
        logits by up to 1.6 (a verify pass of 4 tokens against 4 steps). A verify pass must be the steps' own
        numbers, or greedy speculative output parts from greedy autoregressive output. Each step is the one graph
        of gpu_demo.models.ort_step, as in autoregressive decoding. The first pass (the prompt) stays batched:
        both decoders make it alike.
        """
        logits, hidden = [], []
        for t in range(idx.shape[1]):
            logits.append(self(idx[:, t : t + 1]))
            hidden.append(self.last_hidden)
        self.last_hidden = torch.cat(hidden, dim=1)  # (1, T, C)
        return torch.cat(logits, dim=1)

    def forward(
        self, idx: torch.Tensor, positions: torch.Tensor | None = None, tree_mask: torch.Tensor | None = None
    ) -> torch.Tensor:
        """idx (B, T) at positions cache_len..cache_len+T-1 -> logits (B, T, V) float32; appends T to the cache.

        A token tree passes positions (T,) (absolute, for RoPE) and tree_mask (T, S) (base.tree_bias_at_offset).
        A batch-1 inference step runs as one ONNX Runtime graph on int8/int4 weights (ort_step); on fp16 and bf16 every
        batch-1 pass (a step, a verify pass of a chain or a tree) runs in fewer Python calls (llama_step). On weights
        whose kernels round the activations (quant.ROWWISE_FORMATS), a chain of T > 1 tokens after the first pass (a
        verify pass) runs as T single steps (see _as_steps); a tree or a batch there is refused.
        """
        B, T = idx.shape
        cpu_inference = self.device.type == "cpu" and self.dtype == torch.float32 and not torch.is_grad_enabled()
        if cpu_inference and B == T == 1 and positions is None and tree_mask is None and self._ort_step is not None:
            logits, self.last_hidden = self._ort_step(self, idx)  # int8/int4: the step is one graph
            return logits
        if cpu_inference and B == 1 and self._step_plan is not None:  # fp16/bf16: the general path's logits
            logits, self.last_hidden = step_tokens(self, self._step_plan, idx, positions, tree_mask)
            return logits
        if self.weight_format in ROWWISE_FORMATS and T > 1 and self.cache_len > 0:
            if tree_mask is not None or B != 1:
                raise ValueError(f"a {self.weight_format} target verifies chains of one sequence only (its verify pass "
                                 "runs as single steps to stay exact); token trees and batches need fp16, bf16 or "
                                 "float32 weights (SPECDEC_CPU_WEIGHTS)")
            if positions is None:
                return self._as_steps(idx)
        if self.static_steps is not None and not torch.is_grad_enabled():
            out = self.static_steps((idx,), positions, tree_mask)
            if out is not None:  # None: no fixed shape fits (a long prompt, the cache's end): the eager step
                logits, self.last_hidden = out
                return logits
        start = self.cache.reserve(B, T, self.device, self.dtype)
        cos, sin = self._rope(start, T)  # (T, hd/2)
        if positions is not None:
            cos, sin = self._cos[positions], self._sin[positions]  # (T, hd/2): the tables exist after _rope
        x = self.tok_embeddings(idx)  # (B, T, C)
        if tree_mask is not None:
            mask = tree_bias_at_offset(start, tree_mask, x.dtype)  # (T, start+T)
        else:
            mask = None if T == 1 else causal_bias_at_offset(start, T, idx.device, x.dtype)  # (T, start+T)
        for layer, ck, cv in zip(self.layers, self.cache.k, self.cache.v):
            x = layer(x, ck, cv, start, cos, sin, mask)
        self.cache.advance(T)
        self.last_hidden = x  # kept by reference (no copy): a feature-level draft reads it
        return self.head(x)

    def forward_at(
        self,
        idx: torch.Tensor,
        slots: torch.Tensor,
        rope_pos: torch.Tensor,
        bias: torch.Tensor | None,
        kv_len: int | None = None,
    ) -> torch.Tensor:
        """idx (B, T) -> logits (B, T, V) float32, every position a device tensor; the cache's length is not moved.

        slots (T,): the cache slots k and v are written to; rope_pos (T,): the positions their angles rotate by
        (a chain's are its slots, a tree's are depths); bias (T, kv_len or capacity) additive. kv_len None attends
        over the whole cache: one shape for every position, as a captured CUDA graph needs (gpu_demo.models.graphs).
        kv_len = start + T reads what forward reads, and gives forward's logits bit for bit (tests/test_graphs.py).
        """
        self._rope(0, 1)  # the tables, built once per device
        cos, sin = self._cos.index_select(0, rope_pos), self._sin.index_select(0, rope_pos)  # (T, hd/2)
        x = self.tok_embeddings(idx)  # (B, T, C)
        for layer, ck, cv in zip(self.layers, self.cache.k, self.cache.v):
            x = layer.forward_at(x, ck, cv, slots, cos, sin, bias, kv_len)
        self.last_hidden = x
        return self.head(x)

    def step_at(self, idx: torch.Tensor, slots: torch.Tensor, rope_pos: torch.Tensor,
                bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A fixed-shape step over the whole cache (gpu_demo.models.graphs): idx (B, T) -> logits (B, T, V) and the
        pre-norm hidden states (B, T, C)."""
        logits = self.forward_at(idx, slots, rope_pos, bias)
        return logits, self.last_hidden

    def trunk(self, x: torch.Tensor, taps: dict[int, torch.Tensor] | None = None) -> torch.Tensor:
        """Cache-free causal stack over embeddings x (B, T, C) at positions 0..T-1 -> hidden (B, T, C), pre-norm.

        taps {i: None, ...} is filled with the residual stream (B, T, C) after layer i (0-based): inner features.
        """
        B, T, _ = x.shape
        cos, sin = rope_tables(self.cfg.head_dim, T, self.cfg.rope_base, x.device)
        for i, layer in enumerate(self.layers):
            a, h = layer.attention, layer.attention_norm(x)
            q = a.wq(h).view(B, T, a.n_heads, a.head_dim).transpose(1, 2)  # (B, nh, T, hd)
            k = a.wk(h).view(B, T, a.n_kv_heads, a.head_dim).transpose(1, 2)  # (B, nkv, T, hd)
            v = a.wv(h).view(B, T, a.n_kv_heads, a.head_dim).transpose(1, 2)  # (B, nkv, T, hd)
            q, k = apply_rope_pairs(q, cos, sin), apply_rope_pairs(k, cos, sin)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)  # (B, nh, T, hd)
            x = x + a.wo(y.transpose(1, 2).reshape(B, T, a.n_heads * a.head_dim))
            x = x + layer.feed_forward(layer.ffn_norm(x))
            if taps is not None and i in taps:
                taps[i] = x
        return x

    def forward_train(self, tokens: torch.Tensor) -> torch.Tensor:
        """Cache-free causal forward (training, reference): tokens (B, T) at positions 0..T-1 -> logits (B, T, V)."""
        return self.head(self.trunk(self.tok_embeddings(tokens)))


def init_random(cfg: LlamaConfig, seed: int = 0, max_len: int = 512) -> Llama:
    """A Llama with seeded N(0, 0.02^2) weights and unit norms (for tests and as a training start)."""
    g = torch.Generator().manual_seed(seed)
    model = Llama(cfg, max_len=min(max_len, cfg.max_seq_len))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                p.fill_(1.0)
            else:
                p.copy_(torch.randn(p.shape, generator=g) * 0.02)
        for layer in model.layers:  # scale residual projections as GPT-2 does
            layer.attention.wo.weight.mul_(1 / math.sqrt(2 * cfg.n_layers))
            layer.feed_forward.w2.weight.mul_(1 / math.sqrt(2 * cfg.n_layers))
    return model
