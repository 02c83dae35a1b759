#!/usr/bin/env bash
# Gemma-3-270M F16: activation vs contribution importance, both from the
# translate-only profile results/selection/profiles/gemma-3-270m.F16-translate
# (made with: selectinfer profile -m models/gemma-3-270m.F16.gguf --task translate
#  --limit 16 --gen-tokens 16 -o results/selection/profiles/gemma-3-270m.F16-translate -t 2;
# its activation ranking equals the committed profile's task-translate.json exactly),
# so task and model-wide rankings are both the translate ranking in either case.
set -euo pipefail
SI=${SI:-selectinfer}; S=${SLICE_DIR:-/work/sel-slices}; R=results/selection
m=models/gemma-3-270m.F16.gguf; PT=$R/profiles/gemma-3-270m.F16-translate
run() { nice -n 10 "$SI" "$@"; }
ppl() { run perplexity -m "$1" --task translate --chunks 4 --threads 2 --out "$R/perplexity.csv" "${@:2}"; }
sl() { [ -f "$1" ] || run slice -m "$m" -o "$@"; }
sl "$S/gemma-T-load0.7-contribution.gguf" --profile "$PT" --task translate --load 0.7 --importance contribution
ppl "$S/gemma-T-load0.7-contribution.gguf"
sl "$S/gemma-T-load0.7.gguf" --profile "$PT" --task translate --load 0.7
ppl "$S/gemma-T-load0.7.gguf"
sl "$S/gemma-T-load0.7-contribution-sensitivity.gguf" --profile "$PT" --task translate --load 0.7 --importance contribution --budget sensitivity
ppl "$S/gemma-T-load0.7-contribution-sensitivity.gguf"
