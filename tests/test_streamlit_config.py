"""The app's Streamlit settings (.streamlit/config.toml, read by `make run` and every test server): the two that
cost a slider step most stay off."""

from __future__ import annotations

import tomllib
from pathlib import Path

CONFIG = Path(__file__).resolve().parents[1] / ".streamlit" / "config.toml"


def test_no_forced_gc_after_every_run_and_no_file_watcher() -> None:
    """runner.postScriptGC (default on) runs gc.collect(2) after every run, fragment reruns included: over a heap
    holding torch and plotly it was the live server's largest cost in an algebra slider step (py-spy): medians
    0.69-0.79 s with it, 0.25-0.31 s without, on this 2-core machine. A file watcher polls the project's modules."""
    cfg = tomllib.loads(CONFIG.read_text())
    assert cfg["runner"]["postScriptGC"] is False
    assert cfg["server"]["fileWatcherType"] == "none" and cfg["server"]["runOnSave"] is False
