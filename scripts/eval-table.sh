#!/usr/bin/env bash
# Preliminary method comparison on one model: prepares every file the methods need
# (F16 conversion, profile-guided and random slices at the paper's defaults, Q4_0 /
# Q4_K_M / Q8_0 quantizations) and appends one CSV row per method and task.
#   scripts/eval-table.sh smollm2|gemma3 EXAMPLES_PER_TASK OUT.csv
# Paper defaults: load (gamma) 0.7, static (delta) 0.3, compute (phi) 0.4, alpha 0.2.
# Shots: qa 1, translate 3, summarize 0 (XSum documents are long).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/env.sh
which=${1:?smollm2 or gemma3}
n=${2:?examples per task}
out=${3:?output csv}
cargo build --release --locked
si="$SELECTINFER_BIN"
case "$which" in
    smollm2) SELECTINFER_MODELS=smollm2 scripts/setup.sh; src=models/SmolLM2-135M-Instruct.Q4_1.gguf; base=models/SmolLM2-135M-Instruct; prof=profiles/SmolLM2-135M-Instruct.F16 ;;
    gemma3) SELECTINFER_MODELS=gemma3 scripts/setup.sh; src=models/gemma-3-270m-q4_k_m.gguf; base=models/gemma-3-270m; prof=profiles/gemma-3-270m.F16 ;;
    *) echo "unknown model $which" >&2; exit 2 ;;
esac
f16=$base.F16.gguf
[ -f "$f16" ] || "$si" convert "$src" --to f16 -o "$f16"
for t in q4_0 q4_k_m q8_0; do [ -f "$base.$t.gguf" ] || "$si" convert "$f16" --to $t -o "$base.$t.gguf"; done
[ -f "$base.random-load0.7.gguf" ] || "$si" slice -m "$f16" --random --random-seed 0 --load 0.7 --static 0.3 -o "$base.random-load0.7.gguf" >/dev/null
for task in qa translate summarize; do
    case $task in qa) shots=1 ;; translate) shots=3 ;; summarize) shots=0 ;; esac
    sliced=$base.F16.$task-load0.7.gguf
    [ -f "$sliced" ] || "$si" slice -m "$f16" --profile "$prof" --task $task --load 0.7 --static 0.3 -o "$sliced" >/dev/null
    run() { "$si" eval --task $task --limit "$n" --shots $shots -t 2 --out "$out" "$@"; }
    run -m "$f16" --method reference
    run -m "$sliced" --method dense-loaded
    run -m "$sliced" --method selectinfer --compute 0.4 --token-share 0.2
    run -m "$f16" --method coreinfer --compute 0.4 --token-share 0.2
    run -m "$sliced" --method coreinfer-loading --compute 0.4 --token-share 0.2 --no-static
    run -m "$base.random-load0.7.gguf" --method random-loading --compute 0.4 --token-share 0.2
    for t in q4_0 q4_k_m q8_0; do run -m "$base.$t.gguf" --method $t; done
done
