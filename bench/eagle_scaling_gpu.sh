#!/usr/bin/env bash
# The large self-distillation data + training run for one CUDA GPU, from the repository root:
#   bash bench/eagle_scaling_gpu.sh
# Data: T = 1 replies to 120 shards x 256 prompts (the pool cycles; each pass draws new samples), greedy replies to
# 20 shards (one pass over the pool: greedy repeats would add nothing), and one held-out shard (90000) of each rule,
# from the target in bf16. Shards already on disk are kept, so a run cut short resumes where it stopped.
# Then the scaling curve (fresh head per size) into bench/eagle_scaling_gpu.json and the largest head into
# artifacts/eagle_gpu_head/ (copy it over gpu_demo/assets/smollm2_eagle.* only if its held-out alpha is higher).
set -euo pipefail
PY=${PY:-.venv/bin/python}
DATA=${DATA:-artifacts/selfdistill_gpu}
GEN=(--out "$DATA" --device cuda --dtype bfloat16 --per-shard 256 --batch 256 --max-new 256)
$PY -m gpu_demo.training.selfdistill "${GEN[@]}" --rule t1 --shards 120
$PY -m gpu_demo.training.selfdistill "${GEN[@]}" --rule greedy --shards 20
$PY -m gpu_demo.training.selfdistill "${GEN[@]}" --rule both --first 90000 --shards 1
$PY bench/eagle_scaling.py --data "$DATA" --device cuda --dtype bfloat16 --per-shard 256 --val-shards 90000 \
    --sizes 5,20,60,120 --steps 3000 --batch 64 --unroll 4 --eval-unroll 4 \
    --save-head artifacts/eagle_gpu_head --json bench/eagle_scaling_gpu.json
