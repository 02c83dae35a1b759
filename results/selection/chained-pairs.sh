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
chained() { # chained SLICE-SUFFIX METHOD TASK: the outputs file of a gamma 0.7 cell
    case $2 in
        selectinfer) cell "$3" ".$3-load0.7$1" selectinfer 0.4 0.2;;
        dense-loaded) cell "$3" ".$3-load0.7$1" dense-loaded;;
        reference) cell "$3" "" reference;;
        coreinfer) cell "$3" "" coreinfer 0.4 0.2;;
    esac
}
report() {
    header "Chained refit against the refit" chained-pairs.sh ", gamma 0.7"
    for t in qa translate summarize; do
        for m in selectinfer dense-loaded; do
            pair "$t, $m: refit-chained (A) against refit (B)" "$(chained -refit-chained "$m" "$t")" "$(chained -refit "$m" "$t")" "$t"
        done
        for b in reference coreinfer; do
            pair "$t: selectinfer refit-chained (A) against $b (B)" "$(chained -refit-chained selectinfer "$t")" "$(chained "" "$b" "$t")" "$t"
        done
    done
}
write_whole "$out" report
