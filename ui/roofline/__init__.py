"""The roofline page's helpers: figures, step-time section, measured mode, probe, H200 section."""
