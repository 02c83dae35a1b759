# Sourced by the pair scripts beside it: where a selection sweep's outputs are, for
# MODEL=gemma3 (default) or smollm2, and the evaluation file and example count of
# each task's cells. Sets O (the outputs folder), F (the F16 model's file stem) and
# title; cell names a cell's outputs file, header writes a report's opening lines,
# pair one `selectinfer pair` section ($SI), and write_whole a report whole or not
# at all.
case ${MODEL:-gemma3} in
    gemma3) O=results/selection-gemma3/outputs; F=gemma-3-270m.F16; title=Gemma-3-270M;;
    smollm2) O=results/selection-smollm2/outputs; F=SmolLM2-135M-Instruct.F16; title=SmolLM2-135M-Instruct;;
    *) echo "MODEL must be gemma3 or smollm2" >&2; exit 2;;
esac
data() { case $1 in qa) echo qa_squad11dev_xquad_en_500;; translate) echo wmt16_de_en_newstest2016_500;; summarize) echo sum_xsum_test_200;; esac; }
n() { case $1 in summarize) echo 100;; *) echo 200;; esac; }
cell() { # cell TASK SLICE-SUFFIX METHOD [SETTINGS]: the outputs file of one sweep cell
    local s=${4:+.$4}
    echo "$O/$F$2.$3.$1.$(data "$1")$s.n$(n "$1").jsonl"
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
