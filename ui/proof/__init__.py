"""The proof page's helpers: cached results, case picker, sections, sampling check."""
