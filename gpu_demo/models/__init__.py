"""Decoders with a static KV cache that rolls back: the protocol and cache (base), the built-in char models,
Llama (SmolLM2 via GGUF), and the Hugging Face adapter."""
