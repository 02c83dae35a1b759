#!/usr/bin/env bash
# Perplexity of the selection variants (issue #16): the exact commands behind
# results/selection/perplexity.csv. Run from the repository root with the release
# binary in $SI; small runs (a few chunks) under nice, as on a shared machine.
# Usage: results/selection/run.sh gemma|smollm2|cs-en [CHUNKS]
set -euo pipefail
SI=${SI:-selectinfer}
which=$1
chunks=${2:-6}
out=results/selection/perplexity.csv
slices=${SLICE_DIR:-models/selection}
mkdir -p "$slices"
run() { nice -n 10 "$SI" "$@"; }

ppl() { # model label-free: perplexity on the task text and on wikitext-2
    local m=$1 task=$2 data=${3:-}
    if [ -n "$data" ]; then
        run perplexity -m "$m" --task "$task" --data "$data" --chunks "$chunks" --threads 2 --out "$out"
    else
        run perplexity -m "$m" --task "$task" --chunks "$chunks" --threads 2 --out "$out"
        run perplexity -m "$m" --chunks "$chunks" --threads 2 --out "$out"
    fi
}

variants() { # model profile prefix task compensation-ok
    local m=$1 p=$2 pre=$3 task=$4 comp=$5
    ppl "$m" "$task"
    for g in 0.7 0.55; do
        local base="$slices/$pre-$task-load$g"
        run slice -m "$m" --profile "$p" --task "$task" --load "$g" -o "$base.gguf"
        run slice -m "$m" --profile "$p" --task "$task" --load "$g" --importance contribution -o "$base-contribution.gguf"
        run slice -m "$m" --profile "$p" --task "$task" --load "$g" --budget sensitivity -o "$base-sensitivity.gguf"
        run slice -m "$m" --profile "$p" --task "$task" --load "$g" --budget sensitivity --importance contribution -o "$base-sensitivity-contribution.gguf"
        local files=("$base.gguf" "$base-contribution.gguf" "$base-sensitivity.gguf" "$base-sensitivity-contribution.gguf")
        if [ "$comp" = yes ]; then
            run slice -m "$m" --profile "$p" --task "$task" --load "$g" --compensate mean -o "$base-compensate.gguf"
            run slice -m "$m" --profile "$p" --task "$task" --load "$g" --compensate mean --importance contribution -o "$base-contribution-compensate.gguf"
            run slice -m "$m" --profile "$p" --task "$task" --load "$g" --compensate mean --budget sensitivity -o "$base-sensitivity-compensate.gguf"
            files+=("$base-compensate.gguf" "$base-contribution-compensate.gguf" "$base-sensitivity-compensate.gguf")
        fi
        for f in "${files[@]}"; do ppl "$f" "$task"; done
    done
}

case "$which" in
    gemma) variants models/gemma-3-270m.F16.gguf profiles/gemma-3-270m.F16 gemma-3-270m.F16 translate no ;;
    smollm2) variants models/SmolLM2-135M-Instruct.F16.gguf profiles/SmolLM2-135M-Instruct.F16 SmolLM2-135M-Instruct.F16 translate yes ;;
    cs-en)
        # Item 3: cs-en perplexity with the de-en profile, with a profile whose
        # translate ranking also includes cs-en, and with the model-wide ranking alone.
        m=models/gemma-3-270m.F16.gguf
        cs=${CS_DATA:-../shared/data/wmt16_cs_en_newstest2016_500.jsonl}
        mixed=${MIXED_PROFILE:-results/selection/profiles/gemma-3-270m.F16-de-cs}
        ppl "$m" translate "$cs"
        run slice -m "$m" --profile profiles/gemma-3-270m.F16 --task translate -o "$slices/gemma-de-en-load0.7.gguf"
        run slice -m "$m" --profile profiles/gemma-3-270m.F16 --task translate --static 0 -o "$slices/gemma-model-wide-load0.7.gguf"
        run slice -m "$m" --profile "$mixed" --task translate -o "$slices/gemma-de-cs-load0.7.gguf"
        run slice -m "$m" --profile "$mixed" --task translate --budget sensitivity -o "$slices/gemma-de-cs-load0.7-sensitivity.gguf"
        for f in gemma-de-en-load0.7 gemma-model-wide-load0.7 gemma-de-cs-load0.7 gemma-de-cs-load0.7-sensitivity; do
            ppl "$slices/$f.gguf" translate "$cs"
            ppl "$slices/$f.gguf" translate
        done
        ;;
    *) echo "usage: $0 gemma|smollm2|cs-en [CHUNKS]" >&2; exit 2 ;;
esac
