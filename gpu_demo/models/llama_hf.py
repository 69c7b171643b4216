"""The same weights in Hugging Face's LlamaForCausalLM (offline, nothing downloaded), for side-by-side runs.

GGUF stores q and k rows permuted so that adjacent pairs (2i, 2i+1) rotate together (llama.cpp's
converter); Hugging Face rotates the two halves of each head. ``unpermute`` undoes the permutation, so
both models compute the same function (the checks in tests/test_smollm2.py and bench/vs_transformers.py).
"""

from __future__ import annotations

import torch

from gpu_demo.models.llama import Llama

HF_NAMES = {"attention.wv": "self_attn.v_proj", "attention.wo": "self_attn.o_proj",
            "feed_forward.w1": "mlp.gate_proj", "feed_forward.w3": "mlp.up_proj",
            "feed_forward.w2": "mlp.down_proj", "attention_norm": "input_layernorm",
            "ffn_norm": "post_attention_layernorm"}


def unpermute(w: torch.Tensor, n_head: int) -> torch.Tensor:
    """GGUF pair layout -> Hugging Face half-split layout of q/k rows: (n_head * hd, C) -> same shape."""
    out, inp = w.shape
    return w.reshape(n_head, out // n_head // 2, 2, inp).swapaxes(1, 2).reshape(out, inp)


def to_transformers(model: Llama, attn_implementation: str = "sdpa"):
    """transformers.LlamaForCausalLM holding the same (tied) weights, in eval mode, on the model's device and dtype."""
    import transformers

    c = model.cfg
    hf_cfg = transformers.LlamaConfig(
        vocab_size=c.vocab_size, hidden_size=c.dim, intermediate_size=c.hidden_dim,
        num_hidden_layers=c.n_layers, num_attention_heads=c.n_heads, num_key_value_heads=c.n_kv_heads,
        rms_norm_eps=c.norm_eps, rope_theta=c.rope_base, max_position_embeddings=c.max_seq_len,
        tie_word_embeddings=True, attn_implementation=attn_implementation,
    )
    hf = transformers.LlamaForCausalLM(hf_cfg)
    sd = model.state_dict()
    new = {"model.embed_tokens.weight": sd["tok_embeddings.weight"], "model.norm.weight": sd["norm.weight"],
           "lm_head.weight": sd["tok_embeddings.weight"]}
    for i in range(c.n_layers):
        p, q = f"layers.{i}.", f"model.layers.{i}."
        new[q + "self_attn.q_proj.weight"] = unpermute(sd[p + "attention.wq.weight"], c.n_heads)
        new[q + "self_attn.k_proj.weight"] = unpermute(sd[p + "attention.wk.weight"], c.n_kv_heads)
        for ours, theirs in HF_NAMES.items():
            new[q + theirs + ".weight"] = sd[p + ours + ".weight"]
    hf.load_state_dict(new, strict=True)
    return hf.to(device=model.device, dtype=model.dtype).eval().requires_grad_(False)
