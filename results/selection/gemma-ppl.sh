#!/usr/bin/env bash
# Gemma-3-270M F16 perplexity cells of results/selection/perplexity.csv, in the
# order they ran (4 chunks of 512 of each text; a shared 2-core machine).
set -euo pipefail
SI=${SI:-selectinfer}; S=${SLICE_DIR:-/work/sel-slices}; R=results/selection
m=models/gemma-3-270m.F16.gguf; P=profiles/gemma-3-270m.F16
cs=${CS_DATA:-../shared/data/wmt16_cs_en_newstest2016_500.jsonl}
run() { nice -n 10 "$SI" "$@"; }
ppl() { run perplexity -m "$1" --task translate --chunks 4 --threads 2 --out "$R/perplexity.csv" "${@:2}"; }
sl() { [ -f "$1" ] || run slice -m "$m" -o "$@"; }
ppl "$m"
sl "$S/gemma-load0.7.gguf" --profile "$P" --task translate --load 0.7
ppl "$S/gemma-load0.7.gguf"
sl "$S/gemma-load0.7-sensitivity.gguf" --profile "$P" --task translate --load 0.7 --budget sensitivity
ppl "$S/gemma-load0.7-sensitivity.gguf"
# item 3: cs-en
ppl "$m" --data "$cs"
ppl "$S/gemma-load0.7.gguf" --data "$cs"
sl "$S/gemma-load0.7-static0.gguf" --profile "$P" --task translate --load 0.7 --static 0
ppl "$S/gemma-load0.7-static0.gguf" --data "$cs"
