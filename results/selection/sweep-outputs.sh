# Sourced by the pair scripts beside it: where a selection sweep's outputs are, for
# MODEL=gemma3 (default) or smollm2. Sets O (the outputs folder), F (the F16 model's
# file stem) and title; cell names a cell's outputs file (as the tool lists them,
# with $SI), header writes a report's opening lines, pair one `selectinfer pair`
# section ($SI), and write_whole a report whole or not at all.
case ${MODEL:-gemma3} in
    gemma3) O=results/selection-gemma3/outputs; F=gemma-3-270m.F16; title=Gemma-3-270M;;
    smollm2) O=results/selection-smollm2/outputs; F=SmolLM2-135M-Instruct.F16; title=SmolLM2-135M-Instruct;;
    *) echo "MODEL must be gemma3 or smollm2" >&2; exit 2;;
esac
# The sweep's eval cells, one tab-separated line each: model file, method, task,
# data, examples, phi, alpha, vote, decode bias, decode refit, cap, speed-only
# tokens, outputs file (`selectinfer experiment --list-outputs`, docs/commands.md).
sweep_cells=$("$SI" experiment "experiments/selection-${MODEL:-gemma3}.yaml" --list-outputs)
cell() { # cell TASK SLICE-SUFFIX METHOD [PHI ALPHA [DECODE]]: the outputs file of one sweep cell
    # (|activation| vote); DECODE is decode-bias or decode-refit=RIDGE, neither by default
    local bias=false refit=-
    case ${6:-} in decode-bias) bias=true;; decode-refit=*) refit=${6#decode-refit=};; esac
    awk -F '\t' -v model="$F$2.gguf" -v method="$3" -v task="$1" -v phi="${4:--}" -v alpha="${5:--}" -v bias="$bias" -v refit="$refit" \
        '$1 == model && $2 == method && $3 == task && $6 == phi && $7 == alpha && $8 == "abs" && $9 == bias && $10 == refit && $11 == "-" && $12 == "-" { print $13 }' <<< "$sweep_cells"
}
header() { # header TITLE SCRIPT [AFTER-TITLE]: a pair report's title and how it was made
    echo "# $1 ($title F16${3:-})"
    echo
    echo "Made by \`MODEL=${MODEL:-gemma3} results/selection/$2\` with \`selectinfer pair\` from the sweep's"
    echo "outputs in \`$O/\`: A - B on the same examples,"
    echo "1000 paired resamples (seed 12345); \`*\` where the interval excludes 0."
}
pair() { # pair TITLE A B TASK: A - B, left out unless both cells have run
    [ -f "$2" ] && [ -f "$3" ] || return 0
    echo; echo "## $1"; echo
    "$SI" pair "$2" "$3" --task "$4" | tail -n +3
}
write_whole() { # write_whole OUT FUNCTION: FUNCTION's output to OUT, whole or not at all
    tmp_out=$(mktemp); trap 'rm -f "$tmp_out"' EXIT
    "$2" > "$tmp_out"
    mv "$tmp_out" "$1"; trap - EXIT
    echo "wrote $1"
}
