"""The trees page's helpers: cached results, multi-draft, typical acceptance, tree cost, assumptions."""
