#!/usr/bin/env bash
# The per-prompt decode corrections against the refit they run on, on the same
# examples: `--decode-bias` and `--decode-refit 1` (today's default on a refit slice)
# paired with the refit alone (`--decode-refit off`) at gamma 0.7 and 0.55, then the
# decode refit against CoreInfer at phi 0.4 and the reference. The sweep's cells of
# `experiments/selection-gemma3.yaml` (or, with MODEL=smollm2,
# `selection-smollm2.yaml`), paired with `selectinfer pair` (the report pairs each
# variant with the paper's selection only); a pair whose cells have not run is left
# out. Writes results/selection/decode-pairs.md (decode-pairs-smollm2.md).
set -euo pipefail
SI=${SI:-selectinfer}
. "$(dirname "$0")/sweep-outputs.sh"
case ${MODEL:-gemma3} in gemma3) out=results/selection/decode-pairs.md;; smollm2) out=results/selection/decode-pairs-smollm2.md;; esac
refit() { # refit TASK GAMMA [DECODE]: the outputs file of a refit cell at phi 0.4
    cell "$1" ".$1-load$2-refit" selectinfer 0.4 0.2 "${3:-}"
}
anchor() { # anchor METHOD TASK
    case $1 in
        reference) cell "$2" "" reference;;
        coreinfer) cell "$2" "" coreinfer 0.4 0.2;;
    esac
}
report() {
    header "Decode corrections against the refit" decode-pairs.sh ", phi 0.4"
    for t in qa translate summarize; do
        for g in 0.7 0.55; do
            for d in decode-bias decode-refit=1; do
                pair "$t, gamma $g: refit with --${d%=1} (A) against the refit alone (B)" "$(refit "$t" "$g" "$d")" "$(refit "$t" "$g")" "$t"
            done
        done
        for b in coreinfer reference; do
            pair "$t, gamma 0.7: refit with --decode-refit (A) against $b (B)" "$(refit "$t" 0.7 decode-refit=1)" "$(anchor "$b" "$t")" "$t"
        done
    done
}
write_whole "$out" report
