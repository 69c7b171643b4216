"""The Engines page's helpers: controls, run and result, prose."""
