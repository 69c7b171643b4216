"""8-bit (llama.cpp's Q8_0) and 4-bit (the GGUF's Q4_1) weight blocks of 32 on ONNX Runtime's MatMulNBits kernel.

    W[n, k] ~ s[n, b] q[n, k],  b = k // 32,  s[n, b] = max_{k in b} |W[n, k]| / 127,  q = round(W / s)
    y[m, n] = sum_b s[n, b] t[m, b] sum_{k in b} q[n, k] r[m, k],  r = round(x / t),  t = max_{k in b} |x[m, k]| / 127

The activations are rounded to int8 per row and per block of 32 (accuracy_level 4 of com.microsoft.MatMulNBits),
which is the arithmetic of llama.cpp's Q8_0 dot product. A block of 32 confines an outlier channel to its own
block, where a per-tensor rounding (fbgemm's dynamic int8) flattened every other channel of SmolLM2's
activations (mean TV 0.58 from float32, against 0.03 here; bench/quant_decode.py).

Rounding is a step function, so a last-bit difference in its input can move a value by a whole step: a batched
pass and a single step (attention and the 4-bit kernel sum in another order for several rows) give another law
(measured: logits up to 1.6 apart on SmolLM2). Llama therefore runs a verify pass on these weights as single steps
(Llama._as_steps), which keeps greedy speculative output equal to greedy autoregressive output. MLAS's int8 path
gains little from several rows on this CPU anyway (4 rows cost about 3 single rows).

PyTorch ships no weight-only kernel that is fast on a CPU without AVX-512 (gpu_demo.models.quant), so this one
comes from ONNX Runtime: one small session per map (a MatMulNBits node, and for int4 the minimum's block sums),
run on the calling thread, for the batched passes (the prompt); a decode step puts the same nodes of every map in
one graph (gpu_demo.models.ort_step).
"""

from __future__ import annotations

import numpy as np
import torch

BLOCK = 32  # weights (and activations) per scale, as in GGUF's Q8_0
ZERO = 128  # MatMulNBits' default zero point for 8 bits: it reads q + 128 as an unsigned byte
ACCURACY_INT8 = 4  # MatMulNBits accuracy_level: activations rounded to int8 per block, integer dot products


def q8_from_float(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """W (N, K) -> (q (N, Kp) int8, s (N, Kp/32)), Kp = K rounded up to 32: W ~ s q per block; zero blocks keep s = 1.

    A weight that is already Q8_0 (the GGUF's tied head) comes back as its own blocks: its largest entry per block
    is +-127 s, so s and q are the file's up to one rounding of s.
    """
    N, K = w.shape
    wf = torch.nn.functional.pad(w.detach().float(), (0, -K % BLOCK)).reshape(N, -1, BLOCK)  # (N, Kp/32, 32)
    s = wf.abs().amax(-1) / 127  # (N, Kp/32)
    s = torch.where(s > 0, s, torch.ones_like(s))
    q = torch.round(wf / s[..., None]).clamp(-127, 127).to(torch.int8)
    return q.reshape(N, -1).contiguous(), s.contiguous()


def q8_dequant(q: torch.Tensor, s: torch.Tensor, k: int) -> torch.Tensor:
    """The float32 weight (N, k) the blocks stand for: s q per block of 32, padding cut off."""
    N = q.shape[0]
    return (q.float().reshape(N, -1, BLOCK) * s[..., None]).reshape(N, -1)[:, :k]


def map_nodes(x: str, y: str, k: int, n: int, bits: int, codes: np.ndarray, scales: np.ndarray,
              zt: np.ndarray | None = None, prefix: str = "") -> tuple[list, list]:
    """ONNX nodes and initialisers for y = x W^T, x (M, k) -> y (M, n): one MatMulNBits node over codes
    (n, blocks, 32 bits / 8) uint8 and scales (n blocks) float32, zero point 2^(bits - 1), activations in int8 per
    block (accuracy 4); with zt (blocks, n), y also adds xsum zt, xsum[:, b] the float32 sum of x over block b
    (Q4Map's minimum). Names of its own start with prefix (so that many maps share one graph)."""
    from onnx import TensorProto, helper

    def const(name: str, a: np.ndarray, kind: int = TensorProto.FLOAT):
        return helper.make_tensor(prefix + name, kind, a.shape, a.tobytes(), raw=True)

    y0 = y if zt is None else prefix + "y0"
    nodes = [helper.make_node("MatMulNBits", [x, prefix + "w", prefix + "s"], [y0], domain="com.microsoft",
                              K=k, N=n, bits=bits, block_size=BLOCK, accuracy_level=ACCURACY_INT8)]
    inits = [const("w", codes, TensorProto.UINT8), const("s", scales.astype(np.float32).reshape(-1))]
    if zt is not None:  # x 2-D here (Gemm): xsum = x E with E (k, k/32) the blocks' indicator, y = xsum zt + y0
        indicator = np.kron(np.eye(k // BLOCK, dtype=np.float32), np.ones((BLOCK, 1), np.float32))  # (k, k/32)
        nodes += [helper.make_node("MatMul", [x, prefix + "blocks"], [prefix + "xsum"]),  # (M, k/32)
                  helper.make_node("Gemm", [prefix + "xsum", prefix + "zt", y0], [y])]  # (M, n)
        inits += [const("zt", zt.astype(np.float32)), const("blocks", indicator)]
    return nodes, inits


IR_VERSION = 10   # ONNX 1.16's IR: opsets to 21; onnxruntime 1.30 (the H200's) refuses the newest IR, 14


def model_of(graph, opset: int = 17):
    """An ONNX model over the graph, written at IR_VERSION (or older, if this onnx knows no newer) so that older
    onnxruntime builds read it."""
    import onnx
    from onnx import helper

    return helper.make_model(graph, ir_version=min(onnx.IR_VERSION, IR_VERSION),
                             opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid("com.microsoft", 1)])


def session(graph, opset: int = 17):
    """A one-thread CPU ONNX Runtime session over an onnx graph (the ONNX opset and com.microsoft's contrib ops)."""
    import onnxruntime as ort  # imported here: a machine without it falls back (quant._probe says why)

    model = model_of(graph, opset)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1  # the calling thread: no pool per session
    opts.log_severity_level = 3
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def _session(k: int, n: int, bits: int, codes: np.ndarray, scales: np.ndarray, zt: np.ndarray | None = None):
    """The bound run of a session x (M, k) -> y (M, n) over one map's nodes (map_nodes)."""
    from onnx import TensorProto, helper

    nodes, inits = map_nodes("x", "y", k, n, bits, codes, scales, zt)
    graph = helper.make_graph(nodes, f"q{bits}_linear",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["M", k])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["M", n])], inits)
    return session(graph)._sess.run  # the bound C++ run: the Python wrapper's checks cost ~5 us a call


class Q8Map:
    """One weight as 8-bit blocks of 32 in a MatMulNBits session: x (M, K) -> x W^T (M, N), W ~ s q."""

    def __init__(self, w: torch.Tensor) -> None:
        self.out_features, self.in_features = N, K = w.shape
        q, s = q8_from_float(w)
        self.codes = (q.to(torch.int16) + ZERO).to(torch.uint8).numpy().reshape(N, -1, BLOCK)  # (N, Kp/32, 32)
        self.scales = s.numpy()  # (N, Kp/32): kept, with the codes, to put the map in a larger graph
        self._run = _session(K, N, 8, self.codes, self.scales)

    def nodes(self, x: str, y: str, prefix: str) -> tuple[list, list]:
        """This map's ONNX nodes and initialisers y = x W^T inside a larger graph (map_nodes)."""
        return map_nodes(x, y, self.in_features, self.out_features, 8, self.codes, self.scales, prefix=prefix)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """x (M, K) float32 on the CPU -> (M, N) float32."""
        return torch.from_numpy(self._run(["y"], {"x": np.ascontiguousarray(x.numpy())}, None)[0])


class Q4Map:
    """A Q4_1 weight W = d q + m per block of 32 (q in 0..15, the GGUF's own numbers) in a MatMulNBits session.

        x W^T = [x (d (q - 8))^T]_MatMulNBits + xsum z^T,  z = m + 8 d (N, K/32),  xsum[:, b] = sum_{k in b} x[:, k]

    The first term is the 4-bit kernel at its default zero point 8; the blocks' minimum comes back through the
    float32 block sums of x (in the same session), so the weights are exactly the file's.
    """

    def __init__(self, codes: np.ndarray, d: torch.Tensor, m: torch.Tensor) -> None:
        """codes (N, K/32, 16) uint8, element 2j of a block in the low nibble of byte j; d, m (N, K/32)."""
        N, nb, _ = codes.shape
        if d.shape != (N, nb) or m.shape != d.shape:
            raise ValueError(f"need d, m of shape {(N, nb)}; got {tuple(d.shape)}, {tuple(m.shape)}")
        self.out_features, self.in_features = N, nb * BLOCK
        self.codes, self.d, self.m = codes, d.float().contiguous(), m.float().contiguous()  # kept to stack maps
        self.zt = (self.m + 8 * self.d).t().contiguous().numpy()  # (K/32, N)
        self._run = _session(self.in_features, N, 4, codes, self.d.numpy(), self.zt)

    def nodes(self, x: str, y: str, prefix: str) -> tuple[list, list]:
        """This map's ONNX nodes and initialisers y = x W^T inside a larger graph (map_nodes)."""
        return map_nodes(x, y, self.in_features, self.out_features, 4, self.codes, self.d.numpy(), self.zt, prefix)

    @classmethod
    def from_blocks(cls, q: torch.Tensor, d: torch.Tensor, m: torch.Tensor) -> Q4Map:
        """q (N, K) codes 0..15 with K a multiple of 32, d, m (N, K/32): W = d q + m per block."""
        N, K = q.shape
        if K % BLOCK:
            raise ValueError(f"need K a multiple of {BLOCK}; got q of shape {tuple(q.shape)}")
        nib = q.to(torch.uint8).numpy().reshape(N, K // BLOCK, BLOCK)
        return cls(np.ascontiguousarray(nib[..., 0::2] | (nib[..., 1::2] << 4)), d, m)

    @classmethod
    def stack(cls, maps: list[Q4Map]) -> Q4Map:
        """One map for W = [W_1; ...; W_n] stacked by rows, from the maps' own blocks."""
        return cls(np.concatenate([mp.codes for mp in maps]), torch.cat([mp.d for mp in maps]),
                   torch.cat([mp.m for mp in maps]))

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """x (M, K) float32 on the CPU -> (M, N) float32."""
        return torch.from_numpy(self._run(["y"], {"x": np.ascontiguousarray(x.numpy())}, None)[0])


def ort_linear(x: torch.Tensor, block_map: Q8Map | Q4Map) -> torch.Tensor:
    """x (M, K) float32 @ W^T -> (M, N) with W in 8- or 4-bit blocks of 32 and x in int8 blocks (module docstring)."""
    return block_map(x)
