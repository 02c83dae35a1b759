#!/usr/bin/env bash
# SmolLM2-135M F16 perplexity cells of results/selection/perplexity.csv (4 chunks of
# 512 of the translate evaluation text). The translate-only profile
# results/selection/profiles/SmolLM2-135M-Instruct.F16-translate (made with:
# selectinfer profile -m models/SmolLM2-135M-Instruct.F16.gguf --task translate
#  --limit 40 --gen-tokens 32 -o results/selection/profiles/SmolLM2-135M-Instruct.F16-translate -t 2)
# carries the signed sums that compensation needs; with it, task and model-wide
# rankings are both the translate ranking, so variants compare with its plain slice.
set -euo pipefail
SI=${SI:-selectinfer}; S=${SLICE_DIR:-/work/sel-slices}; R=results/selection
m=models/SmolLM2-135M-Instruct.F16.gguf; PT=$R/profiles/SmolLM2-135M-Instruct.F16-translate
run() { nice -n 10 "$SI" "$@"; }
ppl() { run perplexity -m "$1" --task translate --chunks 4 --threads 2 --out "$R/perplexity.csv" "${@:2}"; }
sl() { [ -f "$1" ] || run slice -m "$m" -o "$@"; }
ppl "$m"
sl "$S/smollm2-T-load0.7.gguf" --profile "$PT" --task translate --load 0.7
ppl "$S/smollm2-T-load0.7.gguf"
sl "$S/smollm2-T-load0.7-compensate.gguf" --profile "$PT" --task translate --load 0.7 --compensate mean
ppl "$S/smollm2-T-load0.7-compensate.gguf"
sl "$S/smollm2-T-load0.7-contribution.gguf" --profile "$PT" --task translate --load 0.7 --importance contribution
ppl "$S/smollm2-T-load0.7-contribution.gguf"
sl "$S/smollm2-T-load0.55.gguf" --profile "$PT" --task translate --load 0.55
ppl "$S/smollm2-T-load0.55.gguf"
sl "$S/smollm2-T-load0.55-compensate.gguf" --profile "$PT" --task translate --load 0.55 --compensate mean
ppl "$S/smollm2-T-load0.55-compensate.gguf"
