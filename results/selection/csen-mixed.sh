#!/usr/bin/env bash
# Item 3: a translate ranking that includes cs-en. The committed Gemma-3-270M raws
# (qa, summarize, de-en translate) plus 16 cs-en profiling prompts; `profile merge`
# averages the two translate datasets into task-translate.json. Then cs-en and de-en
# perplexity of its gamma 0.7 slice (compare gemma-ppl.sh's de-en-profile and
# model-wide-ranking slices).
set -euo pipefail
SI=${SI:-selectinfer}; S=${SLICE_DIR:-/work/sel-slices}; R=results/selection
m=models/gemma-3-270m.F16.gguf; MIX=$R/profiles/gemma-3-270m.F16-de-cs
cs=${CS_DATA:-../shared/data/wmt16_cs_en_newstest2016_500.jsonl}
run() { nice -n 10 "$SI" "$@"; }
if [ ! -f "$MIX/task-translate.json" ]; then
    mkdir -p "$MIX/raw" && cp profiles/gemma-3-270m.F16/raw/*.json "$MIX/raw/"
    run profile -m "$m" --task translate --data "$cs" --limit 16 --gen-tokens 16 -o "$MIX" -t 2
fi
[ -f "$S/gemma-de-cs-load0.7.gguf" ] || run slice -m "$m" --profile "$MIX" --task translate --load 0.7 -o "$S/gemma-de-cs-load0.7.gguf"
run perplexity -m "$S/gemma-de-cs-load0.7.gguf" --task translate --data "$cs" --chunks 4 --threads 2 --out "$R/perplexity.csv"
run perplexity -m "$S/gemma-de-cs-load0.7.gguf" --task translate --chunks 4 --threads 2 --out "$R/perplexity.csv"
