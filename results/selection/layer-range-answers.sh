#!/usr/bin/env bash
# The layer-range lead of layer-range.sh with paired intervals: answer perplexity of
# the first N evaluation references (translate 3 shots, qa 1 shot), dense-loaded, of
# the best narrower range against the default range at the same FFN bytes.
# Rows: results/selection/answers.csv; per-example files in results/selection/per-example/.
set -euo pipefail
SI=${SI:-selectinfer}; S=${SLICE_DIR:-/work/sel-slices}; R=results/selection; E=$R/per-example
n=${EXAMPLES:-40}
mkdir -p "$S" "$E"
for model in smollm2 gemma3; do
    case $model in
        gemma3)  m=models/gemma-3-270m.F16.gguf; P=profiles/gemma-3-270m.F16; p=gemma; layers=4..14; load=0.58 ;;
        smollm2) m=models/SmolLM2-135M-Instruct.F16.gguf; P=profiles/SmolLM2-135M-Instruct.F16; p=smollm2; layers=10..24; load=0.507 ;;
    esac
    for task in translate qa; do
        shots=3; [ $task = qa ] && shots=1
        def=$S/$p-$task-default-load0.7.gguf; nar=$S/$p-$task-layers$layers-load$load.gguf
        [ -f "$def" ] || "$SI" slice -m "$m" --profile "$P" --task $task --load 0.7 -o "$def" >/dev/null
        [ -f "$nar" ] || "$SI" slice -m "$m" --profile "$P" --task $task --load $load --layers $layers -o "$nar" >/dev/null
        a=("$SI" perplexity --task $task --answers --shots $shots --limit "$n" --threads 2 --out "$R/answers.csv")
        "${a[@]}" -m "$def" --per-example "$E/$p-$task-default.jsonl"
        "${a[@]}" -m "$nar" --paired-with "$E/$p-$task-default.jsonl" --per-example "$E/$p-$task-layers$layers.jsonl"
        rm -f "$def" "$nar"
    done
done
