#!/usr/bin/env bash
# What requantizing a quantized ffn_down neuron-major does to the model, with paired
# intervals: answer perplexity of the first N qa evaluation references (1 shot) on
# each gamma 0.7 qa slice that scripts/bench-bases.sh benchmarks, dense-loaded, the
# neuron-major slice paired against the column slice of the same base (the same kept
# neurons; both requantize a quantized ffn_down once, along different axes).
# Rows: results/bench/requant-answers.csv; per-example files: results/bench/per-example/.
# EXAMPLES (default 40). Run after scripts/bench-bases.sh (it makes the slices).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. scripts/env.sh
si="$SELECTINFER_BIN"; n=${EXAMPLES:-40}; E=results/bench/per-example
mkdir -p "$E"
for model in SmolLM2-135M-Instruct gemma-3-270m; do
    for base in q8_0 q4_k_m; do
        cols=models/$model.$base.qa-load0.7.gguf; nm=models/$model.$base.qa-load0.7.neurons.gguf
        for f in "$cols" "$nm"; do [ -f "$f" ] || { echo "requant-answers: $f is missing (run scripts/bench-bases.sh)" >&2; exit 1; }; done
        a=("$si" perplexity --task qa --answers --shots 1 --limit "$n" --threads 2 --out results/bench/requant-answers.csv)
        "${a[@]}" -m "$cols" --per-example "$E/$model.$base.columns.jsonl"
        "${a[@]}" -m "$nm" --paired-with "$E/$model.$base.columns.jsonl" --per-example "$E/$model.$base.neurons.jsonl"
    done
done
