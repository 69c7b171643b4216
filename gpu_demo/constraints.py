"""Constrained decoding: an llguidance matcher over the model's own tokenizer, as one small object.

A :class:`Constraint` holds the parser state of one request. At its current ``position`` (tokens consumed
since the start of the constrained text) it gives the allowed-token ``mask``; ``consume`` advances it,
``rollback(n)`` undoes the last n tokens. The requested law at a position is the processed law of the
*masked* logits (-inf outside the allowed set): with temperature only, that is the target's law restricted
to the allowed tokens and renormalised, sum_{x in A} p(x) = 1. Top-k and top-p then act within the allowed set.

Speculative decoding keeps that law exactly when (i) the draft samples from its own masked law, which is
the q the rule uses, advancing the matcher one drafted token at a time; (ii) the target's law at each
drafted position is masked with the mask of that position's own prefix (the masks the draft used, kept here
by position so nothing is computed twice); (iii) after the verdict the matcher rolls back to the accepted
prefix and consumes the correction or bonus. Forgetting (iii) leaves the rejected drafts in the parser.

The constraint engine is llguidance (regexes, JSON schemas, Lark grammars); nothing here parses text. The
constrained text ends with the tokenizer's end token: SmolLM2's ``<|im_end|>``; for the character pair,
whose alphabet has no end-of-text symbol, the newline plays that part (so a constrained text is one line).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from gpu_demo import compile_worker

KINDS = ("regex", "json", "lark")
JSON_OPTIONS = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}
MAX_SOURCE_BYTES = 32_000  # a constraint's source, page or CLI (its compile time: compile_worker's limit)
MAX_DEPTH = 32  # JSON schema nesting: deeper schemas are refused before they reach a RecursionError
KEEP_MASKS = 64  # masks kept behind the current position (a round rolls back at most gamma <= 16)
_LLTOKENIZERS: dict[int, tuple] = {}  # id(tokenizer) -> (tokenizer, LLTokenizer, key, spec)


class ConstraintError(ValueError):
    """A constraint that cannot be used: invalid source, violated by the prompt, allowing nothing, or refused."""


def _limit_error(error: str) -> bool:
    """Whether llguidance's error is one of its resource limits (items, lexer fuel, grammar size), not a mismatch."""
    return "limit" in error.lower() or "fuel" in error.lower()


def _depth(doc: object) -> int:
    """Nesting depth of a parsed JSON value (lists and objects), computed without recursion."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, d)
            if d <= MAX_DEPTH:  # deeper than the cap is enough to know
                stack.extend((v, d + 1) for v in (node.values() if isinstance(node, dict) else node))
    return deepest


def read_source(path: str, kind: str) -> str:
    """The text of a constraint file, read at most MAX_SOURCE_BYTES + 1 bytes (so /dev/zero ends at once)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_SOURCE_BYTES + 1)
    except OSError as exc:
        raise ConstraintError(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(data) > MAX_SOURCE_BYTES:
        raise ConstraintError(f"the {kind} file {path} is over the limit of {MAX_SOURCE_BYTES:,} bytes "
                              "(it bounds the time to compile it)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConstraintError(f"the {kind} file {path} is not UTF-8 text (byte {exc.start})") from None


def check_source(kind: str, source: str) -> None:
    """ConstraintError when a source is over MAX_SOURCE_BYTES or is not encodable text (a lone surrogate)."""
    try:
        size = len(source.encode("utf-8"))
    except UnicodeEncodeError as exc:
        bad = source[exc.start]
        raise ConstraintError(f"the {kind} contains a lone surrogate U+{ord(bad):04X} at character {exc.start}, "
                              "which is not text (UTF-8 cannot encode it)") from None
    if size > MAX_SOURCE_BYTES:
        raise ConstraintError(f"the {kind} is {size:,} bytes; the limit is {MAX_SOURCE_BYTES:,} bytes "
                              "(it bounds the time to compile it)")


# ------------------------------------------------------------------------------------------- tokenizers


def _spec(tokenizer) -> list:
    """compile_worker's spec of a gpu_demo tokenizer: SmolLM2's saved JSON and end-of-turn, or the characters."""
    if hasattr(tokenizer, "tk") and hasattr(tokenizer, "eos_token_id"):  # SmolTokenizer (tokenizers.Tokenizer)
        return ["bpe", tokenizer.tk.to_str(), int(tokenizer.vocab_size), int(tokenizer.eos_token_id)]
    if hasattr(tokenizer, "chars"):  # CharTokenizer
        if "\n" not in tokenizer.chars:
            raise ConstraintError("this character vocabulary has no newline to end a constrained text")
        return ["chars", tokenizer.chars, tokenizer.chars.index("\n")]
    raise ConstraintError(f"constraints need a SmolLM2 or character tokenizer; got {type(tokenizer).__name__}")


def _entry(tokenizer) -> tuple[object, object, str, list]:
    """(tokenizer, LLTokenizer, key, spec), built once per tokenizer object (~0.5 s for SmolLM2's BPE)."""
    hit = _LLTOKENIZERS.get(id(tokenizer))
    if hit is None or hit[0] is not tokenizer:
        spec = _spec(tokenizer)
        key = hashlib.sha256(json.dumps(spec).encode()).hexdigest()[:16]
        hit = _LLTOKENIZERS[id(tokenizer)] = (tokenizer, compile_worker.lltokenizer(spec), key, spec)
    return hit


def lltokenizer_for(tokenizer) -> tuple[object, int]:
    """(llguidance tokenizer, end token id) for a gpu_demo tokenizer; built once per tokenizer object.

    SmolLM2's ``tokenizers`` tokenizer is saved to the JSON llguidance reads, with its end-of-turn token as the
    end; a CharTokenizer maps each character to its byte string, the newline being the end marker.
    """
    llt = _entry(tokenizer)[1]
    return llt, int(llt.eos_token)


# ------------------------------------------------------------------------------------------- the object


def _tidy(message: str) -> str:
    """llguidance's validation message on one line, without caret lines, the echoed grammar and the position."""
    keep = [ln.strip() for ln in message.splitlines() if ln.strip() and set(ln.strip()) != {"^"} and "|" not in ln[:8]]
    text = " ".join(keep)
    return text.split(": ", 1)[1] if text.startswith("at ") and ": " in text else text


def _first_line(message: str) -> str:
    """llguidance's error text up to its state dump (the first line), without the '<state>' block."""
    return message.split("\n<state>", 1)[0].strip().splitlines()[0] if message.strip() else "unknown error"


@dataclass
class Constraint:
    """One request's parser state: mask at the current position, consume, rollback; masks kept by position.

    ``prefix`` are the prompt tokens that belong to the constrained text (the whole prompt for a raw text
    continuation, none for a chat reply); :meth:`reset` consumes them. ``position`` counts tokens consumed
    after the prefix. ``mask_s``/``n_masks`` accumulate the time and number of mask computations.
    """

    matcher: object  # llguidance.LLMatcher
    vocab_size: int
    end_token: int
    kind: str
    source: str
    prefix: tuple[int, ...] = ()
    position: int = 0
    mask_s: float = 0.0
    n_masks: int = 0
    _masks: dict[int, torch.Tensor] = field(default_factory=dict, repr=False)
    _bits: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32), repr=False)

    def __post_init__(self) -> None:
        self._bits = np.full((1, (self.vocab_size + 31) // 32), -1, dtype=np.int32)  # llguidance's bitmask layout
        self._pristine = self.matcher.deep_copy()  # an error state is sticky: reset() starts from this copy
        self.reset()

    # -- state
    def reset(self) -> None:
        """Back to the start of the constrained text, then consume the prefix; ConstraintError if it cannot."""
        if self.matcher.is_error():
            self.matcher = self._pristine.deep_copy()
        self.matcher.reset()
        self._masks.clear()
        self.position = 0
        if self.prefix and not self.matcher.consume_tokens(list(self.prefix)):
            error = _first_line(self.matcher.get_error())
            if _limit_error(error):
                raise ConstraintError(f"the {self.kind} is beyond the constraint engine's limits: {error}")
            raise ConstraintError(f"the prompt already violates the constraint: {error}")
        self.position = 0

    @property
    def finished(self) -> bool:
        """The text is complete: nothing but the end token can follow (or the matcher is in an error state)."""
        return bool(self.matcher.is_stopped())

    def mask(self) -> torch.Tensor:
        """Allowed tokens at the current position, bool (V,) on the CPU; computed once per position and prefix."""
        hit = self._masks.get(self.position)
        if hit is not None:
            return hit
        t0 = time.perf_counter()
        self.matcher.unsafe_compute_mask_ptr(self._bits.ctypes.data, self._bits.nbytes)
        bits = np.unpackbits(self._bits.view(np.uint8), bitorder="little")[: self.vocab_size]
        allowed = torch.from_numpy(bits.astype(np.bool_))  # (V,)
        self.mask_s += time.perf_counter() - t0
        self.n_masks += 1
        self._masks[self.position] = allowed
        return allowed

    def masks(self, start: int) -> torch.Tensor:
        """Masks at positions start..position (each of its own prefix), bool (position - start + 1, V)."""
        return torch.stack([self._masks[i] for i in range(start, self.position)] + [self.mask()])

    def allows(self, token: int) -> bool:
        """Whether token is allowed at the current position."""
        return bool(self.mask()[int(token)])

    def consume(self, tokens: Sequence[int] | torch.Tensor) -> None:
        """Advance by tokens (each must be allowed); ConstraintError with the matcher's message otherwise."""
        for tok in torch.as_tensor(tokens).view(-1).tolist():
            for pos in [p for p in self._masks if p > self.position or p < self.position - KEEP_MASKS]:
                del self._masks[pos]  # after here: another prefix's; long before: never needed again
            if not self.matcher.consume_token(int(tok)):
                raise ConstraintError(f"the parser refused token {tok}: {_first_line(self.matcher.get_error())}")
            self.position += 1

    def consume_allowed(self, tokens: Sequence[int]) -> int:
        """Consume the longest allowed prefix of tokens; returns its length (a deterministic draft's truncation)."""
        n = 0
        for tok in tokens:
            if self.finished or not self.allows(tok):
                break
            self.consume([tok])
            n += 1
        return n

    def rollback(self, n: int) -> None:
        """Undo the last n consumed tokens (0 <= n <= position); masks up to the new position stay valid."""
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= self.position:
            raise ValueError(f"parser rollback must be an integer in [0, {self.position}]; got {n!r}")
        if n and not self.matcher.rollback(n):
            raise ConstraintError(f"the parser could not roll back {n} tokens: {_first_line(self.matcher.get_error())}")
        self.position -= n

    # -- laws
    def restrict(self, logits: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """logits with -inf outside the allowed set: (..., V); mask defaults to the current position's."""
        allowed = (self.mask() if mask is None else mask).to(logits.device)
        return logits.masked_fill(~allowed, float("-inf"))

    # -- checks
    def check(self, ids: Sequence[int]) -> tuple[str, str]:
        """Does the prefix + ids satisfy the constraint? ('complete' | 'unfinished' | 'violated', detail).

        Uses a fresh copy of the matcher, so the request's own state is untouched. The end token, if present,
        ends the text; 'unfinished' means valid so far but cut before the end (e.g. at max_new_tokens).
        """
        m = self.matcher.deep_copy()
        m.reset()
        m.consume_tokens(list(self.prefix))
        ids = [int(t) for t in ids]
        for i, tok in enumerate(ids):
            if not m.consume_token(tok):
                return "violated", f"token {i} ({tok}) is not allowed: {_first_line(m.get_error())}"
            if tok == self.end_token:
                return ("complete", "") if m.is_accepting() else ("violated", "ended before the text was complete")
        return ("complete", "") if m.is_stopped() and m.is_accepting() else ("unfinished", "valid so far, not ended")

    def text_ids(self, ids: Sequence[int]) -> list[int]:
        """The constrained text's tokens, the ones :meth:`check` reads: the prefix, then ids up to the end token."""
        ids = [int(t) for t in ids]
        cut = ids.index(self.end_token) if self.end_token in ids else len(ids)
        return [*self.prefix, *ids[:cut]]

    def check_json(self, ids: Sequence[int], decode) -> tuple[str, str, object]:
        """:meth:`check` plus, when 'complete', the constrained text parsed by json.loads: (state, detail, value).

        One verdict for a JSON-schema request: the text parsed is :meth:`text_ids` decoded (on a raw-text pair
        the prompt is its start), so a value comes only with 'complete'; a text the matcher accepted and
        json.loads refuses is 'violated' with json's complaint, never 'complete'. value is None unless complete.
        """
        state, detail = self.check(ids)
        if state != "complete":
            return state, detail, None
        try:
            return state, detail, json.loads(decode(self.text_ids(ids)))
        except (json.JSONDecodeError, RecursionError) as exc:
            return "violated", f"the matcher accepted it, but it is not valid JSON: {exc}", None

    def describe(self) -> str:
        """Short label, e.g. 'regex \\d{4}-\\d{2}-\\d{2}'."""
        src = self.source if len(self.source) <= 60 else self.source[:57] + "..."
        return f"{self.kind} {src}"


# --------------------------------------------------------------------------------------------- builders


def _grammar(kind: str, source: str | dict) -> str:
    """llguidance grammar text for a regex, a JSON schema (text or dict) or a Lark grammar; ConstraintError if bad."""
    from llguidance import LLMatcher

    if kind not in KINDS:
        raise ConstraintError(f"constraint kind must be one of {', '.join(KINDS)}; got {kind!r}")
    if isinstance(source, str) and not source.strip():
        raise ConstraintError(f"the {kind} is empty")
    check_source(kind, source if isinstance(source, str) else json.dumps(source))
    if kind == "regex":
        return LLMatcher.grammar_from_regex(source)
    if kind == "lark":
        return LLMatcher.grammar_from_lark(source)
    if isinstance(source, str):
        try:
            source = json.loads(source)
        except json.JSONDecodeError as exc:
            raise ConstraintError(f"the JSON schema is not valid JSON: {exc}") from None
        except RecursionError:
            raise ConstraintError(f"the JSON schema is nested too deeply (the limit is {MAX_DEPTH} levels)") from None
    if not isinstance(source, dict):
        raise ConstraintError(f"a JSON schema must be a JSON object; got {type(source).__name__}")
    if _depth(source) > MAX_DEPTH:
        raise ConstraintError(f"the JSON schema is nested more than {MAX_DEPTH} levels deep (the limit)")
    try:
        return LLMatcher.grammar_from_json_schema(source, defaults=JSON_OPTIONS)
    except ValueError as exc:
        raise ConstraintError(f"the JSON schema was refused: {exc}") from None


def _validate(kind: str, grammar: str, tokenizer, limit_s: float | None) -> str:
    """llguidance's complaint ('' when it compiles), from the bounded worker; ConstraintError past the time limit."""
    limit = compile_worker.COMPILE_LIMIT_S if limit_s is None else limit_s
    _, _, key, spec = _entry(tokenizer)
    try:
        return compile_worker.compile_bounded(grammar, key, spec, limit)
    except compile_worker.CompileTimeout:
        raise ConstraintError(f"the {kind} took longer than {limit:g} s to compile (the time limit; it keeps the "
                              "shared server responsive): simplify it") from None
    except compile_worker.CompileBusy as exc:
        raise ConstraintError(f"the {kind} was not compiled: {exc}") from None


def build(
    kind: str, source: str | dict, tokenizer, vocab_size: int | None = None, prefix: Sequence[int] = (),
    compile_limit_s: float | None = None,
) -> Constraint:
    """A Constraint from a regex, JSON schema or Lark grammar over `tokenizer`, its prefix consumed.

    ConstraintError (a ValueError) with a plain message when the source is invalid, takes longer than
    compile_limit_s (default compile_worker.COMPILE_LIMIT_S) to compile, the prefix (the prompt's constrained
    part) already violates it, or it allows no text at all after the prefix.
    """
    from llguidance import LLMatcher

    grammar = _grammar(kind, source)
    llt, end = lltokenizer_for(tokenizer)
    error = _validate(kind, grammar, tokenizer, compile_limit_s)
    if error:
        raise ConstraintError(f"invalid {kind}: {_tidy(error)}")
    text = source if isinstance(source, str) else json.dumps(source)
    vocab = int(vocab_size if vocab_size is not None else tokenizer.vocab_size)
    matcher = LLMatcher(llt, grammar, log_level=0)
    if matcher.is_error():
        raise ConstraintError(f"invalid {kind}: {_first_line(matcher.get_error())}")
    c = Constraint(matcher, vocab, end, kind, text, tuple(int(t) for t in prefix))
    allowed = c.mask()
    _probe_limits(c, allowed)
    if c.finished or not bool(allowed.clone().index_fill_(0, torch.tensor([end]), False).any()):
        where = "after the prompt" if prefix else "at all"
        raise ConstraintError(f"the {kind} allows no text {where} (only the end of the text can follow)")
    return c


def _probe_limits(c: Constraint, allowed: torch.Tensor) -> None:
    """ConstraintError if the matcher refuses a token its own mask allows for one of its limits (not a mismatch).

    llguidance checks some limits (e.g. 50,000 items, hit by ``start: "a"{100000}``) only on the first token;
    without this probe the request failed later with a misleading 'violated' message.
    """
    first = [int(t) for t in torch.nonzero(allowed).view(-1).tolist() if int(t) != c.end_token][:1]
    if not first:
        return
    m = c.matcher.deep_copy()
    if not m.consume_token(first[0]) and _limit_error(error := _first_line(m.get_error())):
        raise ConstraintError(f"the {c.kind} is beyond the constraint engine's limits: {error}")


def regex(pattern: str, tokenizer, **kw) -> Constraint:
    """Constraint from a regular expression (the whole constrained text must match it)."""
    return build("regex", pattern, tokenizer, **kw)


def json_schema(schema: str | dict, tokenizer, **kw) -> Constraint:
    """Constraint from a JSON schema (compact separators ', ' and ': ', no free whitespace)."""
    return build("json", schema, tokenizer, **kw)


def lark(grammar: str, tokenizer, **kw) -> Constraint:
    """Constraint from a Lark grammar (llguidance's dialect)."""
    return build("lark", grammar, tokenizer, **kw)


# ---------------------------------------------------------------------------------------------- presets


@dataclass(frozen=True)
class Preset:
    """A ready request: prompt, constraint kind and source."""

    label: str
    prompt: str
    kind: str
    source: str


PERSON_SCHEMA = json.dumps({
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 24},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "city": {"type": "string", "maxLength": 24},
    },
    "required": ["name", "age", "city"],
    "additionalProperties": False,
})
CHAT_PRESETS = {
    "json": Preset("a JSON object with a given schema", "Invent a person. Reply in JSON with name, age and city.",
                   "json", PERSON_SCHEMA),
    "date": Preset("an ISO date", "On what date did Apollo 11 land on the Moon?", "regex",
                   r"(19|20)\d\d-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])"),
    "three": Preset("a list of exactly three items", "Name three fruits, one per line.", "lark",
                    'start: item item item\nitem: "- " /[A-Za-z][A-Za-z ]{0,23}/ "\\n"\n'),
}
CHAR_PRESETS = {
    "letters": Preset("only letters, spaces and punctuation", "It is a truth universally acknowledged",
                      "regex", r"[A-Za-z ,.;:!?'-]*"),
    "sentence": Preset("a capitalised sentence", "It is a truth universally acknowledged",
                       "regex", r"[A-Z][A-Za-z ,;'-]*[.!?]"),
    "short": Preset("short words: at most five letters each, then a full stop", "It is a truth", "regex",
                    r"[A-Za-z]{1,5}( [A-Za-z]{1,5})*\."),
    "no-e": Preset("a lipogram: no letter e", "A dark night in London", "regex", r"[A-DF-Za-df-z ,.;:!?'-]*"),
}
