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
refit() { # refit TASK GAMMA DECODE-SUFFIX: the outputs file of a refit cell at phi 0.4
    echo "$O/$F.$1-load$2-refit.selectinfer.$1.$(data "$1").compute0.4-alpha0.2$3.n$(n "$1").jsonl"
}
anchor() { # anchor METHOD TASK
    case $1 in
        reference) echo "$O/$F.reference.$2.$(data "$2").n$(n "$2").jsonl";;
        coreinfer) echo "$O/$F.coreinfer.$2.$(data "$2").compute0.4-alpha0.2.n$(n "$2").jsonl";;
    esac
}
report() {
    echo "# Decode corrections against the refit ($title F16, phi 0.4)"
    echo
    echo "Made by \`MODEL=${MODEL:-gemma3} results/selection/decode-pairs.sh\` with \`selectinfer pair\` from the sweep's"
    echo "outputs in \`$O/\`: A - B on the same examples,"
    echo "1000 paired resamples (seed 12345); \`*\` where the interval excludes 0."
    for t in qa translate summarize; do
        for g in 0.7 0.55; do
            for d in decode-bias decode-refit1; do
                pair "$t, gamma $g: refit with --${d%1} (A) against the refit alone (B)" "$(refit "$t" "$g" ".$d")" "$(refit "$t" "$g" "")" "$t"
            done
        done
        for b in coreinfer reference; do
            pair "$t, gamma 0.7: refit with --decode-refit (A) against $b (B)" "$(refit "$t" 0.7 .decode-refit1)" "$(anchor "$b" "$t")" "$t"
        done
    done
}
write_whole "$out" report
