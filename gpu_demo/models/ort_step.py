"""One batch-1 decode step of an int8/int4 Llama as a single ONNX Runtime graph over the KV cache in place.

On the 8- and 4-bit block kernels (gpu_demo.models.ort_blocks) a SmolLM2-135M step spent about 30% of its time
outside the 121 matrix-vector products: ~1,000 small torch ops and their Python calls (norms, RoPE, attention,
residual adds) and one session call per map. Here the whole step, every layer and the head, is one graph run:

    h = norm(x);  [q; k; v] = h W_qkv^T;  a = GroupQueryAttention(RoPE(q), RoPE(k), v; K, V cache);
    x += a W_o^T;  h' = norm(x);  x += (silu(h' W_1^T) * h' W_3^T) W_2^T;  ...;  logits = norm(x) W_head^T

with the same weight blocks and the same MatMulNBits nodes as the per-map sessions, com.microsoft's
SkipSimplifiedLayerNormalization (the residual add and the next RMSNorm in one node) and GroupQueryAttention
(RoPE on adjacent pairs, as GGUF lays q and k out, and grouped-query attention), which writes the new key and value
into the model's own cache buffers (bound as both past and present: no copy) at position cache_len. Measured with
ONNX Runtime's profiler on SmolLM2's int4 step (one thread, AVX2): the 121 MatMulNBits nodes take 61% of the run,
int4's minimum term (block sums and their Gemm) 13%, attention 6%; llama.cpp's step is mostly its dot products too.

Its numbers are not the general path's bit for bit (another order of sums in the norms and the attention; the
activations' int8 rounding turns a last-bit difference into a whole step now and then), so on these formats this
step is the one way a single token is decoded, and a verify pass runs as these steps (Llama._as_steps): greedy
speculative output equals greedy autoregressive output because both make the same calls.
"""

from __future__ import annotations

import numpy as np
import torch

from gpu_demo.models.ort_blocks import Q4Map, Q8Map, session
from gpu_demo.models.quant import ROWWISE_FORMATS


def _block_maps(model) -> list[tuple] | None:
    """Per layer (attention norm w, W_qkv map, W_o map, ffn norm w, [W_1; W_3] map, W_2 map), or None where a
    decode-path map is not an ORT block map (unfused, another format)."""
    layers = []
    for layer in model.layers:
        a, f = layer.attention, layer.feed_forward
        if not a.qkv or not f.gate_up:
            return None
        maps = [m.packed[0] for m in (a.qkv[0], a.wo, f.gate_up[0], f.w2)]
        if not all(isinstance(m, (Q8Map, Q4Map)) for m in maps):
            return None
        layers.append((layer.attention_norm.weight, maps[0], maps[1], layer.ffn_norm.weight, maps[2], maps[3]))
    return layers


class OrtStep:
    """The decode step of a Llama on int8/int4 block maps as one ONNX Runtime graph (module docstring)."""

    def __init__(self, model, layers: list[tuple], head: Q8Map | Q4Map) -> None:
        from onnx import TensorProto, helper

        cfg = model.cfg
        C, nh, nkv, hd, L = cfg.dim, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, model.max_seq_len
        self.dim, self.vocab, self.n_layers = C, head.out_features, len(layers)
        cos, sin = model._rope(0, L)  # (L, hd/2) each: the general path's own tables

        def const(name: str, a: np.ndarray, kind: int = TensorProto.FLOAT):
            return helper.make_tensor(name, kind, a.shape, np.ascontiguousarray(a).tobytes(), raw=True)

        def vi(name: str, shape: list, kind: int = TensorProto.FLOAT):
            return helper.make_tensor_value_info(name, kind, shape)

        eps = cfg.norm_eps
        # rows are 2-D (1, width), as the maps' Gemm needs; GroupQueryAttention takes and gives (1, 1, width)
        nodes, inits = [], [const("cos", cos.numpy()), const("sin", sin.numpy()),
                            const("split_qkv", np.array([nh * hd, nkv * hd, nkv * hd]), TensorProto.INT64),
                            const("as_3d", np.array([1, 1, -1]), TensorProto.INT64),
                            const("as_2d", np.array([1, -1]), TensorProto.INT64)]
        inputs = [vi("x", [1, C]), vi("seqlens_k", [1], TensorProto.INT32), vi("total", [1], TensorProto.INT32)]
        outputs = [vi("logits", [1, self.vocab]), vi("hidden", [1, C])]
        norms = [n1 for n1, *_ in layers] + [model.norm.weight]
        for i, w in enumerate(norms):
            inits.append(const(f"n1_{i}", w.detach().float().numpy()))
        nodes.append(helper.make_node("SimplifiedLayerNormalization", ["x", "n1_0"], ["h_0"], axis=-1, epsilon=eps))
        x = "x"  # the residual stream entering layer i
        for i, (_, qkv, wo, n2, gate_up, w2) in enumerate(layers):
            p = f"l{i}_"
            inits.append(const(p + "n2", n2.detach().float().numpy()))
            inputs += [vi(f"past_k{i}", [1, nkv, L, hd]), vi(f"past_v{i}", [1, nkv, L, hd])]
            outputs += [vi(f"present_k{i}", [1, nkv, L, hd]), vi(f"present_v{i}", [1, nkv, L, hd])]
            parts = [qkv.nodes(f"h_{i}", p + "qkv", p + "qkv_"), wo.nodes(p + "att2", p + "o", p + "wo_"),
                     gate_up.nodes(p + "h2", p + "gu", p + "gu_"), w2.nodes(p + "act", p + "d", p + "w2_")]
            inits += [init for _, part in parts for init in part]
            nodes += parts[0][0]
            nodes += [helper.make_node("Reshape", [p + "qkv", "as_3d"], [p + "qkv3"]),
                      helper.make_node("Split", [p + "qkv3", "split_qkv"], [p + "q", p + "k", p + "v"], axis=-1),
                      helper.make_node("GroupQueryAttention", [p + "q", p + "k", p + "v", f"past_k{i}", f"past_v{i}",
                                                               "seqlens_k", "total", "cos", "sin"],
                                       [p + "att", f"present_k{i}", f"present_v{i}"], domain="com.microsoft",
                                       num_heads=nh, kv_num_heads=nkv, do_rotary=1, rotary_interleaved=1),
                      helper.make_node("Reshape", [p + "att", "as_2d"], [p + "att2"])]
            nodes += parts[1][0]
            nodes.append(helper.make_node("SkipSimplifiedLayerNormalization", [p + "o", x, p + "n2"],
                                          [p + "h2", "", "", p + "mid"], domain="com.microsoft", epsilon=eps))
            nodes += parts[2][0]
            nodes += [helper.make_node("Split", [p + "gu"], [p + "g", p + "u"], axis=-1, num_outputs=2),
                      helper.make_node("Sigmoid", [p + "g"], [p + "sg"]),
                      helper.make_node("Mul", [p + "g", p + "sg"], [p + "silu"]),
                      helper.make_node("Mul", [p + "silu", p + "u"], [p + "act"])]
            nodes += parts[3][0]
            last = i == len(layers) - 1
            x_next = "hidden" if last else f"x_{i + 1}"
            nodes.append(helper.make_node("SkipSimplifiedLayerNormalization", [p + "d", p + "mid", f"n1_{i + 1}"],
                                          ["h_final" if last else f"h_{i + 1}", "", "", x_next],
                                          domain="com.microsoft", epsilon=eps))
            x = x_next
        head_nodes, head_inits = head.nodes("h_final", "logits", "head_")
        nodes += head_nodes
        inits += head_inits
        graph = helper.make_graph(nodes, "llama_step", inputs, outputs, inits)
        self._session = session(graph, opset=18)
        self._bind = self._session.io_binding()
        self._x = torch.zeros(1, C)  # (1, C): the token's embedding, bound once
        self._lens = torch.zeros(2, dtype=torch.int32)  # [cache_len, cache_len + 1]: seqlens_k and total
        self._bind.bind_input("x", "cpu", 0, np.float32, [1, C], self._x.data_ptr())
        self._bind.bind_input("seqlens_k", "cpu", 0, np.int32, [1], self._lens.data_ptr())
        self._bind.bind_input("total", "cpu", 0, np.int32, [1], self._lens.data_ptr() + 4)
        self._cache_ptrs: tuple[int, ...] = ()

    def _bind_cache(self, cache) -> None:
        """Bind every layer's K and V buffer (1, nkv, L, hd) as past and present alike (GQA writes in place)."""
        ptrs = tuple(t.data_ptr() for t in (*cache.k, *cache.v))
        if ptrs == self._cache_ptrs:
            return
        for i, (ck, cv) in enumerate(zip(cache.k, cache.v)):
            if ck.shape[0] != 1 or not (ck.is_contiguous() and cv.is_contiguous()):
                raise ValueError("the ONNX Runtime step needs a batch-1 contiguous cache")
            shape = list(ck.shape)
            for kind, t in (("k", ck), ("v", cv)):
                self._bind.bind_input(f"past_{kind}{i}", "cpu", 0, np.float32, shape, t.data_ptr())
                self._bind.bind_output(f"present_{kind}{i}", "cpu", 0, np.float32, shape, t.data_ptr())
        self._cache_ptrs = ptrs

    def __call__(self, model, idx: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """idx (1, 1) at position cache_len -> (logits (1, 1, V) float32, pre-norm hidden (1, 1, C)); appends it."""
        start = model.cache.reserve(1, 1, model.device, model.dtype)
        self._bind_cache(model.cache)
        self._x.copy_(model.tok_embeddings(idx).view(1, self.dim))
        self._lens[0], self._lens[1] = start, start + 1
        logits, hidden = torch.empty(1, 1, self.vocab), torch.empty(1, 1, self.dim)  # new each step: callers keep them
        self._bind.bind_output("logits", "cpu", 0, np.float32, [1, self.vocab], logits.data_ptr())
        self._bind.bind_output("hidden", "cpu", 0, np.float32, [1, self.dim], hidden.data_ptr())
        self._session._sess.run_with_iobinding(self._bind._iobinding, None)
        model.cache.advance(1)
        return logits, hidden


def build_ort_step(model) -> OrtStep | None:
    """The graph step of a full-vocabulary Llama whose decode-path maps and head are ORT block maps; else None."""
    if model.weight_format not in ROWWISE_FORMATS or not model._quant_head or model.out_ids is not None:
        return None
    layers = _block_maps(model)
    head = model._quant_head[0].packed[0]
    if layers is None or not isinstance(head, (Q8Map, Q4Map)):
        return None
    return OrtStep(model, layers, head)
