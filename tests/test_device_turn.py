"""The live page's runs and the roofline probe wait in one line per device, so a probe cannot skew a race."""

from __future__ import annotations

from pathlib import Path

from gpu_demo.live.queue import device_queue
from ui.live import pairs as lpairs


def test_every_pair_on_a_device_shares_the_probe_queue() -> None:
    q = device_queue("cpu")
    assert device_queue("cpu") is q and device_queue("cuda") is not q
    sp = lpairs.get_pair("builtin", "cpu")
    assert sp.error is None and sp.queue is q


def test_the_roofline_probe_takes_the_device_turn() -> None:
    src = (Path(__file__).resolve().parents[1] / "ui" / "roofline" / "probe.py").read_text()  # the probe section
    assert "device_queue(" in src and ".turn(" in src and "probe_lock" not in src
