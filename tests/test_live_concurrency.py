"""A classroom on one server: simultaneous sessions queue for the shared model and never interleave on it.

* The FIFO queue under threads: one holder at a time, positions reported (its unit tests, a stopped waiter
  included, are in tests/test_live_queue.py).
* Why the queue is needed: two decoders interleaved on one model corrupt each other's KV cache (greedy
  output then differs from plain greedy decoding); run one after the other, both are exact.
* Five real browser sessions press Run together on one `streamlit run` server: each finishes with no
  exception, each greedy text equals its autoregressive baseline (so no run saw another's cache), and the
  server's resident memory after them is within 20% of what it was after one run (one shared model copy).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import torch
from browser_helpers import open_page, screenshot, wait_for_app
from doubles import streamlit_server

from gpu_demo.decode import autoregressive, speculative
from gpu_demo.drafters import ModelDrafter
from gpu_demo.live import queue
from gpu_demo.live.queue import TurnQueue
from gpu_demo.models.char import CharConfig, CharTransformer, WindowConfig, WindowMLP
from gpu_demo.sampler import SamplingConfig

ROOT = Path(__file__).resolve().parents[1]
GREEDY = SamplingConfig(temperature=0.0)


# ------------------------------------------------------------------------------------------- the queue


def test_queue_is_fifo_exclusive_and_reports_positions():
    q = TurnQueue()
    inside, max_inside, order, seen = [0], [0], [], {}
    lock = threading.Lock()
    holder = q.join()  # hold the model so that every worker has to wait and see a position

    def worker(i: int) -> None:
        def on_wait(pos: int) -> None:
            seen.setdefault(i, []).append(pos)
        with q.turn(on_wait):
            with lock:
                inside[0] += 1
                max_inside[0] = max(max_inside[0], inside[0])
                order.append(i)
            time.sleep(0.02)
            with lock:
                inside[0] -= 1

    threads = []
    for i in range(5):  # join in a known order
        threads.append(threading.Thread(target=worker, args=(i,)))
        threads[-1].start()
        while q.length() < i + 2:
            time.sleep(0.001)
    deadline = time.monotonic() + 10
    while len(seen) < 5 and time.monotonic() < deadline:  # every worker has reported its place while we hold it
        time.sleep(0.001)
    q.leave(holder)
    for t in threads:
        t.join(10)
    assert order == [0, 1, 2, 3, 4] and max_inside[0] == 1 and q.length() == 0
    assert all(seen[i][0] == i + 1 for i in range(5)), seen  # worker i had i + 1 runs ahead of it
    assert all(positions == sorted(positions, reverse=True) for positions in seen.values())


# ------------------------------------------------------------------------- why one run at a time matters


def _tiny_pair(seed: int = 0) -> tuple[CharTransformer, ModelDrafter]:
    torch.manual_seed(seed)
    target = CharTransformer(CharConfig(vocab_size=16, n_layer=1, n_head=2, d_model=32, max_seq_len=128)).eval()
    draft = WindowMLP(WindowConfig(vocab_size=16, window=4, d_emb=4, d_hidden=16, max_seq_len=128)).eval()
    return target, ModelDrafter(draft)


def test_interleaving_two_runs_on_one_model_breaks_them_and_the_queue_prevents_it():
    target, drafter = _tiny_pair()
    prompts = ([1, 2, 3, 4], [9, 8, 7, 6, 5, 4, 3])
    want = [[t for e in autoregressive(target, p, 30, GREEDY) for t in e.emitted] for p in prompts]
    # Sequential (what the queue enforces): both equal plain greedy decoding.
    seq = [
        [t for e in speculative(target, drafter, p, 30, gamma=3, sampling=GREEDY) for t in e.emitted] for p in prompts
    ]
    assert seq == want
    # Negative control: the same two runs interleaved round by round on the shared model.
    # It either raises (a cache or inference-mode clash) or silently emits the wrong tokens.
    gens = [speculative(target, drafter, p, 30, gamma=3, sampling=GREEDY) for p in prompts]
    outs: list[list[int]] = [[], []]
    done, broken = [False, False], False
    while not all(done) and not broken:
        for i, g in enumerate(gens):
            if not done[i]:
                try:
                    outs[i].extend(next(g).emitted)
                except StopIteration:
                    done[i] = True
                except (ValueError, RuntimeError):
                    broken = True
                    break
    assert broken or outs != want


# ------------------------------------------------------------------------------ five browser sessions


def _rss_kb(pid: int) -> int:
    """Resident set size of a process, from /proc/<pid>/status."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


@pytest.fixture
def own_server():
    """A dedicated `streamlit run` (its pid is what we measure); yields (url, pid)."""
    with streamlit_server("streamlit-concurrency.log") as (url, proc):
        yield url, proc.pid


QUERY = "maxnew=30&gamma=3&greedy=true&seed=0&repeats=1"
DONE_TEXT = "equals the autoregressive text"


def _run_and_wait(pg) -> list[str]:
    """Wait for the finished race; return the speculative and baseline texts shown."""
    pg.get_by_text(DONE_TEXT).first.wait_for(timeout=180_000)
    wait_for_app(pg, timeout_ms=120_000)
    race = '.st-key-race_texts [data-testid="stCode"]'  # the race's two texts (other sections have code blocks too)
    pg.wait_for_function(f"() => document.querySelectorAll('{race}').length == 2", timeout=60_000)
    return pg.locator(race).all_inner_texts()


@pytest.mark.browser
def test_five_sessions_share_one_model_without_interleaving(browser, own_server):
    url, pid = own_server
    first = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    open_page(first, url, "live", QUERY)
    first.locator(".st-key-run_btn button").first.click()
    reference = _run_and_wait(first)
    rss_one = _rss_kb(pid)
    assert len(reference) == 2 and reference[0] == reference[1] and reference[0].strip()

    contexts = [browser.new_context(viewport={"width": 1400, "height": 1000}) for _ in range(5)]
    pages = [c.new_page() for c in contexts]
    for pg in pages:
        open_page(pg, url, "live", QUERY)
    for pg in pages:  # press Run in all five as fast as the browser allows
        pg.locator(".st-key-run_btn button").first.click()
    texts = [_run_and_wait(pg) for pg in pages]
    rss_five = _rss_kb(pid)
    screenshot(pages[-1], "live-concurrency-last")
    for pg, shown in zip(pages, texts):
        assert pg.locator('[data-testid="stException"]').count() == 0
        assert pg.locator('[data-testid="stAlertContentError"]').count() == 0
        assert shown == reference  # the same greedy text as the lone run, in both columns
    print(
        f"\nstreamlit server RSS: after one run {rss_one / 1024:.1f} MiB, after five simultaneous runs "
        f"{rss_five / 1024:.1f} MiB (ratio {rss_five / rss_one:.3f})"
    )
    assert rss_five <= 1.2 * rss_one, (rss_one, rss_five)
    for c in contexts:
        c.close()


def test_cpu_runs_decode_on_one_thread_and_restore_the_count_after_overlapping_runs() -> None:
    """decode_threads: 1 thread inside (also when two runs overlap), the old count once the last one ends."""
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with queue.decode_threads("cpu"):
            assert torch.get_num_threads() == queue.CPU_DECODE_THREADS == 1
            with queue.decode_threads("cpu"):
                assert torch.get_num_threads() == 1
            assert torch.get_num_threads() == 1  # the outer run is still decoding
        assert torch.get_num_threads() == 2
        with queue.decode_threads("cuda"):  # the GPU path leaves the CPU thread count alone
            assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(old)


