#!/usr/bin/env bash
# Peak memory of the defaults (the refit slice, the per-prompt refit of each prompt's
# last batch) and of CoreInfer on the selection sweep's 100 summarize examples of
# Gemma-3-270M F16 (gamma 0.7, phi 0.4), by one build one after the other, and the
# defaults' outputs paired with the sweep's default cell (fitted on every prompt
# token) and with CoreInfer's. Rows -> summarize-memory.csv, the defaults' outputs ->
# per-example/gemma-summarize-default-last-batch.n100.jsonl (docs/selection.md,
# "What the default costs in memory"). Run from the repository root after the
# sweep's slices exist; about 10 minutes on 2 cores, nothing else running.
set -euo pipefail
. scripts/env.sh
B=$SELECTINFER_BIN
SI=$B
. results/selection/sweep-outputs.sh
here=results/selection
out=$here/per-example/gemma-summarize-default-last-batch.n100.jsonl
csv=$(mktemp); tmp_out=$(mktemp); core=$(mktemp); trap 'rm -f "$csv" "$tmp_out" "$core"' EXIT
rm -f "$csv"
common=(--task summarize --data data/sum_xsum_test_200.jsonl --limit 100 --shots 0 -t 2 --out "$csv" --compute 0.4 --token-share 0.2)
"$B" eval -m models/$F.summarize-load0.7-refit.gguf --method selectinfer "${common[@]}" --decode-refit 1 --outputs "$tmp_out"
"$B" eval -m models/$F.gguf --method coreinfer "${common[@]}" --decode-refit off --outputs "$core"
mv "$tmp_out" "$out"
mv "$csv" $here/summarize-memory.csv
"$B" pair "$out" "$(cell summarize .summarize-load0.7-refit selectinfer 0.4 0.2 decode-refit=1)" --task summarize --data data/sum_xsum_test_200.jsonl
"$B" pair "$out" "$core" --task summarize --data data/sum_xsum_test_200.jsonl
