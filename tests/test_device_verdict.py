"""The exact rule decides on the device and reads the host once per round (gpu_demo.sampler.exact_rule)."""

from __future__ import annotations

from unittest import mock

import pytest
import torch

from gpu_demo.sampler import SamplingConfig, accepted_count, exact_rule, first_miss

HOST_READS = ("tolist", "item", "__int__", "__float__", "__bool__", "__index__")


@pytest.mark.parametrize("seed", range(20))
def test_accepted_count_is_first_miss_without_leaving_the_device(seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    k = int(torch.randint(0, 7, (1,), generator=g))
    accept = torch.rand(k, generator=g) < 0.7
    assert accepted_count(accept).dim() == 0
    assert int(accepted_count(accept)) == first_miss(accept.tolist())


def _count_host_reads(fn) -> tuple[object, int]:
    """fn's result and how many times it read a tensor's value on the host."""
    reads = 0
    patches = []
    for name in HOST_READS:
        original = getattr(torch.Tensor, name)

        def counted(self, *a, _orig=original, **kw):
            nonlocal reads
            reads += 1
            return _orig(self, *a, **kw)

        patches.append(mock.patch.object(torch.Tensor, name, counted))
    for p in patches:
        p.start()
    try:
        return fn(), reads
    finally:
        for p in patches:
            p.stop()


@pytest.mark.parametrize("k", [0, 1, 4])
def test_one_host_read_per_round(k: int) -> None:
    g = torch.Generator().manual_seed(k)
    logits = torch.randn(k + 1, 50, generator=g)
    q = torch.softmax(torch.randn(k, 50, generator=g), -1)
    drafted = torch.multinomial(q, 1, generator=g).view(-1) if k else torch.zeros(0, dtype=torch.long)
    verdict, reads = _count_host_reads(lambda: exact_rule(logits, q, drafted, SamplingConfig(temperature=1.0), g))
    assert reads == 1
    assert 0 <= verdict.n_accepted <= k and len(verdict.accept_mask) == k
    # negative control: the counter sees a second read where one is added
    _, more = _count_host_reads(lambda: (exact_rule(logits, q, drafted, SamplingConfig(temperature=1.0), g),
                                         int(drafted.sum())))
    assert more == 2
