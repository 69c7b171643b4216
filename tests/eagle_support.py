"""Tiny EAGLE-style pairs for the tests (tests/test_eagle.py, tests/test_eagle_tree.py): random-weight Llama
targets with a tied head and peaked laws, random or briefly trained heads, and the exact law of a short continuation.
"""

from __future__ import annotations

import itertools

import numpy as np
import torch

from gpu_demo.models.eagle import EagleConfig, EagleHead
from gpu_demo.models.llama import Llama, LlamaConfig, init_random
from gpu_demo.training.eagle import EagleTrainConfig, choose_out_ids, fit, init_head, reply_mass
from gpu_demo.training.eagle_data import sample_replies


def tiny_target(vocab: int, seed: int = 0, scale: float = 30.0) -> Llama:
    """A 2-layer random Llama with a tied head; embeddings scaled so its laws are peaked (not near-uniform)."""
    cfg = LlamaConfig(vocab_size=vocab, dim=32, n_layers=2, n_heads=4, n_kv_heads=2, hidden_dim=64, max_seq_len=128)
    model = init_random(cfg, seed=seed, max_len=128).eval()
    with torch.no_grad():
        model.tok_embeddings.weight.mul_(scale)
    model.requires_grad_(False)
    return model


def tiny_head(target: Llama, n_out: int, seed: int = 1, scale: float = 0.3) -> EagleHead:
    """A random head over a seeded random subset of n_out ids, attached to target."""
    head = EagleHead(EagleConfig.for_target(target.cfg, hidden_dim=48, n_out=n_out), max_len=target.max_seq_len)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in head.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * scale)
        head.out_ids.copy_(torch.randperm(target.vocab_size, generator=g)[:n_out].sort().values)
    head.requires_grad_(False)
    return head.attach(target).eval()


def trained_head(target: Llama, n_out: int, steps: int = 120, seed: int = 0) -> tuple[EagleHead, list[float], list]:
    """A head trained by gpu_demo.training.eagle on the target's own sampled replies; (head, alpha_1 before/after)."""
    g = torch.Generator().manual_seed(seed)
    prompts = [torch.randint(0, target.vocab_size, (n,), generator=g).tolist() for n in (2, 3, 5, 8, 9, 12) * 4]
    samples = sample_replies(target, prompts, 40, stop=-1, generator=g)  # left-padded batch, T = 1
    train_set, val = samples[:20], samples[20:]
    head = EagleHead(EagleConfig.for_target(target.cfg, hidden_dim=64, n_out=n_out), max_len=target.max_seq_len)
    init_head(head, seed)
    head.out_ids.copy_(choose_out_ids(reply_mass(train_set, target.tok_embeddings.weight), n_out, []))
    head.attach(target)
    cfg = EagleTrainConfig(steps=steps, batch=8, max_len=128, lr=3e-3, eval_every=steps, seed=seed)
    history = fit(head, train_set, val, cfg, log=lambda msg: None)  # the training loop the committed head ran
    head.requires_grad_(False)
    alpha1 = [h["val_alpha_t1_per_position"][0] for h in (history[0], history[-1])]
    return head.eval(), alpha1, samples


def exact_joint(target: Llama, prompt: list[int], V: int) -> np.ndarray:
    """P(x1, x2, x3 | prompt) over the V^3 cells, from cache-free forwards over every continuation (float64)."""
    seqs = torch.tensor([prompt + list(c) for c in itertools.product(range(V), repeat=3)])  # (216, L+3)
    with torch.no_grad():
        logp = torch.log_softmax(target.forward_train(seqs).double(), -1)  # (216, L+3, V)
    L = len(prompt)
    idx = torch.arange(seqs.shape[0])
    total = sum(logp[idx, L - 1 + i, seqs[:, L + i]] for i in range(3))
    return total.exp().numpy()
