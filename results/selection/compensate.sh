#!/usr/bin/env bash
# Bias compensation (`slice --compensate mean`) measured with intervals, on both
# models: the translate-only profiles (results/selection/profiles/*-translate, made
# with the statistics compensation needs), gamma 0.7, delta 0.3.
#   - perplexity of the translation evaluation text (4 chunks of 512; no interval),
#     Gemma-3-270M (patch 0009 lets its loader read the bias);
#   - answer perplexity of the first N translate evaluation references (3 shots),
#     dense-loaded (phi = gamma) and at phi 0.4, each compensated slice paired
#     against the same slice without compensation (same examples, 1000 resamples).
# Rows: results/selection/perplexity.csv and answers.csv; per-example files in
# results/selection/per-example/. EXAMPLES (default 40).
set -euo pipefail
SI=${SI:-selectinfer}; S=${SLICE_DIR:-/work/sel-slices}; R=results/selection; E=$R/per-example
n=${EXAMPLES:-40}
mkdir -p "$S" "$E"
ppl() { "$SI" perplexity -m "$1" --task translate --chunks 4 --threads 2 --out "$R/perplexity.csv" "${@:2}"; }
a() { "$SI" perplexity --task translate --answers --shots 3 --limit "$n" --threads 2 --out "$R/answers.csv" "$@"; }
for model in gemma3 smollm2; do
    case $model in
        gemma3)  m=models/gemma-3-270m.F16.gguf; PT=$R/profiles/gemma-3-270m.F16-translate; p=gemma-T ;;
        smollm2) m=models/SmolLM2-135M-Instruct.F16.gguf; PT=$R/profiles/SmolLM2-135M-Instruct.F16-translate; p=smollm2-T ;;
    esac
    plain=$S/$p-load0.7.gguf comp=$S/$p-load0.7-compensate.gguf
    [ -f "$plain" ] || "$SI" slice -m "$m" --profile "$PT" --task translate --load 0.7 -o "$plain" >/dev/null
    [ -f "$comp" ] || "$SI" slice -m "$m" --profile "$PT" --task translate --load 0.7 --compensate mean -o "$comp" >/dev/null
    [ $model = gemma3 ] && ppl "$comp"
    a -m "$plain" --per-example "$E/$p-plain-dense.jsonl"
    a -m "$comp" --paired-with "$E/$p-plain-dense.jsonl" --per-example "$E/$p-comp-dense.jsonl"
    a -m "$plain" --compute 0.4 --per-example "$E/$p-plain-0.4.jsonl"
    a -m "$comp" --compute 0.4 --paired-with "$E/$p-plain-0.4.jsonl" --per-example "$E/$p-comp-0.4.jsonl"
done
