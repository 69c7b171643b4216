"""Batch-1 steps of an fp16- or bf16-weight Llama, and of the feature-level draft's one layer, in few Python calls,
with the same arithmetic as their general forwards.

A CPU decode step of SmolLM2-135M is 121 small matrix-vector products and ~1,500 tiny tensor ops; at one thread the
Python and dispatch cost around them (module calls, reshapes, per-layer RoPE factors) was a third of the step. The
step here reads every layer's packed weights from one tuple, forms the RoPE factor e^{i t theta} once per step and
keeps q, k, v as views of the fused qkv output. It serves a verify pass of T tokens (a chain or a token tree) as
well as a decode step: speculation's verify cost v(T) = t(T) / t(1) is a ratio of two such steps, so a general path
with more Python calls for T > 1 would count its own overhead as verification. Each op is the one Llama.forward
runs on the same values (the same kernels on the same inputs, elementwise ops whose layout does not change their
results), so the logits are bit for bit those of the general path (tests/test_llama_step.py checks torch.equal on
the real target, for steps, chains and trees).

bf16 weights round every map's input to 8 bits, where a last-bit difference moves a value a whole step: attention
over T rows at once sums in another order than T single steps, and after rounding that parts greedy speculative
from greedy output (commit 03068d8 gives the measured gap). On bf16 a verify pass therefore attends row
by row (attend_rows): one attention call per token over the keys its single step reads, so its logits are the
steps' bit for bit; the maps themselves compute each row alone in both kernels.

The feature-level draft (gpu_demo.models.eagle) runs its fc map and its one block the same way (head_step): a draft
step is one small layer, so the Python calls around its maps are a large share of it, and every draft step counts in
the cost c.

The int8 and int4 formats take one ONNX Runtime graph per step instead (gpu_demo.models.ort_step)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from gpu_demo.models.base import causal_bias_at_offset, tree_bias_at_offset
from gpu_demo.models.quant import kernel

PLAN_FORMATS = ("fp16", "bf16")  # formats whose verify pass batches its rows on one kernel call per map
# formats that round activations (bf16: x to 8 bits before each map), so a last-bit difference in attention can
# move a logit a whole step: their verify passes attend row by row (row_keys), as the single steps do
ROW_ATTENTION_FORMATS = ("bf16",)


def row_keys(start: int, T: int, tree_mask: torch.Tensor | None) -> list[torch.Tensor | int]:
    """Per new token i, the cache slots it attends in ascending order: start + i + 1 (the slots 0..start+i of a
    chain, as a slice end) or, in a token tree, the committed prefix and the last S slots that tree_mask[i] marks.

    A single step at the same position attends exactly these keys (the accepted path sits in slot order, ancestors
    first), so one attention call per row over them is the step's own call.
    """
    if tree_mask is None:
        return [start + i + 1 for i in range(T)]
    s = tree_mask.shape[1]
    first = start + T - s  # slots before the masked window: the committed prefix, seen by every row
    prefix = torch.arange(first, device=tree_mask.device)
    return [torch.cat([prefix, first + tree_mask[i].nonzero().view(-1)]) for i in range(T)]


def attend_rows(q: torch.Tensor, ck: torch.Tensor, cv: torch.Tensor, keys: list[torch.Tensor | int]) -> torch.Tensor:
    """softmax(q_i K_i^T / sqrt(hd)) V_i per row i over the cache slots keys[i]: q (1, nh, T, hd) -> (1, nh, T, hd).

    The single step's call, T times: a batched call sums in another order, so it is close to the steps, not equal."""
    out = []
    for i, kept in enumerate(keys):
        k, v = (ck[:, :, :kept], cv[:, :, :kept]) if isinstance(kept, int) else (ck[:, :, kept], cv[:, :, kept])
        out.append(F.scaled_dot_product_attention(q[:, :, i : i + 1], k, v, enable_gqa=True))  # (1, nh, 1, hd)
    return torch.cat(out, dim=2)


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """y = x / sqrt(mean(x^2) + eps) * w over the last axis (x, w float32; F.rms_norm's own ops, half its cost)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


@dataclass(frozen=True)
class StepPlan:
    """What one decode step reads: per layer (attention norm w, [wq; wk; wv], wo, ffn norm w, [w1; w3], w2)."""

    fmt: str  # the weight format of the layers and the head (gpu_demo.models.quant): one of PLAN_FORMATS
    layers: tuple[tuple, ...]  # per layer: (n1 (C,), qkv packed, wo packed, n2 (C,), gate_up packed, w2 packed)
    norm: torch.Tensor  # (C,) final norm weight
    head: tuple  # the output head's packed tensors


def layer_plan(block, fmt: str) -> tuple | None:
    """One Block's decode-path weights: (attention norm w (C,), [wq; wk; wv], wo, ffn norm w (C,), [w1; w3], w2),
    the maps as `fmt`'s packed tensors; None unless the block's fused maps are all in `fmt`."""
    a, f = block.attention, block.feed_forward
    maps = (*a.qkv, a.wo, *f.gate_up, f.w2)
    if len(maps) != 4 or any(getattr(m, "fmt", None) != fmt for m in maps):
        return None
    return (block.attention_norm.weight.detach(), maps[0].packed, maps[1].packed,
            block.ffn_norm.weight.detach(), maps[2].packed, maps[3].packed)


def build_plan(model) -> StepPlan | None:
    """The plan of a full-vocabulary Llama whose decode-path maps and head are in PLAN_FORMATS and fused; else None."""
    fmt = model.weight_format
    if fmt not in PLAN_FORMATS or not model._quant_head or model.out_ids is not None:
        return None
    layers = [layer_plan(layer, fmt) for layer in model.layers]
    if any(layer is None for layer in layers):
        return None
    return StepPlan(fmt, tuple(layers), model.norm.weight.detach(), model._quant_head[0].packed)


def step_factors(model, T: int, positions: torch.Tensor | None, tree_mask: torch.Tensor | None
                 ) -> tuple[int, torch.Tensor, torch.Tensor | None]:
    """Reserve T cache slots of a batch-1 model -> (start, e^{i t theta} (T, hd/2), additive mask (T, start + T) or
    None for one chain token): RoPE at start.. or at positions (T,) (a tree's depths), the causal or tree mask."""
    start = model.cache.reserve(1, T, model.device, model.dtype)
    cos, sin = model._rope(start, T)  # (T, hd/2)
    if positions is not None:
        cos, sin = model._cos[positions], model._sin[positions]  # (T, hd/2)
    if tree_mask is not None:
        mask = tree_bias_at_offset(start, tree_mask, torch.float32)  # (T, start + T)
    else:
        mask = None if T == 1 else causal_bias_at_offset(start, T, model.device, torch.float32)  # (T, start + T)
    return start, torch.complex(cos, sin), mask


def block_step(x: torch.Tensor, layer: tuple, ck: torch.Tensor, cv: torch.Tensor, start: int, rot: torch.Tensor,
               mask: torch.Tensor | None, keys: list | None, lin, dims: tuple[int, int, int, float]) -> torch.Tensor:
    """One pre-norm block on T rows x (T, C) at cache slots start..start+T-1 -> (T, C); writes k, v there.

    h = norm(x); [q; k; v] = h W_qkv^T; q, k rotated by rot = e^{i t theta} on adjacent pairs; x += W_o
    attention(q, K, V; mask) (row by row over `keys` where given: attend_rows); x += W_2 (silu(W_1 h') * W_3 h')
    with h' = norm(x). dims = (n_heads, n_kv_heads, head_dim, eps); lin is the format's kernel.
    """
    n1, qkv, wo, n2, gate_up, w2 = layer
    nh, nkv, hd, eps = dims
    T, end = x.shape[0], start + x.shape[0]
    y = lin(rms_norm(x, n1, eps), *qkv).view(T, nh + 2 * nkv, hd).transpose(0, 1)  # (nh + 2 nkv, T, hd)
    qk = torch.view_as_complex(y[: nh + nkv].reshape(nh + nkv, T, hd // 2, 2))  # (nh + nkv, T, hd/2)
    qk = torch.view_as_real(qk * rot).view(nh + nkv, T, hd)  # rotated q (nh rows) then k (nkv rows)
    ck[0, :, start:end] = qk[nh:]  # (nkv, T, hd)
    cv[0, :, start:end] = y[nh + nkv:]
    if keys is None:
        att = F.scaled_dot_product_attention(qk[:nh].view(1, nh, T, hd), ck[:, :, :end], cv[:, :, :end],
                                             attn_mask=mask, enable_gqa=True)  # (1, nh, T, hd)
    else:
        att = attend_rows(qk[:nh].view(1, nh, T, hd), ck, cv, keys)  # (1, nh, T, hd)
    x = x + lin(att.transpose(1, 2).reshape(T, nh * hd), *wo)
    g, u = lin(rms_norm(x, n2, eps), *gate_up).chunk(2, dim=-1)  # (T, H) each
    return x + lin(F.silu(g) * u, *w2)


def step_tokens(model, plan: StepPlan, idx: torch.Tensor, positions: torch.Tensor | None = None,
                tree_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """idx (1, T) at slots cache_len.. -> (logits (1, T, V) float32, pre-norm hidden (1, T, C)); appends them.

    Per layer: h = norm(x); [q; k; v] = h W_qkv^T; q, k rotated by e^{i t theta} on adjacent pairs; k, v into the
    cache; x += W_o attention(q, K, V; mask); x += W_2 (silu(W_1 h') * W_3 h') with h' = norm(x). T = 1 is a
    decode step; T > 1 a verify pass of a chain (causal mask) or of a token tree (positions (T,) rotate by the
    tree's depths, tree_mask (T, S) as in Llama.forward), so a verify pass pays the step's Python cost, not the
    general path's. On ROW_ATTENTION_FORMATS a pass after the first attends row by row (attend_rows), so a verify
    pass's logits are the single steps' bit for bit (the general path batches attention: close, not equal).
    """
    cfg = model.cfg
    C, T = cfg.dim, idx.shape[1]
    dims = (cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.norm_eps)
    lin = kernel(plan.fmt)
    start, rot, mask = step_factors(model, T, positions, tree_mask)
    # a verify pass (not the prompt's first pass, which both decoders make alike) attends row by row
    keys = row_keys(start, T, tree_mask) if T > 1 and start > 0 and plan.fmt in ROW_ATTENTION_FORMATS else None
    x = model.tok_embeddings(idx).view(T, C)  # (T, C)
    for layer, ck, cv in zip(plan.layers, model.cache.k, model.cache.v):
        x = block_step(x, layer, ck, cv, start, rot, mask, keys, lin, dims)
    model.cache.advance(T)
    return lin(rms_norm(x, plan.norm, cfg.norm_eps), *plan.head).view(1, T, -1), x.view(1, T, C)


@dataclass(frozen=True)
class HeadPlan:
    """What one step of the feature-level draft reads: fc's map [e(x); f] -> u, its one block, the final norm w."""

    fmt: str  # the weight format of fc and the block: one of PLAN_FORMATS
    fc: tuple  # fc's packed tensors (2C -> C)
    layer: tuple  # layer_plan of the block
    norm: torch.Tensor  # (C,) the target's final norm weight


def build_head_plan(head) -> HeadPlan | None:
    """The plan of an EagleHead whose fc and block maps are one PLAN_FORMATS format (pack_for_cpu), else None."""
    fmt = getattr(head.fc, "fmt", None)
    if fmt not in PLAN_FORMATS or not head._norm:
        return None
    layer = layer_plan(head.block, fmt)
    return None if layer is None else HeadPlan(fmt, head.fc.packed, layer, head._norm[0].weight.detach())


def head_step(head, plan: HeadPlan, feats: torch.Tensor, toks: torch.Tensor, positions: torch.Tensor | None = None,
              tree_mask: torch.Tensor | None = None) -> torch.Tensor:
    """T new slots (features (1, T, C), ids (1, T)) -> g (1, T, C) = norm(block(W_fc [e(x_j); f_{j-1}])); caches them.

    EagleHead.forward's arithmetic on the same kernels (a chain's causal mask, or a tree's positions and mask)."""
    cfg = head.cfg
    C, T = cfg.dim, toks.shape[1]
    dims = (cfg.n_heads, cfg.n_kv_heads, cfg.dim // cfg.n_heads, cfg.norm_eps)
    lin = kernel(plan.fmt)
    start, rot, mask = step_factors(head, T, positions, tree_mask)
    u = lin(torch.cat([F.embedding(toks, head._emb), feats], dim=-1).view(T, 2 * C), *plan.fc)  # (T, C)
    h = block_step(u, plan.layer, head.cache.k[0], head.cache.v[0], start, rot, mask, None, lin, dims)  # (T, C)
    head.cache.advance(T)
    return rms_norm(h, plan.norm, cfg.norm_eps).view(1, T, C)
