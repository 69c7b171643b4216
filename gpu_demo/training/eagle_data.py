"""Self-distillation data for the feature-level draft: SmolLM2's own replies to chat prompts, with its features.

Prompts are hand-written instructions over hand-written topics, plus passages of the committed Austen
corpus (summarise, rewrite, continue, ask about). Each is wrapped in the target's chat template, and the
target samples its reply at temperature 1, in left-padded batches on its own static cache. Every position
keeps the target's feature f_i (the final-norm hidden state its head reads, float16) and, from the last
prompt position on, log Z_i (the log of its softmax normaliser; NaN before). That is all the training
needs: the target's probability of x in S at i is exp(E_S f_i - log Z_i), recomputed per batch.

With left padding every real query masks the pad keys; RoPE depends on relative positions only, so a
padded row computes what the unpadded prompt would (up to float rounding). Pad queries see themselves,
so no attention row is all -inf.
"""

from __future__ import annotations

import random
import re
import time
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from gpu_demo.models.base import causal_mask_at_offset
from gpu_demo.models.llama import Llama
from gpu_demo.sampler import sample

TASKS = (
    "Explain {t} to a ten-year-old.",
    "Write a short poem about {t}.",
    "Give me three interesting facts about {t}.",
    "What are the pros and cons of {t}?",
    "Write a short story that involves {t}.",
    "Describe {t} in one paragraph.",
    "How would you teach a beginner about {t}?",
    "Write a haiku about {t}.",
    "What is the history of {t}?",
    "List five questions a curious student might ask about {t}.",
    "Write a persuasive paragraph about why {t} matters.",
    "Summarise what most people get wrong about {t}.",
    "Write a diary entry from someone who loves {t}.",
    "Compare {t} with something from everyday life.",
    "Give a step-by-step plan to get started with {t}.",
    "Write a friendly letter to a friend about {t}.",
    "What would the world look like without {t}?",
    "Tell me a joke about {t}.",
    "Write a product description for something related to {t}.",
    "Answer briefly: why do people care about {t}?",
    "Give me three tips for getting better at {t}.",
    "What are the main benefits of {t}?",
    "Explain how {t} works, in simple words.",
    "Tell me something surprising about {t}.",
    "Write a short conversation between two friends about {t}.",
    "What should a beginner know before trying {t}?",
    "Why is {t} important? Answer in a few sentences.",
    "Write an encouraging note to a student who is studying {t}.",
    "Describe a typical day for someone who works with {t}.",
    "What are some common myths about {t}?",
    "Tell me about {t}.",
    "How does {t} affect our daily lives?",
    "Can you help me understand {t}?",
    "Write a short speech about {t} for a school assembly.",
    "What questions should I ask an expert on {t}?",
    "Describe {t} to someone who has never heard of it.",
    "Write a limerick about {t}.",
    "What is the future of {t}?",
    "Give a quick overview of {t} in a few bullet points.",
    "I am curious about {t}. Where should I start?",
    "Write a blog post introduction about {t}.",
    "Explain the science behind {t}.",
    "What are the biggest challenges related to {t}?",
    "Write a thank-you note to someone who taught me about {t}.",
    "How has {t} changed over the last hundred years?",
    "Write a short dialogue between a teacher and a student about {t}.",
    "What are three fun activities related to {t}?",
    "Describe the sights and sounds of {t}.",
    "Why do some people dislike {t}?",
    "Write a motivational message inspired by {t}.",
)

TOPICS = (
    "volcanoes", "the moon", "photosynthesis", "the internet", "chess", "rain forests", "coffee", "trains",
    "the human heart", "recycling", "ancient Rome", "jazz music", "gardening", "the ocean tides", "electricity",
    "friendship", "penguins", "mountains", "libraries", "bread baking", "the solar system", "clocks",
    "public transport", "dinosaurs", "robots", "winter", "football", "painting", "maps", "kindness",
    "bridges", "the printing press", "cats", "sleep", "vaccines", "rivers", "deserts", "cooking pasta",
    "money", "learning a new language", "the weather", "birds", "computers", "music festivals", "forests",
    "honesty", "space travel", "museums", "farming", "smartphones",
    "earthquakes", "the immune system", "origami", "submarines", "glaciers", "tea ceremonies", "poetry",
    "airplanes", "the stock market", "yoga", "wolves", "climate change", "board games", "the Great Wall of China",
    "chocolate", "volunteering", "owls", "solar panels", "knitting", "the Olympic Games", "castles", "snow",
    "sharks", "photography", "hiking boots", "democracy", "fireworks", "the brain", "coral reefs", "elephants",
    "the piano", "newspapers", "video games", "pizza", "hot air balloons", "saving money", "time management",
    "wind turbines", "frogs", "the Amazon river", "mathematics", "dreams", "comets", "tigers", "skateboarding",
    "writing a novel", "first aid", "deep sea creatures", "cheese making", "kites", "the Egyptian pyramids",
    "moving to a new city", "plastic pollution", "magnets", "horses", "job interviews", "street food",
)

PASSAGE_TASKS = (
    "Summarise this passage in two sentences:\n\n{p}",
    "Rewrite this passage in plain modern English:\n\n{p}",
    "Continue this story for a few sentences:\n\n{p}",
    "What is the mood of this passage, and why?\n\n{p}",
    "Who seems to be the main character here, and what do we learn about them?\n\n{p}",
)

# Held out: the benchmarks' open-ended chat prompts, on topics absent from TOPICS (tests check no overlap).
BENCH_CHAT_PROMPTS = (
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Explain how a rainbow forms, in simple words.",
    "Give me three tips for learning to play the guitar.",
    "What are the benefits of regular exercise?",
    "Describe a perfect day at the beach.",
    "How do bees make honey?",
    "Write a friendly email inviting a colleague to lunch on Friday.",
    "Why do leaves change colour in autumn?",
    "What should I pack for a weekend camping trip?",
    "Tell me about the history of the bicycle.",
)


def passages(n: int, seed: int, max_words: int = 70) -> list[str]:
    """n paragraphs (40 to max_words words) of the corpus's training split, drawn with the seed."""
    from gpu_demo.training.corpus import load_books, train_val_split

    train_text, _ = train_val_split(load_books())
    paras = [re.sub(r"\s+", " ", p).strip() for p in re.split(r"\n\s*\n", train_text)]
    paras = [p for p in paras if 40 <= len(p.split()) <= max_words]
    return random.Random(seed).sample(paras, n)


def build_prompts(n: int, seed: int, passage_share: float = 0.15) -> list[str]:
    """n user messages: TASKS x TOPICS (without repeats) and, for a share, PASSAGE_TASKS over corpus passages."""
    rng = random.Random(seed)
    n_pass = int(round(n * passage_share))
    combos = [task.format(t=topic) for task in TASKS for topic in TOPICS]
    rng.shuffle(combos)
    texts = combos[: n - n_pass]
    texts += [rng.choice(PASSAGE_TASKS).format(p=p) for p in passages(n_pass, seed + 1)]
    rng.shuffle(texts)
    return texts


@dataclass
class Sample:
    """One prompt and the target's reply: ids (L,), features f_i (L-1, C) float16, log Z_i (L-1,), prompt length."""

    ids: torch.Tensor
    feats: torch.Tensor
    logz: torch.Tensor
    prompt_len: int


def padded_step(model: Llama, ids: torch.Tensor, keep: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Feed ids (B, T) with key mask keep (B, S_max): -> (features (B, T, C), last position's logits (B, 1, V))."""
    B, T = ids.shape
    start = model.cache.reserve(B, T, model.device, model.dtype)
    cos, sin = model._rope(start, T)
    allowed = causal_mask_at_offset(start, T, ids.device)[None] & keep[:, None, : start + T]  # (B, T, S)
    allowed[:, torch.arange(T), start + torch.arange(T)] = True  # a pad query sees itself: no empty row
    bias = torch.zeros(allowed.shape, dtype=model.dtype, device=ids.device)
    bias = bias.masked_fill_(~allowed, float("-inf"))[:, None]  # (B, 1, T, S)
    x = model.tok_embeddings(ids)  # (B, T, C)
    for layer, ck, cv in zip(model.layers, model.cache.k, model.cache.v):
        x = layer(x, ck, cv, start, cos, sin, bias)
    model.cache.advance(T)
    f = model.norm(x)  # (B, T, C)
    return f, F.linear(f[:, -1:], model.tok_embeddings.weight).float()


@torch.inference_mode()
def sample_replies(
    model: Llama, prompts: list[list[int]], max_new: int, stop: int, generator: torch.Generator
) -> list[Sample]:
    """The target's replies at T = 1 to a batch of tokenised prompts, with its features and log Z at every position."""
    B, L = len(prompts), max(len(p) for p in prompts)
    pads = [L - len(p) for p in prompts]
    ids = torch.zeros(B, L, dtype=torch.long)
    keep = torch.zeros(B, L + max_new, dtype=torch.bool)
    for b, p in enumerate(prompts):
        ids[b, pads[b] :] = torch.tensor(p)
        keep[b, pads[b] :] = True
    model.reset(B)
    f, logits = padded_step(model, ids, keep)
    nan = torch.full((B, L - 1), float("nan"))  # log Z is needed from the last prompt position on
    feats, logz, toks = [f.half()], [nan, torch.logsumexp(logits, -1)], [ids]
    done = torch.zeros(B, dtype=torch.bool)
    for _ in range(max_new):
        nxt = sample(torch.softmax(logits[:, -1], -1), generator)  # (B,)
        toks.append(nxt.view(B, 1))
        done |= nxt == stop
        if bool(done.all()) or len(toks) - 1 == max_new:
            break
        f, logits = padded_step(model, nxt.view(B, 1), keep)
        feats.append(f.half())
        logz.append(torch.logsumexp(logits, -1))
    all_ids, all_f, all_z = torch.cat(toks, 1), torch.cat(feats, 1), torch.cat(logz, 1)  # (B, L+R), (B, L+R-1, C)
    out = []
    for b in range(B):
        seq = all_ids[b, pads[b] :]
        hit = (seq[len(prompts[b]) :] == stop).nonzero()
        end = len(prompts[b]) + (int(hit[0]) + 1 if hit.numel() else seq.numel() - len(prompts[b]))
        out.append(Sample(seq[:end].clone(), all_f[b, pads[b] : pads[b] + end - 1].clone(),
                          all_z[b, pads[b] : pads[b] + end - 1].clone(), len(prompts[b])))
    return out


def generate_set(
    model: Llama, tokenizer, n_prompts: int, batch: int, max_new: int, stop: int, seed: int, log=print
) -> list[Sample]:
    """Replies to build_prompts(n_prompts, seed), batched by similar prompt length; seeded sampling."""
    texts = build_prompts(n_prompts, seed)
    encoded = [tokenizer.encode(tokenizer.chat(t)) for t in texts]  # a SmolTokenizer
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))  # similar lengths -> little padding
    gen = torch.Generator().manual_seed(seed)
    samples: list[Sample | None] = [None] * len(encoded)
    t0 = time.perf_counter()
    for i in range(0, len(order), batch):
        idx = order[i : i + batch]
        for j, s in zip(idx, sample_replies(model, [encoded[j] for j in idx], max_new, stop, gen)):
            samples[j] = s
        n_tok = sum(s.ids.numel() - s.prompt_len for s in samples if s is not None)
        log(f"  replies {min(i + batch, len(order))}/{len(order)}: {n_tok} reply tokens "
            f"({time.perf_counter() - t0:.0f} s)")
    return [s for s in samples if s is not None]


def pack(samples: list[Sample]) -> dict[str, torch.Tensor]:
    """Concatenate samples into flat tensors with offsets (for one safetensors file)."""
    lens = torch.tensor([s.ids.numel() for s in samples])
    return {
        "ids": torch.cat([s.ids for s in samples]), "feats": torch.cat([s.feats for s in samples]),
        "logz": torch.cat([s.logz for s in samples]), "lens": lens,
        "prompt_lens": torch.tensor([s.prompt_len for s in samples]),
    }


def unpack(data: dict[str, torch.Tensor]) -> list[Sample]:
    """Inverse of pack."""
    out, a, b = [], 0, 0
    for n, p in zip(data["lens"].tolist(), data["prompt_lens"].tolist()):
        out.append(Sample(data["ids"][a : a + n], data["feats"][b : b + n - 1], data["logz"][b : b + n - 1], p))
        a, b = a + n, b + n - 1
    return out
