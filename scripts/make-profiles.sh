#!/usr/bin/env bash
# Re-creates the committed profiles under profiles/ (the commands that made them).
# Translate is profiled on every bundled pair (de-en and cs-en; Task::profiling_data).
# Each model is profiled from its F16 conversion (the paper profiles the original
# model), on the profiling split of the bundled datasets.
#   scripts/make-profiles.sh [smollm2|gemma3|all] [EXAMPLES_PER_TASK] [GEN_TOKENS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/env.sh
which=${1:-all}
n=${2:-40}
gen=${3:-32}
cargo build --release --locked
si="$SELECTINFER_BIN"

profile_model() { # quantized-source f16-target profile-dir
    [ -f "$2" ] || "$si" convert "$1" --to f16 -o "$2"
    for task in qa translate summarize; do
        "$si" profile -m "$2" --task "$task" --limit "$n" --gen-tokens "$gen" -o "$3" --no-merge
    done
    "$si" profile merge "$3"
    "$si" profile overlap "$3" | tee "$3/overlap.md"
}

if [ "$which" = all ] || [ "$which" = smollm2 ]; then
    SELECTINFER_MODELS=smollm2 scripts/setup.sh
    profile_model models/SmolLM2-135M-Instruct.Q4_1.gguf models/SmolLM2-135M-Instruct.F16.gguf profiles/SmolLM2-135M-Instruct.F16
fi
if [ "$which" = all ] || [ "$which" = gemma3 ]; then
    SELECTINFER_MODELS=gemma3 scripts/setup.sh
    profile_model models/gemma-3-270m-q4_k_m.gguf models/gemma-3-270m.F16.gguf profiles/gemma-3-270m.F16
fi
