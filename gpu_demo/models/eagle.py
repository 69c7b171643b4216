"""A feature-level draft in the spirit of EAGLE (Li et al., 2024): one decoder layer that reads the target's features.

The target's last hidden state f_t (after its final RMSNorm, the vector its output head reads) already
knows most of what the next token will be. The draft predicts the *next feature* from the current one:

    slot j:  u_j = W_fc [e(x_j); f_{j-1}]          e = the target's token embedding, f = the target's feature
             g_j = norm(block(u_1..u_j))            one Llama decoder layer with its own KV cache; the target's
                                                    final RMSNorm (frozen)
             q(x_{j+1}) = softmax(E_S g_j)          E_S = the target's embedding rows of a frequent subset S

so it costs one layer and a |S|-row head, while inheriting the target's embedding, norm and head.
q is the draft's law over the whole vocabulary: zero outside S, which keeps the exact rule exact (a
token outside S is never proposed, and the residual (p - q)+ still gives it its full mass p(x)).

Feature reuse: the target's verify pass over [pending, x_1..x_k] computes f at every position anyway;
after it accepts n drafts, the features of pending, x_1..x_n are true target features. The drafter
keeps them (``Llama.last_hidden``) and, next round, feeds the n + 1 slots they complete in one forward
(true features only); its later draft steps feed back its own g (an estimate of f) and are rolled back
after proposing. The first draft of a round therefore sees exactly what it saw in training.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from gpu_demo.drafters import Draft, Drafter
from gpu_demo.models.base import CachedDecoder, KVCache, causal_bias_at_offset, tree_bias_at_offset
from gpu_demo.models.llama import Block, Llama, LlamaConfig, rope_tables
from gpu_demo.models.llama_step import build_head_plan, head_step
from gpu_demo.models.packed import PackedLinear, pack_linears, packing_available
from gpu_demo.models.quant import QuantLinear, draft_packing, fused, quantize_linears
from gpu_demo.sampler import SamplingConfig, next_token

ASSETS = Path(__file__).resolve().parents[1] / "assets"
EAGLE_NAME = "smollm2_eagle"
FEATURE_REUSE = (
    "Feature reuse (smollm2-eagle): the target's verify pass already computes its last hidden state at every "
    "position, the vector its output head turns into p; the EAGLE-style draft reads those states for the "
    "tokens just accepted, so one small layer on top of what the target knows predicts the next tokens, "
    "instead of a separate small model starting from the text alone."
)


_SMOLLM2 = LlamaConfig()  # the target the defaults match: SmolLM2-135M's shape lives in LlamaConfig's defaults


@dataclass(frozen=True)
class EagleConfig:
    """Shape of the head: the target's width, heads and RoPE; the FFN width and the proposable subset size."""

    dim: int = _SMOLLM2.dim
    n_heads: int = _SMOLLM2.n_heads
    n_kv_heads: int = _SMOLLM2.n_kv_heads
    hidden_dim: int = _SMOLLM2.hidden_dim
    norm_eps: float = _SMOLLM2.norm_eps
    rope_base: float = _SMOLLM2.rope_base
    vocab_size: int = _SMOLLM2.vocab_size
    n_out: int = 8192  # |S|: token ids the draft can propose (q = 0 elsewhere)

    def block_config(self) -> LlamaConfig:
        """The one decoder layer's shape, as a LlamaConfig."""
        return LlamaConfig(
            vocab_size=self.vocab_size, dim=self.dim, n_layers=1, n_heads=self.n_heads, n_kv_heads=self.n_kv_heads,
            hidden_dim=self.hidden_dim, norm_eps=self.norm_eps, rope_base=self.rope_base,
        )

    @classmethod
    def for_target(cls, target: LlamaConfig, hidden_dim: int | None = None, n_out: int = 8192) -> EagleConfig:
        """A head matching the target's width, heads, norm and RoPE."""
        return cls(dim=target.dim, n_heads=target.n_heads, n_kv_heads=target.n_kv_heads,
                   hidden_dim=hidden_dim or target.hidden_dim, norm_eps=target.norm_eps, rope_base=target.rope_base,
                   vocab_size=target.vocab_size, n_out=n_out)

    def to_dict(self) -> dict:
        """Plain dict (JSON-serialisable)."""
        return asdict(self)


class EagleHead(CachedDecoder, nn.Module):
    """fc + one decoder layer + the target's final norm and the S rows of its head; a static KV cache of its slots.

    Trainable (and committed): fc, block, out_ids. Borrowed from the target by :meth:`attach` (not saved):
    the token embedding E (V, C), the final RMSNorm, and E_S = E[out_ids] (n_out, C).
    """

    def __init__(self, cfg: EagleConfig, max_len: int = 2048) -> None:
        super().__init__()
        self.cfg = cfg
        self.vocab_size = cfg.vocab_size
        self.max_seq_len = max_len
        self.fc = nn.Linear(2 * cfg.dim, cfg.dim, bias=False)  # [e(x_j); f_{j-1}] -> u_j
        self.block = Block(cfg.block_config())
        self.register_buffer("out_ids", torch.arange(cfg.n_out))  # (n_out,) ascending ids of S
        self.cache = KVCache(1, cfg.n_kv_heads, cfg.dim // cfg.n_heads, max_len)
        self._emb: torch.Tensor | None = None  # (V, C) the target's table (not a parameter of the head)
        self._e_out: torch.Tensor | None = None  # (n_out, C)
        self._norm: tuple[nn.Module, ...] = ()  # (the target's final RMSNorm,): a tuple, so not a submodule
        self._cos = self._sin = None
        self._packed_out: tuple[PackedLinear | QuantLinear, ...] = ()  # E_S's inference copy (pack_for_cpu)
        self._kernel: str | None = None  # the packed path in words (pack_for_cpu sets it)
        self._step_plan = None  # llama_step.HeadPlan: a batch-1 step in few Python calls (pack_for_cpu, fp16)
        self.static_steps = None  # fixed-shape steps, CUDA graphs on a GPU (gpu_demo.models.graphs.use_static_steps)

    # ------------------------------------------------------------------ target parts --
    def attach(self, target: Llama) -> EagleHead:
        """Borrow the target's embedding, final norm and head rows E_S (frozen); returns self."""
        if target.cfg.dim != self.cfg.dim or target.vocab_size != self.vocab_size:
            raise ValueError(f"head built for dim {self.cfg.dim}, vocab {self.vocab_size}; target has "
                             f"dim {target.cfg.dim}, vocab {target.vocab_size}")
        if target.output is not None:
            raise ValueError("the feature-level draft needs a target whose head is tied to its embedding")
        self._emb = target.tok_embeddings.weight.detach()
        self._norm = (target.norm,)
        self.refresh_head_rows()
        return self

    def refresh_head_rows(self) -> None:
        """E_S = E[out_ids] as a contiguous copy (after attach, or after out_ids changes)."""
        self._e_out = self._emb[self.out_ids.to(self._emb.device)].contiguous()
        if self._packed_out:
            old = self._packed_out[0]
            self._packed_out = (QuantLinear(old.fmt, self._e_out) if isinstance(old, QuantLinear)
                                else PackedLinear(self._e_out, old.min_rows, old.packed.dtype),)

    def pack_for_cpu(self, lean: bool = True) -> int:
        """Draft inference from copies of fc, the block's maps and E_S in the kernel draft_packing picks here.

        The target's pass evicts the draft's weights from the caches every round, so a draft step streams them
        from memory: half the bytes is most of the draft's cost c, so the copies are fp16 (fbgemm, float32 sums)
        where it runs, else bf16 (oneDNN); elsewhere float32 copies serve 4+ rows (token trees) and one-row steps
        keep the BLAS; `kernel` says which. q is whatever this head computes (the exact rule needs nothing more);
        training and the committed weights stay float32. On fp16 copies a batch-1 step runs in few Python calls
        (llama_step.head_step, the same g bit for bit) unless lean is False (bench/draft_kernels.py times both).
        Returns the maps given a copy.
        """
        if self.device.type != "cpu" or self.dtype != torch.float32 or not packing_available() or self._e_out is None:
            return 0
        kind, min_rows, self._kernel = draft_packing()
        if kind == "fp16":
            self._packed_out = (QuantLinear("fp16", self._e_out),)  # a tuple: not in the state dict
            n = quantize_linears(self, "fp16") + 1
            a, f = self.block.attention, self.block.feed_forward  # one kernel call for [wq; wk; wv], one for [w1; w3]
            a.qkv, f.gate_up = fused("fp16", [a.wq, a.wk, a.wv]), fused("fp16", [f.w1, f.w3])
            self._step_plan = build_head_plan(self) if lean else None
            return n
        dtype = torch.bfloat16 if kind == "bf16" else torch.float32
        self._packed_out = (PackedLinear(self._e_out, min_rows, dtype),)
        return pack_linears(self, min_rows, dtype) + 1

    @property
    def kernel(self) -> str:
        """Which weights a draft step multiplies by, in words: the packed copies, or the plain ones."""
        if self._packed_out and self._kernel:
            return self._kernel
        return f"unpacked {str(self.dtype).replace('torch.', '')} weights"

    @property
    def device(self) -> torch.device:
        """Device of the weights."""
        return self.fc.weight.device

    @property
    def dtype(self) -> torch.dtype:
        """Weight dtype (the cache uses it too)."""
        return self.fc.weight.dtype

    # ----------------------------------------------------------------------- maths --
    def slot_inputs(self, feats: torch.Tensor, toks: torch.Tensor) -> torch.Tensor:
        """u_j = W_fc [e(x_j); f_{j-1}]: feats (B, T, C) features, toks (B, T) ids -> (B, T, C)."""
        return self.fc(torch.cat([F.embedding(toks, self._emb), feats], dim=-1))

    def feature(self, h: torch.Tensor) -> torch.Tensor:
        """g = the target's final RMSNorm of the block output h (B, T, C): the draft's estimate of the next f."""
        return self._norm[0](h)

    def sub_logits(self, g: torch.Tensor) -> torch.Tensor:
        """Logits over S: g (..., C) -> (..., n_out) float32."""
        sub = self._packed_out[0](g) if self._packed_out else F.linear(g, self._e_out)  # either falls back itself
        return sub.float()

    def logits(self, g: torch.Tensor) -> torch.Tensor:
        """Logits over the whole vocabulary, -inf outside S: g (..., C) -> (..., V) float32 (so q = 0 there)."""
        sub = self.sub_logits(g)  # (..., n_out)
        full = sub.new_full((*sub.shape[:-1], self.vocab_size), float("-inf"))  # (..., V)
        return full.index_copy_(-1, self.out_ids, sub)

    def draw(self, g: torch.Tensor, sampling: SamplingConfig, generator: torch.Generator | None
             ) -> tuple[torch.Tensor, torch.Tensor]:
        """x ~ q = processed softmax of the logits over S, zero elsewhere: g (C,) -> (x (1,), q (V,)).

        The law of next_token(self.logits(g)) (processing S's logits alone changes nothing: every id outside S has
        logit -inf, so it is outside top-k, top-p and the softmax's support), drawn over |S| ids instead of V.
        """
        x_sub, q_sub = next_token(self.sub_logits(g), sampling, generator)  # (1,), (n_out,)
        q = q_sub.new_zeros(self.vocab_size).index_copy_(0, self.out_ids, q_sub)  # (V,)
        return self.out_ids.index_select(0, x_sub), q

    def _rope(self, start: int, t_new: int) -> tuple[torch.Tensor, torch.Tensor]:
        """RoPE cos and sin (T, hd/2) for slots start..start+T-1."""
        if self._cos is None or self._cos.device != self.device:
            self._cos, self._sin = rope_tables(self.cfg.dim // self.cfg.n_heads, self.max_seq_len,
                                               self.cfg.rope_base, self.device)
        return self._cos[start : start + t_new], self._sin[start : start + t_new]

    def forward(self, feats: torch.Tensor, toks: torch.Tensor, positions: torch.Tensor | None = None,
                tree_mask: torch.Tensor | None = None) -> torch.Tensor:
        """T new slots (features (B, T, C) of the previous positions, ids (B, T)) -> g (B, T, C); caches the T slots.

        A token tree passes positions (T,) (for RoPE) and tree_mask (T, S) (base.tree_bias_at_offset), as Llama does.
        """
        if self.static_steps is not None and not torch.is_grad_enabled():
            out = self.static_steps((feats, toks), positions, tree_mask)
            if out is not None:  # None: no fixed shape fits: the eager step
                return out[0]
        B, T = toks.shape
        if self._step_plan is not None and B == 1 and feats.dtype == torch.float32 and not torch.is_grad_enabled():
            return head_step(self, self._step_plan, feats, toks, positions, tree_mask)  # the same g, fewer calls
        start = self.cache.reserve(B, T, self.device, self.dtype)
        cos, sin = self._rope(start, T)  # (T, hd/2)
        if positions is not None:
            cos, sin = self._cos[positions], self._sin[positions]  # (T, hd/2): the tables exist after _rope
        u = self.slot_inputs(feats, toks)  # (B, T, C)
        if tree_mask is not None:
            mask = tree_bias_at_offset(start, tree_mask, u.dtype)  # (T, start+T)
        else:
            mask = None if T == 1 else causal_bias_at_offset(start, T, u.device, u.dtype)  # (T, start+T)
        h = self.block(u, self.cache.k[0], self.cache.v[0], start, cos, sin, mask)  # (B, T, C)
        self.cache.advance(T)
        return self.feature(h)

    def forward_at(self, feats: torch.Tensor, toks: torch.Tensor, slots: torch.Tensor, rope_pos: torch.Tensor,
                   bias: torch.Tensor | None, kv_len: int | None = None) -> torch.Tensor:
        """forward with every position a device tensor (Llama.forward_at): features (B, T, C) and ids (B, T) ->
        g (B, T, C); k, v go to cache slots (T,), rotated by rope_pos (T,); attention reads the first kv_len keys,
        or the whole cache (None) under bias. The cache's length is not moved."""
        self._rope(0, 1)  # the tables, built once per device
        cos, sin = self._cos.index_select(0, rope_pos), self._sin.index_select(0, rope_pos)  # (T, hd/2)
        u = self.slot_inputs(feats, toks)  # (B, T, C)
        h = self.block.forward_at(u, self.cache.k[0], self.cache.v[0], slots, cos, sin, bias, kv_len)  # (B, T, C)
        return self.feature(h)

    def step_at(self, feats: torch.Tensor, toks: torch.Tensor, slots: torch.Tensor, rope_pos: torch.Tensor,
                bias: torch.Tensor) -> tuple[torch.Tensor]:
        """A fixed-shape step over the whole cache (gpu_demo.models.graphs): (g (B, T, C),)."""
        return (self.forward_at(feats, toks, slots, rope_pos, bias),)

    def num_trainable(self) -> int:
        """Parameters committed in the asset (fc and the block)."""
        return sum(p.numel() for p in self.parameters())


# --------------------------------------------------------------------------------------------- the drafter


class EagleDrafter(Drafter):
    """Drafts with an :class:`EagleHead` from the target's own features (read from ``target.last_hidden``).

    State: the head's cache holds slots built from true target features only. ``_feats``/``_toks`` are the
    pairs (f_{j-1}, x_j) known since (true features from the target's last forwards, tokens committed),
    fed at the next propose. Draft steps 2..k use the head's own g and are rolled back after proposing.
    """

    def __init__(self, target: Llama, head: EagleHead, name: str = "EAGLE-style feature draft") -> None:
        if head._emb is None:
            head.attach(target)
        self.target, self.head, self.name = target, head, name
        self.vocab_size = target.vocab_size
        self.max_seq_len = min(target.max_seq_len, head.max_seq_len)
        self._feats: list[torch.Tensor] = []  # (m_i, C) pieces
        self._toks: list[torch.Tensor] = []  # (m_i,) pieces
        self._proposed = torch.empty(0, dtype=torch.long)

    def _target_features(self, rows: int) -> torch.Tensor:
        """The target's features (after its final norm) at the first `rows` positions of its last forward: (rows, C)."""
        h = self.target.last_hidden
        if h is None or h.shape[1] < rows:
            raise RuntimeError("the target's last forward did not keep the hidden states this draft reads")
        return self.target.norm(h[0, :rows]).to(self.head.dtype)

    def begin(self, prompt: torch.Tensor) -> None:
        """After the target's prefill over prompt[:-1]: pairs (f_{j-1}, x_j) for j = 1..n-1, none fed yet."""
        self.head.reset(1)
        prompt = prompt.to(self.head.device).view(-1)
        n = prompt.numel()
        self._feats, self._toks = [], []
        self._proposed = prompt[:0]
        if n > 1:
            if self.target.cache_len != n - 1:
                raise RuntimeError("EagleDrafter.begin must follow the target's prefill of prompt[:-1]")
            self._feats.append(self._target_features(n - 1))
            self._toks.append(prompt[1:])

    def propose(
        self, context: torch.Tensor, gamma: int, sampling: SamplingConfig, generator: torch.Generator | None
    ) -> Draft:
        """k = gamma draws x_i ~ q_i (one-hot if greedy); k = 0 when no target feature is known yet (1-token prompt)."""
        dev = self.head.device
        if gamma <= 0 or not self.has_pairs():
            self._proposed = torch.empty(0, dtype=torch.long, device=dev)
            return Draft(self._proposed, torch.empty(0, self.vocab_size, device=dev))
        feats, toks = self.take_pairs()  # (1, m, C) true features f_{j-1}, (1, m) x_j
        stable = self.head.cache_len + toks.shape[1]  # slots built from true features only
        g = self.head(feats, toks)[:, -1:]  # (1, 1, C)
        xs, qs = [], []
        for i in range(gamma):
            x, q = self.head.draw(g[0, 0], sampling, generator)  # (1,), (V,)
            xs.append(x)
            qs.append(q)
            if i + 1 < gamma:
                g = self.head(g, x.view(1, 1))  # (1, 1, C): feeds back its own feature estimate
        self.head.rollback(stable)
        self._proposed = torch.cat(xs)  # (k,)
        return Draft(self._proposed, torch.stack(qs))

    def commit(self, n_accepted: int, next_token: int) -> None:
        """Keep the target's features of pending, x_1..x_n (its verify pass) paired with x_1..x_n, y."""
        feats = self._target_features(n_accepted + 1)  # (n+1, C)
        nxt = torch.tensor([next_token], dtype=torch.long, device=self.head.device)
        self.add_pairs(feats, torch.cat([self._proposed[:n_accepted], nxt]))

    def has_pairs(self) -> bool:
        """Whether true pairs (f_{j-1}, x_j) wait to be fed."""
        return bool(self._toks)

    def take_pairs(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The waiting true pairs as (1, m, C) features and (1, m) ids, and forget them (they are fed now)."""
        feats, toks = torch.cat(self._feats).unsqueeze(0), torch.cat(self._toks).unsqueeze(0)
        self._feats, self._toks = [], []
        return feats, toks

    def add_pairs(self, feats: torch.Tensor, toks: torch.Tensor) -> None:
        """Queue true pairs: the target's features (m, C) of the positions before ids toks (m,)."""
        self._feats.append(feats)
        self._toks.append(toks)


# ----------------------------------------------------------------------------------------------- loading


def save_head(head: EagleHead, meta: dict, directory: Path = ASSETS, name: str = EAGLE_NAME) -> None:
    """Write fc, block and out_ids as <name>.safetensors (float32) and the config + metadata as <name>.json."""
    from safetensors.torch import save_file

    directory.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().float().contiguous() if v.is_floating_point() else v.contiguous()
               for k, v in head.state_dict().items()}
    save_file(tensors, str(directory / f"{name}.safetensors"))
    (directory / f"{name}.json").write_text(json.dumps({"config": head.cfg.to_dict(), **meta}, indent=1) + "\n")


def head_meta(directory: Path = ASSETS, name: str = EAGLE_NAME) -> dict:
    """A saved head's JSON: its config and how it was trained."""
    return json.loads((directory / f"{name}.json").read_text())


def load_head(target: Llama, directory: Path = ASSETS, name: str = EAGLE_NAME, max_len: int = 2048) -> EagleHead:
    """The committed head, attached to `target`, on its device and dtype, in eval mode."""
    from safetensors.torch import load_file

    path = directory / f"{name}.safetensors"
    if not path.is_file():
        raise ValueError(f"{path} is missing; rebuild it with: python -m gpu_demo train --which smollm2-eagle")
    meta = head_meta(directory, name)
    head = EagleHead(EagleConfig(**meta["config"]), max_len=min(max_len, target.max_seq_len))
    head.load_state_dict(load_file(str(path)), strict=True)
    head = head.to(device=target.device, dtype=target.dtype).eval()
    head.requires_grad_(False)
    head.attach(target)
    head.reset(1)
    return head


def load_eagle_pair(device: torch.device, dtype: torch.dtype | str | None = None, max_len: int | str = 2048):
    """SmolLM2-135M-Instruct target (shared with the other SmolLM2 pairs) + the committed feature-level draft."""
    from gpu_demo.models.smollm2 import pair_info, target_and_draft
    from gpu_demo.pairs import Pair

    files = [ASSETS / f"{EAGLE_NAME}.json", ASSETS / f"{EAGLE_NAME}.safetensors"]
    smol, dt, head, tok = target_and_draft(device, dtype, max_len, load_head, files)
    head.pack_for_cpu()  # packed copies on a CPU, bf16 where the CPU runs it (no-op elsewhere)
    cfg = head.cfg
    info = pair_info(smol, dt, f"EAGLE-style feature draft: 1 decoder layer reading the target's last hidden state, "
                           f"head over {cfg.n_out} frequent ids")
    info["draft_params"] = head.num_trainable()
    info["draft_reads"] = "the target's final-norm hidden state at the previous position + the new token's embedding"
    info["draft_vocab"] = cfg.n_out
    info["draft_kernel"] = head.kernel
    return Pair("smollm2-eagle", smol.model, EagleDrafter(smol.model, head), tok, device, info)
