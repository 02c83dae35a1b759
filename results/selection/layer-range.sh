#!/usr/bin/env bash
# Where to put the same dropped bytes, guided by layer-sensitivity.csv: the default
# range at gamma 0.7 against narrower ranges of the least sensitive layers at a lower
# gamma, with about the same FFN bytes (the perplexity rows record weight_bytes).
# Perplexity of the translation evaluation text, 4 chunks; committed profiles.
set -euo pipefail
SI=${SI:-selectinfer}; S=${SLICE_DIR:-/work/sel-slices}; R=results/selection
mkdir -p "$S"
one() { # model profile name layers load
    local f=$S/$3.gguf
    "$SI" slice -m "$1" --profile "$2" --task translate --load "$5" ${4:+--layers "$4"} -o "$f" >/dev/null
    "$SI" perplexity -m "$f" --task translate --chunks 4 --threads 2 --out "$R/layer-sensitivity.csv"
    rm -f "$f"
}
g=models/gemma-3-270m.F16.gguf; gp=profiles/gemma-3-270m.F16
one $g $gp gemma-default-load0.7 "" 0.7
one $g $gp gemma-layers4..16-load0.65 4..16 0.65
one $g $gp gemma-layers4..14-load0.58 4..14 0.58
s=models/SmolLM2-135M-Instruct.F16.gguf; sp=profiles/SmolLM2-135M-Instruct.F16
one $s $sp smollm2-default-load0.7 "" 0.7
one $s $sp smollm2-layers8..26-load0.617 8..26 0.617
one $s $sp smollm2-layers10..24-load0.507 10..24 0.507
