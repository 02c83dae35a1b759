#!/usr/bin/env bash
# The chained refit against the plain refit on the same examples (gamma 0.7): the
# sweep's cells of `experiments/selection-gemma3.yaml` (or, with MODEL=smollm2,
# `selection-smollm2.yaml`) paired directly with `selectinfer pair` (the report pairs
# each variant with today's default only), at phi 0.4 and dense-loaded where those
# cells ran. Then the chained cells against the reference and CoreInfer. Writes
# results/selection/chained-pairs.md (chained-pairs-smollm2.md).
set -euo pipefail
SI=${SI:-selectinfer}
. "$(dirname "$0")/sweep-outputs.sh"
case ${MODEL:-gemma3} in gemma3) out=results/selection/chained-pairs.md;; smollm2) out=results/selection/chained-pairs-smollm2.md;; esac
cell() { # cell SLICE-SUFFIX METHOD TASK: the outputs file of a sweep cell
    local d; d=$(data "$3")
    case $2 in
        selectinfer) echo "$O/$F.$3-load0.7$1.selectinfer.$3.$d.compute0.4-alpha0.2.n$(n "$3").jsonl";;
        dense-loaded) echo "$O/$F.$3-load0.7$1.dense-loaded.$3.$d.n$(n "$3").jsonl";;
        reference) echo "$O/$F.reference.$3.$d.n$(n "$3").jsonl";;
        coreinfer) echo "$O/$F.coreinfer.$3.$d.compute0.4-alpha0.2.n$(n "$3").jsonl";;
    esac
}
report() {
    echo "# Chained refit against the refit ($title F16, gamma 0.7)"
    echo
    echo "Made by \`MODEL=${MODEL:-gemma3} results/selection/chained-pairs.sh\` with \`selectinfer pair\` from the sweep's"
    echo "outputs in \`$O/\`: A - B on the same examples,"
    echo "1000 paired resamples (seed 12345); \`*\` where the interval excludes 0."
    for t in qa translate summarize; do
        for m in selectinfer dense-loaded; do
            a=$(cell -refit-chained "$m" "$t"); b=$(cell -refit "$m" "$t")
            [ -f "$a" ] && [ -f "$b" ] || continue
            echo; echo "## $t, $m: refit-chained (A) against refit (B)"; echo
            "$SI" pair "$a" "$b" --task "$t" | tail -n +3
        done
        for b in reference coreinfer; do
            a=$(cell -refit-chained selectinfer "$t"); c=$(cell "" "$b" "$t")
            [ -f "$a" ] && [ -f "$c" ] || continue
            echo; echo "## $t: selectinfer refit-chained (A) against $b (B)"; echo
            "$SI" pair "$a" "$c" --task "$t" | tail -n +3
        done
    done
}
write_whole "$out" report
