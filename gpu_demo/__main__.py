"""CLI: python -m gpu_demo {generate,bench,train,probe} ... (checked flag types: gpu_demo.flags)."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from gpu_demo.flags import (
    SEED_MAX,
    CliParser,
    add_device,
    add_gamma,
    add_json,
    add_max_new_tokens,
    add_temperature,
    add_threads,
    float_in,
    int_in,
    parse,
    path_text,
)
from gpu_demo.reports import write_report

SHIPPED = Path(__file__).resolve().parent / "assets"
MAX_OPTION_INT = 1 << 20  # an integer --pair-option (max_len, max_ngram, ...)


def _coerce(key: str, value: str, annotation: str) -> object:
    """A --pair-option value as the loader's parameter type (read from its annotation)."""
    import torch

    if "dtype" in annotation:
        dtype = getattr(torch, value, None)
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise ValueError(f"--pair-option {key}={value}: not a floating-point torch dtype (for example float32, "
                             "bfloat16)")
        return dtype
    if "Path" in annotation:
        return Path(value)
    if "int" in annotation.split("|")[0]:
        try:
            number = int(value)
        except ValueError:
            raise ValueError(f"--pair-option {key}={value}: {key} must be an integer") from None
        if not 1 <= number <= MAX_OPTION_INT:  # lengths and n-gram sizes: 0 is not a length
            raise ValueError(f"--pair-option {key}={value}: {key} must be in 1 to {MAX_OPTION_INT}")
        return number
    return value


def _options(pair: str, pairs: list[str]) -> dict:
    """KEY=VALUE strings -> the pair loader's keyword arguments, each checked against its signature."""
    import inspect

    from gpu_demo.pairs import PAIRS, resolve_loader

    spec = PAIRS.get(pair)
    params = {} if spec is None else dict(list(inspect.signature(resolve_loader(spec.loader)).parameters.items())[1:])
    out: dict[str, object] = {}
    for kv in pairs:
        key, sep, value = kv.partition("=")
        if not sep or not key:
            raise ValueError(f"--pair-option must look like KEY=VALUE; got {kv!r}")
        if key not in params:
            raise ValueError(f"--pair-option {key!r} is not an option of pair {pair!r}; it takes: "
                             f"{', '.join(params) or 'none'}")
        out[key] = _coerce(key, value, str(params[key].annotation))
    return out


def _loader_options(args: argparse.Namespace) -> dict:
    """Keyword options for the pair loader: --pair-option KEY=VALUE, plus --hf-target/--hf-draft."""
    opts = _options(args.pair, args.pair_option)
    if args.hf_target:
        opts["target"] = args.hf_target
    if args.hf_draft:
        opts["draft"] = args.hf_draft
    return opts


def _sampling(args: argparse.Namespace):
    from gpu_demo.sampler import SamplingConfig
    return SamplingConfig(temperature=args.temperature, top_k=args.top_k, top_p=args.top_p)


def _add_common(p: argparse.ArgumentParser) -> None:
    from gpu_demo.pairs import PAIRS

    p.add_argument("--pair", default="builtin", choices=list(PAIRS), help="the target/draft pair")
    p.add_argument("--pair-option", action="append", default=[], metavar="KEY=VALUE",
                   help="option passed to the pair's loader (e.g. target=PATH draft=PATH for hf)")
    p.add_argument("--hf-target", default=None, metavar="PATH_OR_ID", help="pair 'hf': the target model")
    p.add_argument("--hf-draft", default=None, metavar="PATH_OR_ID", help="pair 'hf': the draft model")
    add_device(p)
    add_temperature(p)
    p.add_argument("--top-k", type=int_in(0, 10**7), default=0, help="0 = off")
    p.add_argument("--top-p", type=float_in(1e-9, 1.0), default=1.0, help="1 = off")
    p.add_argument("--seed", type=int_in(0, SEED_MAX), default=0)
    add_threads(p)


def _add_constraint(p: argparse.ArgumentParser) -> None:
    """--regex R | --json-schema FILE | --lark FILE (constrained decoding with llguidance)."""
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
    from gpu_demo.constraints import read_source

    for kind, path in (("json", args.json_schema), ("lark", args.lark)):
        if path is not None:
            return kind, read_source(path, "JSON schema" if kind == "json" else "Lark grammar")
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
    text = pair.tokenizer.user_turn(args.prompt) if chat else args.prompt  # type: ignore[attr-defined]
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
    if not math.isnan(alpha):  # vLLM's names for the same rounds
        from specdec_core.vllm_metrics import counts_from_rounds

        vl = counts_from_rounds([e.k for e in res.events], [e.n_accepted for e in res.events], args.gamma)
        print(f"-- vLLM: acceptance rate {vl.acceptance_rate():.3f} (accepted / drafted tokens), mean acceptance "
              f"length {vl.mean_acceptance_length():.3f} (1 + accepted / drafts), per-position rates "
              f"{', '.join(f'{x:.3f}' for x in vl.per_position_rates())} (unconditional: drafts with the first j "
              "accepted / drafts)")
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
    report = measure(pair, prompts, args.gamma, _sampling(args), args.max_new_tokens, args.repeats, args.seed,
                     constraint=_constraint_source(args), constrain_prompt=args.constrain_prompt)
    print(format_table(report))
    if args.json:
        print(f"wrote {write_report(args.json, report, 'python -m gpu_demo bench', args.force)}")
    return 0


def cmd_train(args: argparse.Namespace) -> int:
    """Train the built-in pair from a seed into gpu_demo/assets (or --out)."""
    from gpu_demo.training.char import main as train_main
    from gpu_demo.training.corpus import ASSETS

    out = args.out or ASSETS  # checked by flags.parse before any work: inside the packages only with --force
    builtin = [w for w in args.which if w not in ("smollm2-draft", "smollm2-eagle")]
    if builtin:
        train_main(
            builtin,
            seed=args.seed,
            out_dir=out,
            steps=args.steps,
            threads=args.threads,
            stop_after=args.stop_after,
            distill_steps=args.distill_steps,
        )
    if "smollm2-draft" in args.which:  # distil the SmolLM2 draft (gpu_demo.training.smollm2_draft)
        from gpu_demo.training.smollm2_draft import SmolDraftConfig, train

        cfg = SmolDraftConfig(seed=args.seed, **({"steps": args.steps} if args.steps else {}))
        print(json.dumps(train(cfg, out)["final"], indent=1))
    if "smollm2-eagle" in args.which:  # the feature-level draft (gpu_demo.training.eagle)
        from gpu_demo.training.eagle import EagleTrainConfig, train_logged

        ecfg = EagleTrainConfig(seed=args.seed, **({"steps": args.steps} if args.steps else {}))
        print(json.dumps(train_logged(ecfg, out)["final"], indent=1))
    return 0


def cmd_probe(args: argparse.Namespace) -> int:
    """Time a decoder's linear layers at 1, 2, 4, ... tokens per pass against the roofline model."""
    from gpu_demo.measure.probe import PROBE_SHAPES, format_table, probe, run_to_end

    res = run_to_end(probe(PROBE_SHAPES[args.shape], args.device, args.max_tokens, args.budget, threads=args.threads,
                           weights=args.weights),
                     lambda ev: print(f"[{ev.fraction:4.0%}] {ev.message}", flush=True))
    print(format_table(res))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """Argument parser with the three subcommands."""
    ap = CliParser(prog="python -m gpu_demo", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="generate text with token kinds marked")
    _add_common(g)
    _add_constraint(g)
    g.add_argument("--prompt", required=True)
    add_gamma(g, "4", single=True)
    add_max_new_tokens(g)
    g.add_argument("--plain", action="store_true", help="markers instead of ANSI colours")
    g.add_argument(
        "--raw", action="store_true",
        help="for chat models (SmolLM2): send the prompt as is, without the chat template "
        "(a prompt already holding <|im_start|> is sent as is anyway)",
    )
    g.set_defaults(func=cmd_generate)
    b = sub.add_parser("bench", help="measured vs predicted speedup over gamma")
    _add_common(b)
    _add_constraint(b)
    add_gamma(b, "1-8")
    add_max_new_tokens(b)
    b.add_argument("--repeats", type=int_in(1, 1000), default=3)
    b.add_argument("--prompt", action="append", help="prompt (repeatable); default: four Austen openings")
    add_json(b, const="artifacts/live_bench.json")
    b.set_defaults(func=cmd_bench)
    t = sub.add_parser("train", help="train the built-in pair reproducibly from a seed")
    t.add_argument(
        "--which",
        nargs="+",
        default=["expert", "target", "draft"],
        choices=["expert", "target", "draft", "smollm2-draft", "smollm2-eagle"],
        help="which models (trained in the order expert, target, draft: the target needs the expert)",
    )
    t.add_argument("--seed", type=int_in(0, SEED_MAX), default=1234)
    t.add_argument("--steps", type=int_in(1, 10**7), default=None, help="override the preset's schedule length")
    t.add_argument("--stop-after", type=int_in(1, 10**7), default=None,
                   help="keep the preset schedule, stop after N steps")
    t.add_argument(
        "--distill-steps",
        type=int_in(0, 10**7),
        default=None,
        help="override the draft's distillation length (steps on the target's laws after the text)",
    )
    add_threads(t, default=None)
    t.add_argument("--out", type=path_text, default=None, help="output directory (default gpu_demo/assets, which "
                   "needs --force: it holds the shipped weights)")
    t.add_argument("--force", action="store_true", help="allow overwriting the shipped weights in gpu_demo/assets")
    t.set_defaults(func=cmd_train)
    from gpu_demo.measure.probe import PROBE_FORMATS, PROBE_SHAPES

    pr = sub.add_parser("probe", help="time linear layers at growing tokens per pass (the roofline probe)")
    pr.add_argument("--shape", choices=list(PROBE_SHAPES), default="Llama-3.2-1B, 1 layer")
    add_device(pr)
    pr.add_argument("--max-tokens", type=int_in(1, 65536), default=512)
    pr.add_argument("--budget", type=float_in(0.1, 3600.0), default=None, help="seconds, about (default: the shape's)")
    add_threads(pr, default=None)
    pr.add_argument("--weights", choices=list(PROBE_FORMATS), default="float32", help="weight format (CPU kernels)")
    pr.set_defaults(func=cmd_probe)
    return ap


def main(argv: list[str] | None = None) -> int:
    """Entry point: clear one-line errors for bad input instead of tracebacks."""
    args = parse(build_parser(), argv, default_out=SHIPPED)  # refused paths and bad values: exit 2, one line
    try:
        return args.func(args)
    except (ValueError, OSError) as exc:  # bad input or an unreadable/unwritable file: one line, no traceback
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
