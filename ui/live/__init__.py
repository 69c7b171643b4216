"""The live page's helpers: pairs, controls, result panel, tokens, figures, export, constraints."""
