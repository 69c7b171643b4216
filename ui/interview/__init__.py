"""The interview page's helpers: drill figures, widgets, the timed mock interview."""
