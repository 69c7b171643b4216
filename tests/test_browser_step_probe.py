"""Real browser: the step probe that bench/ui_latency.py times steps with (harness.serving.STEP_PROBE_JS) finds exactly
the app's script_finished messages, with their status, and times a slider step on the page's clock."""

import pytest
from browser_helpers import nudge_slider, open_page, run_log

from harness.serving import STEP_PROBE_JS

pytestmark = pytest.mark.browser

SCAN = "a => window.__stepProbe.finished(new Uint8Array(a).buffer)"


def test_probe_finds_every_run_end_and_nothing_else(page, streamlit_url):
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    page.context.add_init_script(STEP_PROBE_JS)
    frames: list[bytes] = []
    page.on("websocket", lambda ws: ws.on(
        "framereceived", lambda p: frames.append(bytes(p)) if isinstance(p, (bytes, bytearray)) else None))
    for path, slider in (("proof", "proof-sseed__slider"), ("algebra", "algebra-alpha__slider")):
        seen = len(run_log(page))                              # a new document and websocket per page
        open_page(page, streamlit_url, path)                   # a full run
        nudge_slider(page, slider)                             # a fragment rerun
        # the page saw the run ends the wire did, one keydown, the step's end after it, and a drawn moment
        # after each end
        probe = page.evaluate("() => window.__stepProbe")
        assert len(probe["fin"]) == len(run_log(page)) - seen >= 2, path
        assert len(probe["key"]) == 1 and probe["fin"][-1] > probe["key"][0] > probe["fin"][0], path
        page.wait_for_function("() => !window.__stepProbe.drawn.includes(null)")
        probe = page.evaluate("() => window.__stepProbe")
        assert all(d >= f for f, d in zip(probe["fin"], probe["drawn"], strict=True)), path

    kinds = set()
    for f in frames:                                          # the probe's scan against Streamlit's decoding
        msg = ForwardMsg.FromString(f)
        want = msg.script_finished if msg.WhichOneof("type") == "script_finished" else None
        assert page.evaluate(SCAN, list(f)) == want, msg.WhichOneof("type")
        if want is not None:
            kinds.add(ForwardMsg.ScriptFinishedStatus.Name(want))
    assert {"FINISHED_SUCCESSFULLY", "FINISHED_FRAGMENT_RUN_SUCCESSFULLY"} <= kinds, kinds

    # negative controls: a message that merely ends in field 6's bytes, or a run's end cut short, is no run's end
    delta = next(f for f in frames if ForwardMsg.FromString(f).WhichOneof("type") == "delta")
    end = next(f for f in frames if ForwardMsg.FromString(f).WhichOneof("type") == "script_finished")
    assert page.evaluate(SCAN, list(delta + b"\x30\x00")) is None
    assert page.evaluate(SCAN, list(end[:-3])) is None
    assert page.evaluate(SCAN, list(end[:-1] + b"\x80")) is None   # a varint that never ends
