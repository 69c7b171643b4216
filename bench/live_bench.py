"""Live engine benchmark: measured vs predicted speedup of speculative decoding over gamma.

Same as `python -m gpu_demo bench ...` (all options pass through), e.g.
    .venv/bin/python bench/live_bench.py --device cpu --threads 1 --json artifacts/live_bench.json
    .venv/bin/python bench/live_bench.py --temperature 0          # greedy
Prints a table (medians over repeats); --json PATH writes the full report.
"""

from __future__ import annotations

import sys

from gpu_demo.__main__ import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))
