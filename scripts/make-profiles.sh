#!/usr/bin/env bash
# Re-creates the committed profiles under profiles/ (the commands that made them).
# Translate is profiled on every bundled pair (de-en and cs-en; Task::profiling_data).
# SmolLM2 and Gemma are profiled from their F16 conversions (the paper profiles the
# original model), on the profiling split of the bundled datasets. The 1.5B Qwen2.5
# file has no F16 original: it is profiled as it is, with profile's defaults (as a
# user's first profile is; about 26 minutes on 2 cores, by the CPU), and committed packed
# (gzip -n; docs/formats.md), about 80 MB instead of 170.
#   scripts/make-profiles.sh [smollm2|gemma3|qwen2.5-1.5b|all] [EXAMPLES_PER_TASK] [GEN_TOKENS]
# (EXAMPLES_PER_TASK and GEN_TOKENS are for the F16 models.)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/env.sh
which=${1:-all}
n=${2:-40}
gen=${3:-32}
cargo build --release --locked
si="$SELECTINFER_BIN"

profile_tasks() { # model profile-dir [profile options]
    local model=$1 dir=$2
    shift 2
    for task in qa translate summarize; do
        "$si" profile -m "$model" --task "$task" -o "$dir" --no-merge "$@"
    done
    "$si" profile merge "$dir"
    "$si" profile overlap "$dir" | tee "$dir/overlap.md"
}

profile_model() { # quantized-source f16-target profile-dir
    [ -f "$2" ] || "$si" convert "$1" --to f16 -o "$2"
    profile_tasks "$2" "$3" --limit "$n" --gen-tokens "$gen"
}

if [ "$which" = all ] || [ "$which" = smollm2 ]; then
    SELECTINFER_MODELS=smollm2 scripts/setup.sh
    profile_model models/SmolLM2-135M-Instruct.Q4_1.gguf models/SmolLM2-135M-Instruct.F16.gguf profiles/SmolLM2-135M-Instruct.F16
fi
if [ "$which" = all ] || [ "$which" = gemma3 ]; then
    SELECTINFER_MODELS=gemma3 scripts/setup.sh
    profile_model models/gemma-3-270m-q4_k_m.gguf models/gemma-3-270m.F16.gguf profiles/gemma-3-270m.F16
fi
if [ "$which" = all ] || [ "$which" = qwen2.5-1.5b ]; then
    SELECTINFER_MODELS=qwen2.5-1.5b scripts/setup.sh
    dir=profiles/qwen2.5-coder-1.5b-instruct.Q4_K_M.spread
    profile_tasks models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf "$dir"
    find "$dir" -name '*.json' -exec gzip -n -f {} +
fi
