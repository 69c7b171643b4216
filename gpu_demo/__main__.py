"""CLI: python -m gpu_demo {generate,bench,train} ... (argparse lives only here)."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path


def _gammas(text: str) -> list[int]:
    """'4', '1,2,4' or '1-8' -> list of ints."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi) + 1) if hi else [int(lo)])
    return out


def _options(pairs: list[str]) -> dict:
    """KEY=VALUE strings -> dict for a pair loader."""
    out = {}
    for kv in pairs:
        key, sep, value = kv.partition("=")
        if not sep:
            raise ValueError(f"--pair-option must look like KEY=VALUE; got {kv!r}")
        out[key] = value
    return out


def _loader_options(args: argparse.Namespace) -> dict:
    """Keyword options for the pair loader: --pair-option KEY=VALUE, plus --hf-target/--hf-draft."""
    opts = _options(args.pair_option)
    if args.hf_target:
        opts["target"] = args.hf_target
    if args.hf_draft:
        opts["draft"] = args.hf_draft
    return opts


def _sampling(args: argparse.Namespace):
    from gpu_demo.sampler import SamplingConfig
    return SamplingConfig(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p)


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pair", default="builtin", help="builtin | smollm2-lookup | smollm2-draft | hf")
    p.add_argument("--pair-option", action="append", default=[], metavar="KEY=VALUE",
                   help="option passed to the pair's loader (e.g. target=PATH draft=PATH for hf)")
    p.add_argument("--hf-target", default=None, metavar="PATH_OR_ID", help="pair 'hf': the target model")
    p.add_argument("--hf-draft", default=None, metavar="PATH_OR_ID", help="pair 'hf': the draft model")
    p.add_argument("--device", default="auto", help="auto (CUDA if present) | cpu | cuda")
    p.add_argument("--temperature", type=float, default=1.0, help="0 = greedy")
    p.add_argument("--top-k", type=int, default=0, help="0 = off")
    p.add_argument("--top-p", type=float, default=1.0, help="1 = off")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (default 1: batch-1 decoding of small models is latency-bound, and "
                        "OpenMP hand-offs cost milliseconds on a busy machine)")


def _add_constraint(p: argparse.ArgumentParser) -> None:
    """--regex R | --json-schema FILE | --lark FILE (issue 18: constrained decoding with llguidance)."""
    grp = p.add_mutually_exclusive_group()
    grp.add_argument("--regex", metavar="R", help="constrain the generated text to match the regular expression R")
    grp.add_argument("--json-schema", metavar="FILE", help="constrain the generated text to JSON valid under FILE")
    grp.add_argument("--lark", metavar="FILE", help="constrain the generated text to the Lark grammar in FILE")
    p.add_argument("--constrain-prompt", action="store_true",
                   help="the prompt is the start of the constrained text (raw continuations, e.g. the builtin pair)")


def _constraint_source(args: argparse.Namespace) -> tuple[str, str] | None:
    """(kind, source) from --regex / --json-schema FILE / --lark FILE, or None; ValueError if a file is unreadable."""
    if args.regex is not None:
        return "regex", args.regex
    for kind, path in (("json", args.json_schema), ("lark", args.lark)):
        if path is not None:
            try:
                return kind, Path(path).read_text()
            except OSError as exc:
                raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    return None


def _constraint(args: argparse.Namespace, pair, ids: list[int]):
    """The request's Constraint over the pair's tokenizer (None without one); ValueError with a plain message."""
    spec = _constraint_source(args)
    if spec is None:
        return None
    from gpu_demo.constraints import build

    return build(*spec, pair.tokenizer, pair.target.vocab_size, prefix=ids if args.constrain_prompt else ())


def cmd_generate(args: argparse.Namespace) -> int:
    """Print a generation with token kinds marked, then a stats line."""
    from gpu_demo.decode import autoregressive, run, speculative
    from gpu_demo.kinds import ANSI_RESET, KINDS, ansi
    from gpu_demo.measure.stats import overall_alpha
    from gpu_demo.pairs import load_pair

    t0 = time.perf_counter()
    pair = load_pair(args.pair, args.device, **_loader_options(args))
    load_s = time.perf_counter() - t0
    chat = bool(pair.info.get("chat")) and not args.raw
    text = pair.tokenizer.chat(args.prompt) if chat else args.prompt  # type: ignore[attr-defined]
    ids = pair.tokenizer.encode(text)
    stops = pair.info.get("stop_tokens", ())  # an instruct model's end-of-turn token ends the reply
    samp = _sampling(args)
    constraint = _constraint(args, pair, ids)
    if args.gamma == 0:
        gen = autoregressive(pair.target, ids, args.max_new_tokens, samp, seed=args.seed, stop_tokens=stops,
                             constraint=constraint)
    else:
        gen = speculative(pair.target, pair.drafter, ids, args.max_new_tokens, args.gamma, samp, seed=args.seed,
                          stop_tokens=stops, constraint=constraint)
    res = run(gen)
    colour = sys.stdout.isatty() and not args.plain
    out = [args.prompt + ("\n" if chat else "")]
    for e in res.events:
        for tok, kind in zip(e.emitted, e.kinds):
            if tok in stops:  # the end-of-turn token ends the reply; it is not part of it
                continue
            s = pair.tokenizer.piece(tok)
            if colour:
                out.append(f"{ansi(kind)}{s}{ANSI_RESET}" if ansi(kind) else s)
            else:
                a, b = KINDS[kind].plain
                out.append(f"{a}{s}{b}")
    print("".join(out))
    n_tok = len(res.tokens)
    dec_s = res.wall_s - res.events[0].prefill_s
    alpha = overall_alpha(res.events)
    shown = [k for k in ("accepted", "correction", "bonus") if any(k in e.kinds for e in res.events)]
    if colour:
        legend = "colours: " + ", ".join(f"{ansi(k)}{KINDS[k].label}{ANSI_RESET} ({KINDS[k].cue})" for k in shown)
    else:
        legend = "markers: plain = accepted draft (or target token), " + ", ".join(
            f"{KINDS[k].plain[0]}x{KINDS[k].plain[1]} = {KINDS[k].label}" for k in shown if k != "accepted")
    print(f"\n-- {legend}")
    print(
        f"-- pair {pair.name} on {pair.device} | gamma {args.gamma} | {samp.describe()} | {n_tok} tokens in "
        f"{len(res.events)} target passes ({n_tok / max(1, len(res.events)):.2f} tokens/pass) | "
        f"{'no draft (gamma 0)' if math.isnan(alpha) else f'alpha {alpha:.3f}'} | {n_tok / dec_s:.0f} tokens/s | "
        f"load {load_s:.2f} s"
    )
    if constraint is not None:
        state, detail = constraint.check(res.tokens)
        print(f"-- constraint {constraint.describe()}: {state}{(': ' + detail) if detail else ''}")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    """Run gpu_demo.measure.bench.measure and print (and optionally save) the table."""
    from gpu_demo.measure.bench import BUILTIN_PROMPTS, format_table, measure
    from gpu_demo.pairs import load_pair

    pair = load_pair(args.pair, args.device, **_loader_options(args))
    prompts = args.prompt or list(BUILTIN_PROMPTS)
    report = measure(pair, prompts, _gammas(args.gamma), _sampling(args), args.max_new_tokens, args.repeats, args.seed,
                     constraint=_constraint_source(args), constrain_prompt=args.constrain_prompt)
    print(format_table(report))
    if args.json:
        path = Path(args.json)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=2, default=str) + "\n")
        print(f"wrote {path}")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    """Train the built-in pair from a seed into gpu_demo/assets (or --out)."""
    from gpu_demo.training.char import main as train_main
    from gpu_demo.training.corpus import ASSETS

    builtin = [w for w in args.which if w != "smollm2-draft"]
    if builtin:
        train_main(
            builtin,
            seed=args.seed,
            out_dir=Path(args.out) if args.out else ASSETS,
            steps=args.steps,
            threads=args.threads,
            stop_after=args.stop_after,
            distill_steps=args.distill_steps,
        )
    if "smollm2-draft" in args.which:  # issue 7: distil the SmolLM2 draft (gpu_demo.training.smollm2_draft)
        from gpu_demo.training.smollm2_draft import main as smol_main

        smol_main(
            [f"--seed={args.seed}"]
            + ([f"--steps={args.steps}"] if args.steps else [])
            + ([f"--out={args.out}"] if args.out else [])
        )
    return 0


def build_parser() -> argparse.ArgumentParser:
    """Argument parser with the three subcommands."""
    ap = argparse.ArgumentParser(prog="python -m gpu_demo", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="generate text with token kinds marked")
    _add_common(g)
    _add_constraint(g)
    g.add_argument("--prompt", required=True)
    g.add_argument("--gamma", type=int, default=4, help="draft length (0 = plain autoregressive)")
    g.add_argument("--max-new-tokens", type=int, default=200)
    g.add_argument("--plain", action="store_true", help="markers instead of ANSI colours")
    g.add_argument(
        "--raw", action="store_true", help="for chat models (SmolLM2): send the prompt as is, without the chat template"
    )
    g.set_defaults(func=cmd_generate)
    b = sub.add_parser("bench", help="measured vs predicted speedup over gamma")
    _add_common(b)
    _add_constraint(b)
    b.add_argument("--gamma", default="1-8", help="e.g. 4, 1,2,4 or 1-8")
    b.add_argument("--max-new-tokens", type=int, default=200)
    b.add_argument("--repeats", type=int, default=3)
    b.add_argument("--prompt", action="append", help="prompt (repeatable); default: four Austen openings")
    b.add_argument(
        "--json",
        metavar="PATH",
        nargs="?",
        const="artifacts/live_bench.json",
        help="write the full report as JSON (default path: artifacts/live_bench.json)",
    )
    b.set_defaults(func=cmd_bench)
    t = sub.add_parser("train", help="train the built-in pair reproducibly from a seed")
    t.add_argument(
        "--which",
        nargs="+",
        default=["expert", "target", "draft"],
        choices=["expert", "target", "draft", "smollm2-draft"],
        help="which models (trained in the order expert, target, draft: the target needs the expert)",
    )
    t.add_argument("--seed", type=int, default=1234)
    t.add_argument("--steps", type=int, default=None, help="override the preset's schedule length")
    t.add_argument("--stop-after", type=int, default=None, help="keep the preset schedule, stop after N steps")
    t.add_argument(
        "--distill-steps",
        type=int,
        default=None,
        help="override the draft's distillation length (steps on the target's laws after the text)",
    )
    t.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's choice)")
    t.add_argument("--out", default=None, help="output directory (default gpu_demo/assets)")
    t.set_defaults(func=cmd_train)
    return ap


def main(argv: list[str] | None = None) -> int:
    """Entry point: clear one-line errors for bad input instead of tracebacks."""
    args = build_parser().parse_args(argv)
    if getattr(args, "threads", None):
        import torch

        torch.set_num_threads(args.threads)
    try:
        return args.func(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
