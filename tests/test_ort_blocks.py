"""ONNX Runtime's 8- and 4-bit weight blocks (gpu_demo.models.ort_blocks) compute what the module says: each is
checked against the arithmetic written out in torch (weights per block of 32, activations rounded to int8 per row
and block), row by row alike, the Q4_1 minimum included; an outlier channel stays in its block, where fbgemm's
per-tensor rounding (the negative control) spreads it over every channel."""

from __future__ import annotations

import pytest
import torch

from gpu_demo.models import quant
from gpu_demo.models.ort_blocks import BLOCK, Q4Map, Q8Map, q8_dequant, q8_from_float

pytestmark = pytest.mark.usefixtures("one_torch_thread")
if quant.quant_unavailable_reason("int8"):
    pytest.skip(quant.quant_unavailable_reason("int8"), allow_module_level=True)


def _x(m: int, k: int, seed: int = 1) -> torch.Tensor:
    return torch.randn(m, k, generator=torch.Generator().manual_seed(seed))  # (M, K)


def _rounded(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x (M, K) -> (r (M, K/32, 32) integers, t (M, K/32)): r = round(x / t), t = max |x| / 127 per block."""
    xb = x.double().reshape(x.shape[0], -1, BLOCK)
    t = xb.abs().amax(-1) / 127
    return torch.round(xb / torch.where(t > 0, t, 1)[..., None]), t


def test_q8_blocks_give_a_q8_0_weight_back_as_its_own_numbers() -> None:
    g = torch.Generator().manual_seed(0)
    q = torch.randint(-126, 127, (8, 64), generator=g).to(torch.int8)
    q[:, 0], q[:, 32] = 127, -127  # each block reaches +-127 s, as llama.cpp's Q8_0 quantiser makes it
    s = torch.rand(8, 2, generator=g) * 0.01 + 1e-3
    w = q8_dequant(q, s, 64)
    q2, s2 = q8_from_float(w)
    assert torch.equal(q2, q)
    torch.testing.assert_close(s2, s, rtol=1e-6, atol=0)


def test_q8_map_is_the_block_arithmetic_written_out() -> None:
    w = _x(40, 96, seed=2) * 0.05  # (N, K)
    x = _x(3, 96)
    q, s = q8_from_float(w)
    r, t = _rounded(x)
    want = torch.einsum("mbk,nbk,mb,nb->mn", r, q.double().reshape(40, -1, BLOCK), t, s.double())
    got = Q8Map(w)(x)
    assert got.shape == (3, 40) and got.dtype == torch.float32
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5)
    plain = x.double() @ w.double().t()
    assert float((got.double() - plain).norm() / plain.norm()) > 1e-5  # the rounding is really there


def test_q4_map_is_the_q4_1_weight_with_its_minimum() -> None:
    q, d, m = quant.int4_from_float(_x(24, 64, seed=3) * 0.05)
    x = _x(4, 64, seed=4)
    r, t = _rounded(x)
    xsum = x.double().reshape(4, -1, BLOCK).sum(-1)  # (M, K/32)
    qb = q.double().reshape(24, -1, BLOCK)
    want = (torch.einsum("mbk,nbk,mb,nb->mn", r, qb - 8, t, d.double())
            + xsum @ (m.double() + 8 * d.double()).t())
    got = Q4Map.from_blocks(q, d, m)(x)
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5)
    exact = x.double() @ quant.int4_dequant(q, d, m).double().t()
    assert float((got.double() - exact).norm() / exact.norm()) < 0.02  # near the file's weights exactly


def test_rows_are_rounded_alone_so_a_verify_pass_computes_what_single_steps_do() -> None:
    w = _x(48, 96, seed=5) * 0.05
    x = _x(6, 96, seed=6)
    x[2] *= 50  # one loud row must not change how the others are rounded
    for block_map in (Q8Map(w), Q4Map.from_blocks(*quant.int4_from_float(w))):
        together = block_map(x)
        alone = torch.cat([block_map(x[i : i + 1]) for i in range(6)])
        torch.testing.assert_close(together, alone, rtol=1e-6, atol=1e-5)


def test_stacked_q4_maps_are_the_maps_side_by_side() -> None:
    maps = [Q4Map.from_blocks(*quant.int4_from_float(_x(n, 64, seed=n) * 0.05)) for n in (16, 8, 8)]
    x = _x(2, 64)
    torch.testing.assert_close(Q4Map.stack(maps)(x), torch.cat([mp(x) for mp in maps], dim=1), rtol=1e-6, atol=1e-6)


def test_an_outlier_channel_stays_in_its_block_where_per_tensor_rounding_spreads_it() -> None:
    """Rounded per block, y(x) = y(x's loud block alone) + y(the rest): the outlier changes no other block's
    rounding. fbgemm's per-tensor rounding (the negative control) breaks this: one scale serves every channel."""
    w = _x(64, 128, seed=7) * 0.05
    x = _x(1, 128, seed=8)
    x[0, 5] = 300.0  # a massive activation, as SmolLM2 has in a few channels
    loud, rest = torch.zeros_like(x), x.clone()
    loud[0, :BLOCK], rest[0, :BLOCK] = x[0, :BLOCK], 0

    def split_gap(f) -> float:
        whole, parts = f(x).double(), f(loud).double() + f(rest).double()
        return float((whole - parts).norm() / f(rest).double().norm())

    per_tensor = quant.fbgemm_int8_pack(w)
    assert split_gap(Q8Map(w)) < 1e-5
    assert split_gap(lambda v: quant.fbgemm_int8_linear(v, per_tensor)) > 0.1


def test_bad_blocks_are_refused() -> None:
    q, d, m = quant.int4_from_float(_x(8, 64) * 0.05)
    with pytest.raises(ValueError, match="multiple of 32"):
        Q4Map.from_blocks(q[:, :40], d, m)
    with pytest.raises(ValueError, match="need d, m"):
        Q4Map.from_blocks(q, d[:, :1], m)


def test_onnx_models_are_written_at_an_ir_older_runtimes_read() -> None:
    """The int8/int4 graphs go out at IR 10 at the newest (onnxruntime 1.30 refused IR 14), and still run."""
    pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper

    from gpu_demo.models.ort_blocks import IR_VERSION, model_of, session

    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    assert model_of(graph, 18).ir_version <= IR_VERSION == 10
    import numpy as np

    assert session(graph, 18).run(None, {"x": np.array([-1.0, 2.0], dtype=np.float32)})[0].tolist() == [0.0, 2.0]
