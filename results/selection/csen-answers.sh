#!/usr/bin/env bash
# Item 3 with paired intervals: answer perplexity of the first N cs-en evaluation
# references (3 shots), dense-loaded gamma 0.7 slices of Gemma-3-270M F16 cut from
#   - the de-en-only profile (the committed profile before b23e30d: git show ebea714),
#   - the model-wide ranking alone of that profile (--static 0),
#   - today's default profile, whose translate ranking averages de-en and cs-en,
# each paired with the de-en-only profile's slice; the reference for scale. And
# de-en answers of the de-en-only and the default profile's slices, to check that
# adding cs-en does not cost de-en.
# Rows: results/selection/answers.csv; per-example files in results/selection/per-example/.
set -euo pipefail
SI=${SI:-selectinfer}; S=${SLICE_DIR:-/work/sel-slices}; R=results/selection; E=$R/per-example
n=${EXAMPLES:-40}
m=models/gemma-3-270m.F16.gguf
cs=data/wmt16_cs_en_newstest2016_500.jsonl
old=$S/gemma-profile-de-en
mkdir -p "$S" "$E"
if [ ! -f "$old/model.json" ]; then
    rm -rf "$old" && mkdir -p "$old"
    git archive ebea714 profiles/gemma-3-270m.F16 | tar -x -C "$old" --strip-components=2
fi
slice() { [ -f "$S/$1" ] || "$SI" slice -m "$m" --task translate --load 0.7 -o "$S/$1" "${@:2}" >/dev/null; }
slice gemma-de-load0.7.gguf --profile "$old"
slice gemma-de-load0.7-static0.gguf --profile "$old" --static 0
slice gemma-decs-load0.7.gguf --profile profiles/gemma-3-270m.F16
for data in "$cs" data/wmt16_de_en_newstest2016_500.jsonl; do
    pair=$(basename "$data" _newstest2016_500.jsonl | sed 's/wmt16_//')
    # run NAME FILE [--paired-with F]: skipped when its per-example file exists (resumable).
    run() { [ -f "$E/gemma-$pair-$1.jsonl" ] || "$SI" perplexity --task translate --data "$data" --answers --shots 3 --limit "$n" --threads 2 --out "$R/answers.csv" -m "$2" --per-example "$E/gemma-$pair-$1.jsonl" "${@:3}"; }
    base=(--paired-with "$E/gemma-$pair-de-profile.jsonl")
    run de-profile "$S/gemma-de-load0.7.gguf"
    run decs-profile "$S/gemma-decs-load0.7.gguf" "${base[@]}"
    [ "$pair" = cs_en ] || continue
    run reference "$m" "${base[@]}"
    run model-wide "$S/gemma-de-load0.7-static0.gguf" "${base[@]}"
done
rm -f "$S"/gemma-de-load0.7.gguf "$S"/gemma-de-load0.7-static0.gguf "$S"/gemma-decs-load0.7.gguf
