#!/usr/bin/env bash
# Decode speed by computed share phi on SmolLM2-135M F16 (2 threads, side by side in
# one process, medians of 7, round-robin), for the full model with the qa static set (load 1.0,
# static 0.3, layers 5..28) and for the paper-default slice (load 0.7). Writes
# results/bench/smollm2-f16-load{1.0,0.7}.{md,jsonl}.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/env.sh
SELECTINFER_MODELS=smollm2 scripts/setup.sh
cargo build --release --locked
si="$SELECTINFER_BIN"
f16=models/SmolLM2-135M-Instruct.F16.gguf
[ -f "$f16" ] || "$si" convert models/SmolLM2-135M-Instruct.Q4_1.gguf --to f16 -o "$f16"
mkdir -p results/bench
for load in 1.0 0.7; do
    m=models/SmolLM2-135M-Instruct.F16.qa-load$load.gguf
    [ -f "$m" ] || "$si" slice -m "$f16" --profile profiles/SmolLM2-135M-Instruct.F16 --task qa --load $load --static 0.3 -o "$m" >/dev/null
    list=1.0,0.7,0.55,0.4,0.3
    cmd="selectinfer bench -m $m --compute-list $list --reps 7 -t 2"
    { echo "\`$cmd\` ($(date -u +%F), $(nproc) cores, commit $(git rev-parse --short HEAD))"; echo; "$si" bench -m "$m" --compute-list $list --reps 7 -t 2 2>/dev/null; } >results/bench/smollm2-f16-load$load.md
    "$si" bench -m "$m" --compute-list $list --reps 7 -t 2 --json 2>/dev/null >results/bench/smollm2-f16-load$load.jsonl
    cat results/bench/smollm2-f16-load$load.md
done
