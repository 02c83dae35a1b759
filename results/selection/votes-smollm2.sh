#!/usr/bin/env bash
# SmolLM2-135M F16, gamma 0.7 translate slice (committed profile), phi 0.4: answer
# perplexity of the first 20 translate evaluation references (3 shots) through
# the decode path, for the vote (|a| vs signed) and alpha 0.1 / 0.2 / 0.4, each
# paired against today's setting (|a|, alpha 0.2) on the same examples.
set -euo pipefail
SI=${SI:-selectinfer}; S=${SLICE_DIR:-/work/sel-slices}; R=results/selection; E=$R/per-example
m=models/SmolLM2-135M-Instruct.F16.gguf; f=$S/smollm2-load0.7.gguf; n=${EXAMPLES:-20}
mkdir -p "$E"
run() { nice -n 10 "$SI" "$@"; }
a() { run perplexity --task translate --answers --shots 3 --limit "$n" --threads 2 --out "$R/answers.csv" "$@"; }
[ -f "$f" ] || run slice -m "$m" --profile profiles/SmolLM2-135M-Instruct.F16 --task translate --load 0.7 -o "$f"
base=$E/smollm2-abs-0.2.jsonl
a -m "$f" --compute 0.4 --per-example "$base"
a -m "$f" --compute 0.4 --vote signed --paired-with "$base" --per-example "$E/smollm2-signed-0.2.jsonl"
a -m "$f" --paired-with "$base" --per-example "$E/smollm2-dense-loaded.jsonl"
a -m "$m" --paired-with "$base" --per-example "$E/smollm2-reference.jsonl"
for al in 0.1 0.4; do
    a -m "$f" --compute 0.4 --token-share "$al" --paired-with "$base" --per-example "$E/smollm2-abs-$al.jsonl"
done
a -m "$f" --compute 0.4 --token-share 0.4 --vote signed --paired-with "$base" --per-example "$E/smollm2-signed-0.4.jsonl"
