"""Training: the corpus, the built-in pair, distillation on the target's laws, the SmolLM2 draft."""
