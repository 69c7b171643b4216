"""Interview-prep content: the checklist, concept questions, flashcards, the 30-second answer, and the
guided walkthrough. Plain data plus two small functions; any number shown is computed by the core.

Links name a page file and the query params that put it in the state that shows the point.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlencode

from content.interview_2026 import QUESTIONS_2026
from content.interview_senior import CONTEXT_NOTE, LONG, SENIOR_FLASHCARDS, SENIOR_QUESTIONS, SHORT, kv_batch
from specdec_core.algebra import best_gamma, expected_tokens, speedup, step_cost
from specdec_core.drills import Drill
from specdec_core.rejection import acceptance_rate


@dataclass(frozen=True)
class Link:
    """A page in a chosen state: ``page`` is the file under views/, ``params`` its query params."""

    page: str
    params: dict[str, str] = field(default_factory=dict, hash=False)
    label: str = ""

    @property
    def url(self) -> str:
        """The relative URL, e.g. /algebra?alpha=0.8&gamma=4."""
        path = "/" + self.page.removeprefix("views/").removesuffix(".py")
        query = urlencode(self.params, safe=",")
        return path + (f"?{query}" if query else "")


@dataclass(frozen=True)
class ChecklistItem:
    """One of the five points interviewers listen for."""

    point: str
    explanation: str        # two sentences, our own words
    link: Link


@dataclass(frozen=True)
class Option:
    """A multiple-choice option; ``why`` explains why it is right or wrong."""

    text: str
    correct: bool
    why: str


@dataclass(frozen=True)
class ConceptQuestion:
    """A multiple-choice question built on one of the seed's traps. ``trap`` is shown only after an answer.
    Options are of similar length and the keyed one sits at varying places (tests/test_content.py checks)."""

    key: str
    trap: str
    question: str
    options: tuple[Option, ...]
    source: str = ""                                 # where its facts come from, shown after an answer

    @property
    def answer_index(self) -> int:
        """Index of the one correct option."""
        return next(i for i, o in enumerate(self.options) if o.correct)


@dataclass(frozen=True)
class Flashcard:
    """Front: the name of a formula. Back: the formula (LaTeX) and one line on when it matters."""

    front: str
    latex: str
    note: str


@dataclass(frozen=True)
class WalkStep:
    """A step of the guided walkthrough: open a page in a state, answer a question, then reveal."""

    title: str
    minutes: int
    link: Link
    question: str
    reveal: str                                      # may hold {value}, filled by reveal_text()
    compute: tuple[str, dict] | None = field(default=None, hash=False)


# ------------------------------------------------------------ checklist ----
CHECKLIST: tuple[ChecklistItem, ...] = (
    ChecklistItem(
        "The bonus token, and a ceiling of gamma + 1 tokens per pass (not gamma)",
        "When the target accepts every drafted token it has already computed its own distribution for "
        "the next position, so it adds one more token for free. A perfect draft therefore yields "
        "gamma + 1 tokens per target pass, and every pass yields at least one.",
        Link(
            "views/algebra.py",
            {"alpha": "1.0", "gamma": "3", "c": "0.1", "v": "1.0"},
            "Algebra at alpha = 1: E[N] = gamma + 1",
        ),
    ),
    ChecklistItem(
        "After a rejection, resample from (p - q)+, not from p",
        "The accepted draft tokens already supply min(p, q) of the probability at each token, so a "
        "correction must only add the mass that is still missing. Drawing the correction from p "
        "counts the overlap twice and over-weights the tokens where the draft is too eager (q > p).",
        Link(
            "views/proof.py",
            {"preset": "q_sharper", "mistake": "resample_p"},
            "Proof: a sharp draft, and the resample-from-p mistake beside the correct rule",
        ),
    ),
    ChecklistItem(
        "alpha = 1 - TV(p, q), said without being asked",
        "The chance a draft token survives is the overlap of the two laws, the sum over tokens of "
        "min(p, q), which is one minus their total-variation distance. It is the cleanest way to say "
        "why a better-aligned draft speeds things up, and it needs no sampling to compute.",
        Link(
            "views/proof.py",
            {"preset": "custom", "p": "0.5,0.3,0.2", "q": "0.2,0.3,0.5"},
            "Proof: the overlap of p and q is alpha, and 1 - alpha is TV",
        ),
    ),
    ChecklistItem(
        "The gamma c cost term, and a batch size attached to any speedup",
        "Drafting is not free: each of the gamma draft tokens costs c target steps and verification "
        "costs v, so the speedup is E[N] / (gamma c + v). A speedup measured at batch 1 says little "
        "at batch 128, where verification stops riding on idle compute and v grows, nor at long context, where KV "
        f"reads (context x batch) pass the weight reads from B = {kv_batch(SHORT):.0f} at {SHORT // 1024}k tokens "
        f"but B = {kv_batch(LONG):.0f} at {LONG // 1024}k (Llama-3.1-8B), keep v near 1 and push the draft's c up.",
        Link(
            "views/roofline.py",
            {"hw": "H100 SXM", "mode": "bf16", "gamma": "3", "batch": "128"},
            "Roofline: H100 BF16 past the crossover batch",
        ),
    ),
    ChecklistItem(
        "Greedy decoding is argmax matching, with the same algebra",
        "At temperature 0 both laws are one-hot, so a draft token is kept exactly when it equals the "
        "target's argmax and the correction is the target's argmax. Acceptance is then the "
        "probability of agreement, and E[N] and the speedup follow from the same formulas.",
        Link(
            "views/proof.py",
            {"preset": "logits", "seed": "1", "tT": "0", "dT": "0"},
            "Proof at temperature 0: one-hot laws whose argmaxes differ, so alpha = 0 (seed 0: they agree, alpha = 1)",
        ),
    ),
)


# ---------------------------------------------------- concept questions ----
CONCEPT_QUESTIONS: tuple[ConceptQuestion, ...] = (
    ConceptQuestion(
        "resample",
        "resampling from p",
        "The target rejects the draft token at some position. What should the replacement token be drawn from?",
        (
            Option(
                "The target law p, because the output must follow p",
                False,
                "The accepted tokens already contributed min(p, q) at each token; adding a full draw "
                "from p gives the tokens where q >= p exactly (2 - alpha) p in total, so the output is biased.",
            ),
            Option(
                "The draft law q, with the draft's own sampling settings",
                False,
                "That is the law that was just rejected; the output would drift towards the draft.",
            ),
            Option(
                "The residual (p - q)+, normalised to sum to 1",
                True,
                "Accepted mass min(p, q) plus rejected mass (1 - alpha) times the residual is "
                "exactly p at every token.",
            ),
            Option(
                "The argmax of p, the target's most likely token",
                False,
                "That is right only at temperature 0; under sampling it removes all diversity from "
                "corrections and changes the law.",
            ),
        ),
    ),
    ConceptQuestion(
        "logits",
        "verifying against raw logits",
        "A request asks for temperature 0.7 and top-p 0.9. Which p belongs in the acceptance ratio min(1, p/q)?",
        (
            Option(
                "p after temperature 0.7 and top-p 0.9, renormalised",
                True,
                "p must be the requested law and q the law that actually generated the draft token, "
                "both normalised over the same vocabulary.",
            ),
            Option(
                "softmax of the raw target logits (T = 1, no top-p)",
                False,
                "That silently verifies against a different law: the output then follows the "
                "untempered, untruncated target, not what the user asked for. It can even keep more drafts.",
            ),
            Option(
                "p after temperature and top-p, not renormalised",
                False,
                "Unnormalised p scales every ratio by a constant, so acceptance and the residual "
                "are both wrong and the emitted law is not p.",
            ),
            Option(
                "Any of them: the rejection step corrects the difference",
                False,
                "The rejection step makes the output follow whatever p you put in the ratio, so the "
                "wrong p gives the wrong law, exactly.",
            ),
        ),
    ),
    ConceptQuestion(
        "rollback",
        "rolling back KV and grammar state",
        "The draft proposed 5 tokens and the target accepted 2. What must happen before the next step?",
        (
            Option(
                "Nothing: the next step overwrites the stale entries",
                False,
                "Unless the cache length is reset, attention still reads the rejected positions, and "
                "a grammar parser has already advanced past tokens that were never emitted.",
            ),
            Option(
                "Roll back the draft's KV cache only; the target's is right",
                False,
                "Verification wrote target KV entries for all 5 drafted positions; 3 of them are for rejected tokens.",
            ),
            Option(
                "Recompute both KV caches from the prompt, from scratch",
                False,
                "Correct but wasteful: a recompute throws away the speedup. Truncating to the "
                "accepted length gives the same state.",
            ),
            Option(
                "Roll both caches and parser state back to the kept prefix",
                True,
                "Every piece of state that advanced on a rejected token (both KV caches, a grammar "
                "parser) must return to the accepted prefix, or the next step conditions on text the user never sees.",
            ),
        ),
    ),
    ConceptQuestion(
        "bad_draft",
        "a terrible draft",
        "Your draft is terrible: alpha is close to 0. What happens to the output?",
        (
            Option(
                "Its quality degrades towards the draft model's",
                False,
                "Accept-or-resample makes the emitted law exactly p whatever q is; the draft only "
                "changes how fast tokens come.",
            ),
            Option(
                "Still exactly the target's law, but slower than plain decoding",
                True,
                "A bad draft costs time, never correctness: each step costs gamma c + v for about one "
                "token, so at alpha = 0 the speedup is 1 / (gamma c + v).",
            ),
            Option(
                "Decoding stalls, since no draft token is ever accepted by the target",
                False,
                "Every step emits at least one token from the target: the correction at the first "
                "rejection (or the bonus token).",
            ),
            Option(
                "Nothing changes: the speedup can never fall below 1x",
                False,
                "Drafting and verification cost time whether or not anything is accepted, so the "
                "speedup falls below 1.",
            ),
        ),
    ),
    ConceptQuestion(
        "batch",
        "speculation fading with batch",
        "Why does the speedup from speculation shrink as the serving batch grows?",
        (
            Option(
                "Acceptance alpha falls when many requests share a batch",
                False,
                "alpha depends on how well q matches p for each request, not on who else is in the batch.",
            ),
            Option(
                "KV caches cannot be rolled back per request once they are batched",
                False,
                "Rollback is per request and works at any batch size; it is not what limits the gain.",
            ),
            Option(
                "B (gamma + 1) reaches the ridge, so verifying costs real time",
                True,
                "At small batch a decode step is bandwidth-bound and compute is idle; once the "
                "verification intensity B (gamma + 1) passes the ridge, v grows with gamma + 1. Context moves "
                f"this: {CONTEXT_NOTE}.",
            ),
            Option(
                "The draft model cannot be batched the way the target can",
                False,
                "A draft batches, but its own KV reads grow with batch and context, so c rises; at short context "
                "what flips the sign is the verify pass reaching the compute roof.",
            ),
        ),
    ),
    ConceptQuestion(
        "ceiling",
        "the gamma + 1 ceiling",
        "With a perfect draft (alpha = 1) and gamma = 4, how many tokens does one target pass emit?",
        (
            Option(
                "5: the four draft tokens plus the target's bonus token",
                True,
                "E[N] = (1 - alpha^(gamma+1)) / (1 - alpha) tends to gamma + 1 as alpha -> 1.",
            ),
            Option(
                "4: one per drafted token, all of them accepted",
                False,
                "This forgets the bonus token: the target has already scored the position after the last draft token.",
            ),
            Option(
                "1: the target must still sample a token of its own",
                False,
                "That is the floor at alpha = 0, not the ceiling.",
            ),
            Option(
                "Unbounded: with alpha = 1 the draft can run ahead forever",
                False,
                "gamma is fixed per step; the target verifies gamma tokens per pass.",
            ),
        ),
    ),
    ConceptQuestion(
        "typical",
        "Medusa's typical acceptance",
        "Medusa-2 keeps a candidate when p(x) > min(epsilon, delta exp(-H(p))). Does it sample from the target's law?",
        (
            Option(
                "Yes, when the draft is perfect (q = p) and nothing is rejected",
                False,
                "Even with q = p, tokens with p(x) at or below the threshold are never kept and are cut from the "
                "fallback, so the tail of p goes missing.",
            ),
            Option(
                "Yes: any accept rule that never keeps a low-p token is exact",
                False,
                "Exactness needs the ratio min(1, p/q) and the residual (p - q)+; a threshold on p alone leaves a "
                "kept token distributed like q.",
            ),
            Option(
                "Only at temperature 0, where it is argmax matching",
                True,
                "There p is one-hot and only the argmax clears the bar, so greedy output is exact; under sampling "
                "the law is biased, which a chi-square test detects.",
            ),
            Option(
                "No, and its acceptance is lower than the exact rule's",
                False,
                "It is biased, but it usually keeps more candidates than the exact rule: that is why it is "
                "used, trading the target's law for speed.",
            ),
        ),
    ),
) + tuple(ConceptQuestion(key, trap, question, tuple(Option(*o) for o in options))
        for key, trap, question, options in SENIOR_QUESTIONS) + tuple(  # content.interview_senior, then 2026's
    ConceptQuestion(key, trap, question, tuple(Option(*o) for o in options), source)
    for key, trap, question, options, source in QUESTIONS_2026)


# ----------------------------------------------------------- flashcards ----
FLASHCARDS: tuple[Flashcard, ...] = (
    Flashcard(
        "Expected tokens per target pass (constant alpha)",
        r"\mathbb{E}[N] = \frac{1-\alpha^{\gamma+1}}{1-\alpha} = 1 + \alpha + \dots + \alpha^{\gamma}",
        "gamma + 1 at alpha = 1 (the bonus token), 1 at alpha = 0.",
    ),
    Flashcard(
        "Expected tokens per pass, acceptance varying by position",
        r"\mathbb{E}[N] = 1 + \sum_{i=1}^{\gamma} \prod_{j=1}^{i} \alpha_j",
        "alpha_j is conditional on every earlier position being accepted.",
    ),
    Flashcard(
        "Modelled speedup",
        r"\text{speedup} = \frac{\mathbb{E}[N]}{\gamma c + v}",
        "c and v in target decode steps; v = 1 is an assumption, measure both at your batch and context length.",
    ),
    Flashcard(
        "Acceptance rule for a draft token x ~ q",
        r"\Pr[\text{accept } x] = \min\!\left(1, \frac{p(x)}{q(x)}\right)",
        "p and q are the laws actually used, after temperature and truncation.",
    ),
    Flashcard(
        "Residual law used after a rejection",
        r"r(x) = \frac{(p(x) - q(x))_+}{\sum_y (p(y) - q(y))_+}",
        "Empty when p = q: then nothing is ever rejected, so no division by zero is needed.",
    ),
    Flashcard(
        "Why the output is exactly p",
        r"\min(p, q)(x) + (1-\alpha)\, r(x) = \min(p,q)(x) + (p-q)_+(x) = p(x)",
        "The rejected mass 1 - alpha equals the residual mass.",
    ),
    Flashcard(
        "Acceptance rate from p and q",
        r"\alpha = \sum_x \min(p(x), q(x)) = 1 - \mathrm{TV}(p, q)",
        "TV = half the L1 distance between the two laws.",
    ),
    Flashcard(
        "Raising alpha: distil the draft on the target",
        r"\min_q\; \mathbb{E}_{\text{context}}\big[\mathrm{TV}(p, q)\big]"
        r" \;\Longleftrightarrow\; \max_q\; \mathbb{E}[\alpha]",
        "Train q on the target's own laws, not on text (DistillSpec); this app's built-in draft was distilled so.",
    ),
    Flashcard(
        "Roofline ridge",
        r"I^* = \frac{\text{peak FLOP/s}}{\text{memory bytes/s}}",
        "H100 SXM BF16: 989 / 3.35 = 295 FLOP per byte (dense peaks).",
    ),
    Flashcard(
        "Verification intensity and crossover batch",
        r"I = k\,B\,(\gamma+1),\qquad B^\times = \frac{I^*}{k\,(\gamma+1)}",
        "k = 1 in BF16; k = 2 with 8-bit weights (FP8, or W8A16 at the BF16 ridge, which halves B). Weights only: "
        f"KV reads grow with context x batch and pass the weights at B = {kv_batch(SHORT):.0f} for {SHORT // 1024}k "
        f"tokens, {kv_batch(LONG):.0f} for {LONG // 1024}k (Llama-3.1-8B).",
    ),
) + tuple(Flashcard(*card) for card in SENIOR_FLASHCARDS)  # content.interview_senior


# ------------------------------------------------- the 30-second answer ----
# One text, shown on the home page and the interview page alike; the key phrases are pieces of it and
# the practice timer is sized to it (at most 60 words: under 30 s at an ordinary speaking pace).
THIRTY_SECOND_ANSWER = (
    "A draft proposes gamma tokens; the target verifies them in one pass. Each pass yields one plus the summed "
    "prefix-survival chances, at most gamma + 1; divide by gamma c + v for the speedup. Accepting with "
    "min(1, p/q) and resampling from (p - q)+ keeps the target's distribution exactly. Large short-context "
    "batches make verification costly enough to slow decoding."
)

# Each phrase appears word for word in the answer, in the answer's order.
KEY_PHRASES: tuple[str, ...] = (
    "the target verifies them in one pass",
    "one plus the summed prefix-survival chances",
    "at most gamma + 1",
    "divide by gamma c + v",
    "min(1, p/q)",
    "(p - q)+",
    "the target's distribution exactly",
    "short-context batches make verification costly enough to slow decoding",
)

MAX_WORDS = 60
SPEAKING_WORDS_PER_MINUTE = 130      # an unhurried presentation pace; 60 words take 28 s at it


def word_count(text: str) -> int:
    """Words as a listener hears them: runs of characters between spaces ('min(1,' and 'p/q)' are two)."""
    return len(text.split())


PRACTICE_SECONDS = 30


# ---------------------------------------------------------- walkthrough ----
WALKTHROUGH: tuple[WalkStep, ...] = (
    WalkStep(
        "The idea in one paragraph",
        1,
        Link("views/home.py"),
        "Why can the target check several draft tokens for about the price of one?",
        "At small batch a decode step spends its time reading weights (and, at long context, the KV cache) from "
        "memory; scoring gamma + 1 positions reuses the same reads, so the extra arithmetic rides on idle compute.",
    ),
    WalkStep(
        "The seed's worked case",
        2,
        Link("views/algebra.py", {"alpha": "0.7", "gamma": "3", "c": "0.1", "v": "1.0"}),
        "Predict E[N] and the speedup at alpha = 0.7, gamma = 3, c = 0.1, v = 1.",
        "E[N] = {tokens:.3f} tokens per pass and a speedup of {speedup:.2f}x.",
        ("speedup", {"alpha": 0.7, "gamma": 3, "c": 0.1, "v": 1.0}),
    ),
    WalkStep(
        "The ceiling",
        1,
        Link("views/algebra.py", {"alpha": "1.0", "gamma": "3", "c": "0.1", "v": "1.0"}),
        "With a perfect draft, what speedup does the same configuration reach?",
        "E[N] = {tokens:.0f} = gamma + 1 (the bonus token), so {speedup:.2f}x: the ceiling.",
        ("speedup", {"alpha": 1.0, "gamma": 3, "c": 0.1, "v": 1.0}),
    ),
    WalkStep(
        "Verification is not free",
        2,
        Link("views/algebra.py", {"alpha": "0.8", "gamma": "4", "c": "0.05", "v": "3.5"}),
        "alpha = 0.8, gamma = 4, c = 0.05, but verification costs v = 3.5 target steps. Faster or slower?",
        "E[N] = {tokens:.4f}, cost {cost:.1f}, so {speedup:.2f}x: a slowdown at the same acceptance.",
        ("speedup", {"alpha": 0.8, "gamma": 4, "c": 0.05, "v": 3.5}),
    ),
    WalkStep(
        "Choosing gamma",
        1,
        Link("views/algebra.py", {"alpha": "0.75", "gamma": "7", "c": "0.015", "v": "1.0"}),
        "Leviathan et al. used gamma = 7 at alpha = 0.75 with c about 0.015. Is 7 the best integer gamma?",
        "Not quite: gamma = {best_gamma} gives {best_speedup:.2f}x against {speedup:.2f}x at 7;"
        " the curve is flat near its peak.",
        ("best_gamma", {"alpha": 0.75, "gamma": 7, "c": 0.015, "v": 1.0}),
    ),
    WalkStep(
        "Acceptance is overlap",
        1,
        Link("views/proof.py", {"preset": "custom", "p": "0.5,0.3,0.2", "q": "0.2,0.3,0.5"}),
        "Before looking at the numbers: what is the chance a draft token is accepted, in terms of p and q?",
        "alpha = sum over tokens of min(p, q) = 1 - TV(p, q); for example p = [0.5, 0.3, 0.2], "
        "q = [0.2, 0.3, 0.5] gives alpha = {alpha:.2f}.",
        ("alpha", {"p": [0.5, 0.3, 0.2], "q": [0.2, 0.3, 0.5]}),
    ),
    WalkStep(
        "The tempting mistake",
        2,
        Link("views/proof.py", {"preset": "q_sharper", "mistake": "resample_p"}),
        "If the correction is drawn from p instead of (p - q)+, which tokens come out too often?",
        "Those where q > p: they are accepted at rate p already, then receive extra mass from the "
        "p-resample. The emitted law is no longer p.",
    ),
    WalkStep(
        "Where it breaks: the roofline",
        2,
        Link("views/roofline.py", {"hw": "H100 SXM", "mode": "bf16", "gamma": "3"}),
        "On an H100 SXM in BF16 with gamma = 3, at which batch does verification reach the ridge?",
        "B = ridge / (gamma + 1) = {crossover:.1f}, about 74: beyond it, extra draft tokens cost real compute. "
        "That counts the weights alone: KV reads grow with context x batch and the gamma + 1 positions share them, "
        "so at long context v rises later and the draft's own KV reads become the cost to watch (MagicDec).",
        ("crossover", {"hardware": "H100 SXM", "gamma": 3, "mode": "bf16"}),
    ),
    WalkStep(
        "Precision moves the crossover",
        1,
        Link("views/roofline.py", {"hw": "H100 SXM", "mode": "w8a16", "gamma": "3"}),
        "Now store weights in 8 bits but compute in BF16. Does the crossover batch go up, down or stay?",
        "It halves, to {crossover:.1f}: each weight byte now feeds 2 FLOPs per token, but the ridge is "
        "still the BF16 one. Native FP8 doubles the ridge too, so it stays near 74. Context does not enter this "
        "weights-only crossover; the KV reads, growing with context x batch, come on top.",
        ("crossover", {"hardware": "H100 SXM", "gamma": 3, "mode": "w8a16"}),
    ),
    WalkStep(
        "A real pair, decoding",
        1,
        Link("views/live.py"),
        "Each round ends with exactly one token from the target. When is it a correction, and when a bonus token?",
        "A correction when some draft token is rejected: it is drawn from (p - q)+ at that position. A bonus "
        "when all gamma drafts survive: it is drawn from p at the position after them, which the target "
        "scored in the same pass.",
    ),
    WalkStep(
        "Drill yourself",
        1,
        Link("views/interview.py", {"part": "Drills"}),
        "Answer one numeric drill without the app's help, then check the worked solution.",
        "The drills are graded within 1% (or 0.005), and a batch (a crossover, or where KV reads overtake the "
        "weights at a given context) may be either whole number beside the exact value. A drill scores if it is "
        "right within two tries: a wrong first answer gets a diagnosis and one retry, then the worked solution "
        "shows.",
    ),
)


def reveal_text(step: WalkStep) -> str:
    """The step's reveal, with its numbers filled in from the core."""
    if step.compute is None:
        return step.reveal
    kind, d = step.compute
    values: dict[str, float] = {}
    if kind in ("speedup", "best_gamma"):
        values["tokens"] = float(expected_tokens(d["alpha"], d["gamma"]))
        values["speedup"] = float(speedup(d["alpha"], d["gamma"], d["c"], d["v"]))
        values["cost"] = float(step_cost(d["gamma"], d["c"], d["v"]))
    if kind == "best_gamma":
        values["best_gamma"], values["best_speedup"] = best_gamma(d["alpha"], d["c"], d["v"])
    if kind == "alpha":
        values["alpha"] = float(acceptance_rate(d["p"], d["q"]))
    if kind == "crossover":
        values["crossover"] = float(Drill("crossover", d).answer())   # the drills' own inputs and answer
    return step.reveal.format(**values)


def check_choice(question: ConceptQuestion, index: int) -> tuple[bool, str]:
    """(correct, explanation) for the option at ``index``."""
    if not 0 <= index < len(question.options):
        raise ValueError(f"index must be in 0..{len(question.options) - 1}; got {index}")
    option = question.options[index]
    return option.correct, option.why
