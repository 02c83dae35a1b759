#!/usr/bin/env bash
# Per-layer sensitivity measured on the output: perplexity of the translation
# evaluation text (4 chunks of 512) when ONE layer is sliced at gamma 0.7 (the
# committed profile's translate slice, delta 0.3) and every other layer stays whole.
# The groundwork for a per-layer budget weighted by what each layer's dropped neurons
# cost the output, rather than by activation mass within the layer (docs/selection.md).
# Rows: results/selection/layer-sensitivity.csv (the `model` column names the layer).
set -euo pipefail
SI=${SI:-selectinfer}; S=${SLICE_DIR:-/work/sel-slices}; R=results/selection
mkdir -p "$S"
for model in gemma3 smollm2; do
    case $model in
        gemma3)  m=models/gemma-3-270m.F16.gguf; P=profiles/gemma-3-270m.F16; n=18; p=gemma ;;
        smollm2) m=models/SmolLM2-135M-Instruct.F16.gguf; P=profiles/SmolLM2-135M-Instruct.F16; n=30; p=smollm2 ;;
    esac
    "$SI" perplexity -m "$m" --task translate --chunks 4 --threads 2 --out "$R/layer-sensitivity.csv"
    for l in $(seq 0 $((n - 1))); do
        f=$S/$p-layer$l-load0.7.gguf
        "$SI" slice -m "$m" --profile "$P" --task translate --load 0.7 --layers "$l..$((l + 1))" -o "$f" >/dev/null
        "$SI" perplexity -m "$f" --task translate --chunks 4 --threads 2 --out "$R/layer-sensitivity.csv"
        rm -f "$f"
    done
done
