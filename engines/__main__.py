"""python -m engines: the workload against the embedded llama.cpp (a speculative mode vs none) or a server by URL.

    python -m engines --mode self --gamma 4 --rule greedy --prompts 8 --tokens 64 --repeats 2 [--json PATH]
    SPECDEC_ENGINE_URLS=http://host:8000 python -m engines --url http://host:8000 [--base-url URL] --gamma 3 --c 0.1
"""

from __future__ import annotations

import argparse
import sys

from engines.client import Endpoint, EngineError, recognise
from engines.embedded import KINDS, MAX_GAMMA, RULES, EngineUnavailable, Mode, stop_all
from engines.workload import (
    MAX_PROMPTS,
    MAX_TOKENS,
    MAX_URL_GAMMA,
    Workload,
    as_dict,
    run_embedded,
    run_workload,
    table,
)
from gpu_demo.flags import CliParser, add_json, float_in, int_in
from gpu_demo.reports import check_report_path, write_report
from specdec_core.repeats import MAX_REPEATS


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The flags, each checked by gpu_demo.flags' types: a bad value is one line and exit 2, before any work."""
    ap = CliParser(prog="python -m engines", description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=[k for k in KINDS if k != "none"], default="self")
    ap.add_argument("--gamma", type=int_in(1, MAX_URL_GAMMA), default=4,
                    help=f"draft tokens per round: 1..{MAX_GAMMA} for the embedded server, 1..{MAX_URL_GAMMA} --url")
    ap.add_argument("--rule", choices=RULES, default="greedy", help="draft rule: sample-and-compare or min(1, p/q)")
    ap.add_argument("--threads", type=int_in(1, 16), default=1)
    ap.add_argument("--prompts", type=int_in(1, MAX_PROMPTS), default=8, help="the first N committed chat prompts")
    ap.add_argument("--tokens", type=int_in(1, MAX_TOKENS), default=64, help="new tokens per prompt")
    ap.add_argument("--temperature", type=float_in(0.0, 2.0), default=0.0)
    ap.add_argument("--repeats", type=int_in(1, MAX_REPEATS), default=2)
    ap.add_argument("--url", help="a running vLLM / SGLang / llama.cpp / TensorRT-LLM server (must be allow-listed)")
    ap.add_argument("--base-url", help="the same model without speculation, for the measured speedup")
    ap.add_argument("--c", type=float_in(0.0, 100.0), default=0.0,
                    help="with --url: the draft's cost per token in target steps")
    add_json(ap)
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    try:
        if args.json:
            check_report_path(args.json, args.force)
        work = Workload(args.prompts, args.tokens, args.temperature, args.repeats)
        if args.url:
            spec = Endpoint.from_url(args.url)
            base = Endpoint.from_url(args.base_url) if args.base_url else None
            engine = recognise(spec)
            result = run_workload(spec, engine, work, args.gamma, args.c, base=base,
                                  config={"engine": engine, "url": spec.base, "gamma": args.gamma, "c": args.c})
        else:
            result = run_embedded(Mode(args.mode, args.gamma, args.rule, args.threads), work)
    except (ValueError, EngineError, EngineUnavailable) as exc:  # RefusedPath is a ValueError
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        stop_all()
    print(table(result))
    if result.config.get("command"):
        print(f"\nsame as: {result.config['command']}")
    if args.json:
        print(f"wrote {write_report(args.json, as_dict(result), 'python -m engines', args.force)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
