#!/usr/bin/env bash
# The exact commands behind results/selection/*.csv (issue #16): perplexity of the
# selection variants on a few chunks, answer perplexity (decode path, selective
# computation) for the vote and alpha. Run from the repository root with the
# release binary in $SI, under nice (a shared 2-core machine).
#   results/selection/run.sh gemma|smollm2|cs-en|votes-gemma|votes-smollm2 [CHUNKS]
set -euo pipefail
SI=${SI:-selectinfer}
which=$1
chunks=${2:-6}
R=results/selection
slices=${SLICE_DIR:-models/selection}
mkdir -p "$slices" "$R/per-example"
run() { nice -n 10 "$SI" "$@"; }
# perplexity on the task's evaluation text (and on wikitext-2 unless a data file is given)
ppl() {
    local m=$1 task=$2 data=${3:-}
    if [ -n "$data" ]; then
        run perplexity -m "$m" --task "$task" --data "$data" --chunks "$chunks" --threads 2 --out "$R/perplexity.csv"
    else
        run perplexity -m "$m" --task "$task" --chunks "$chunks" --threads 2 --out "$R/perplexity.csv"
        run perplexity -m "$m" --chunks "$chunks" --threads 2 --out "$R/perplexity.csv"
    fi
}
sl() { # out model profile task load [slice options...]
    local out=$1 m=$2 p=$3 t=$4 g=$5; shift 5
    [ -f "$out" ] || run slice -m "$m" --profile "$p" --task "$t" --load "$g" "$@" -o "$out"
}

case "$which" in
    gemma)
        m=models/gemma-3-270m.F16.gguf
        P=profiles/gemma-3-270m.F16                      # committed: 3 tasks, |a| sums only
        PT=$R/profiles/gemma-3-270m.F16-translate        # translate only, with the new statistics
        ppl "$m" translate
        for g in 0.7 0.55; do
            s=$slices/gemma-translate-load$g
            sl "$s.gguf" "$m" "$P" translate "$g"
            sl "$s-sensitivity.gguf" "$m" "$P" translate "$g" --budget sensitivity
            # importance: activation vs contribution, both from the translate-only profile
            sl "$s-T.gguf" "$m" "$PT" translate "$g"
            sl "$s-T-contribution.gguf" "$m" "$PT" translate "$g" --importance contribution
            sl "$s-T-contribution-sensitivity.gguf" "$m" "$PT" translate "$g" --importance contribution --budget sensitivity
            for f in "" -sensitivity -T -T-contribution -T-contribution-sensitivity; do ppl "$s$f.gguf" translate; done
        done
        ;;
    smollm2)
        m=models/SmolLM2-135M-Instruct.F16.gguf
        P=profiles/SmolLM2-135M-Instruct.F16             # 3 tasks, with the new statistics
        ppl "$m" translate
        for g in 0.7 0.55; do
            s=$slices/smollm2-translate-load$g
            sl "$s.gguf" "$m" "$P" translate "$g"
            sl "$s-contribution.gguf" "$m" "$P" translate "$g" --importance contribution
            sl "$s-sensitivity.gguf" "$m" "$P" translate "$g" --budget sensitivity
            sl "$s-compensate.gguf" "$m" "$P" translate "$g" --compensate mean
            sl "$s-sensitivity-compensate.gguf" "$m" "$P" translate "$g" --budget sensitivity --compensate mean
            sl "$s-contribution-compensate.gguf" "$m" "$P" translate "$g" --importance contribution --compensate mean
            for f in "" -contribution -sensitivity -compensate -sensitivity-compensate -contribution-compensate; do ppl "$s$f.gguf" translate; done
        done
        ;;
    cs-en)
        # Item 3: cs-en with the de-en profile, with a profile whose translate
        # ranking also includes cs-en, and with the model-wide ranking alone.
        m=models/gemma-3-270m.F16.gguf
        cs=${CS_DATA:-../shared/data/wmt16_cs_en_newstest2016_500.jsonl}
        MIX=$R/profiles/gemma-3-270m.F16-de-cs
        ppl "$m" translate "$cs"
        sl "$slices/gemma-translate-load0.7.gguf" "$m" profiles/gemma-3-270m.F16 translate 0.7
        sl "$slices/gemma-model-wide-load0.7.gguf" "$m" profiles/gemma-3-270m.F16 translate 0.7 --static 0
        sl "$slices/gemma-de-cs-load0.7.gguf" "$m" "$MIX" translate 0.7
        for f in gemma-translate-load0.7 gemma-model-wide-load0.7 gemma-de-cs-load0.7; do ppl "$slices/$f.gguf" translate "$cs"; done
        ppl "$slices/gemma-de-cs-load0.7.gguf" translate
        ;;
    votes-gemma|votes-smollm2)
        # Answer perplexity of the translate references (3 shots, 40 examples) with
        # phi 0.4: the vote (|a| vs signed) and alpha 0.1 / 0.2 / 0.4, paired
        # against today's setting (|a|, alpha 0.2) on the same examples.
        if [ "$which" = votes-gemma ]; then f=$slices/gemma-translate-load0.7.gguf; ref=models/gemma-3-270m.F16.gguf; tag=gemma
        else f=$slices/smollm2-translate-load0.7.gguf; ref=models/SmolLM2-135M-Instruct.F16.gguf; tag=smollm2; fi
        n=${EXAMPLES:-40}
        a() { run perplexity --task translate --answers --shots 3 --limit "$n" --threads 2 --out "$R/answers.csv" "$@"; }
        a -m "$ref" --per-example "$R/per-example/$tag-reference.jsonl"
        a -m "$f" --per-example "$R/per-example/$tag-dense-loaded.jsonl"
        base=$R/per-example/$tag-abs-0.2.jsonl
        a -m "$f" --compute 0.4 --per-example "$base"
        a -m "$f" --compute 0.4 --vote signed --paired-with "$base" --per-example "$R/per-example/$tag-signed-0.2.jsonl"
        for al in 0.1 0.4; do
            a -m "$f" --compute 0.4 --token-share "$al" --paired-with "$base" --per-example "$R/per-example/$tag-abs-$al.jsonl"
            a -m "$f" --compute 0.4 --token-share "$al" --vote signed --paired-with "$base" --per-example "$R/per-example/$tag-signed-$al.jsonl"
        done
        ;;
    *) echo "usage: $0 gemma|smollm2|cs-en|votes-gemma|votes-smollm2 [CHUNKS]" >&2; exit 2 ;;
esac
