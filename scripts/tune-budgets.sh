#!/usr/bin/env bash
# Issue #41, "the tuner's promise": runs `selectinfer tune` itself, for each task on
# Gemma-3-270M and the 1.5B model, with no budget and under the two budgets that
# the tune-check reports use, from the measurements the committed tunes made
# (results/tune-check-*/frontier*: tune resumes from its work folder and measures
# nothing again), and writes what it chose, the slice it wrote and its exit code to
# results/tune-budgets/README.md. The tune-check reports (spearman*.md) compute the
# same choices from the same measurements and score each chosen point on the
# evaluation split; this checks that the command a user runs makes those choices.
#
# Usage: scripts/tune-budgets.sh            (models from scripts/setup.sh; about
#        10 minutes on 2 cores, most of it slicing the 1.5B model's grid again)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
bin=${SELECTINFER_BIN}
out=results/tune-budgets
work=$(mktemp -d "${TMPDIR:-/tmp}/tune-budgets.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"

report="$work/README.md"
{
  echo "# \`selectinfer tune\` under memory budgets"
  echo
  echo "Made by \`scripts/tune-budgets.sh\` on $(date -u +%Y-%m-%d), commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src || echo -dirty)."
  echo "Each row is one run of \`selectinfer tune -m MODEL --task TASK --profile P --work DIR [--mem-budget B] -o OUT.gguf\`"
  echo "on a copy of the committed tune's work folder (its KL, speed and peak RSS measurements;"
  echo "tune measures nothing again, it slices the chosen point), at the default \`--max-loss\` 0.15."
  echo "The tune-check report named in each row computes the same choice from the same"
  echo "measurements and scores the chosen point on the evaluation split with its paired"
  echo "difference to the dense file. Full outputs: \`MODEL-TASK-BUDGET.txt\`."
  echo
  echo "| model | task | --mem-budget | exit | tune's choice | slice written | tune-check's choice | same |"
  echo "|---|---|---|---|---|---|---|---|"
} > "$report"

# model name, file, the profile its tunes used, tune-check folder, budgets
runs=(
  "gemma3|models/gemma-3-270m-q4_k_m.gguf|profiles/gemma-3-270m-q4_k_m|results/tune-check-gemma3|340MiB 333MiB"
  "qwen2.5-1.5b|models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf|profiles/qwen2.5-coder-1.5b-instruct.Q4_K_M|results/tune-check-qwen2.5-1.5b|1200MiB 1100MiB"
)
for run in "${runs[@]}"; do
  IFS='|' read -r name file profile check budgets <<< "$run"
  [ -f "$file" ] || { echo "tune-budgets: $file is missing (scripts/setup.sh)" >&2; exit 1; }
  for task in translate qa summarize; do
    frontier=$check/frontier-$task; spearman=$check/spearman-$task.md
    [ "$task" = translate ] && { frontier=$check/frontier; spearman=$check/spearman.md; }
    dir="$work/$name-$task"
    cp -r "$frontier" "$dir"
    # The report's choices, in the order of its rows: no budget, then each budget.
    mapfile -t checked < <(awk -F'|' '/^\| --mem-budget/ {t=1; next} t && /^\|--/ {next} t && /^\|/ {gsub(/^ +| +$/, "", $5); print $5; next} t {exit}' "$spearman")
    i=0
    for budget in none $budgets; do
      tuned="$work/$name-$task-$budget.gguf" # outside the work folder, as tune requires
      args=(tune -m "$file" --task "$task" --profile "$profile" --work "$dir" -o "$tuned")
      [ "$budget" = none ] || args+=(--mem-budget "$budget")
      log="$work/$name-$task-$budget.txt"
      echo "tune-budgets: selectinfer ${args[*]}" >&2
      set +e
      "$bin" "${args[@]}" > "$log" 2>&1
      rc=$?
      set -e
      { echo "\$ selectinfer ${args[*]//$work\//}"; cat "$log"; } | sed "s#$work/##g" > "$out/$name-$task-$budget.txt"
      choice=$(grep -E '^chosen: |^selectinfer: error: ' "$log" | tail -1 | sed -e 's/^chosen: //' -e 's/^selectinfer: error: //' -e "s#$work/##g" -e 's/|/\\|/g')
      written=no
      [ -f "$tuned" ] && { written="yes ($(du -m "$tuned" | cut -f1) MiB)"; rm -f "$tuned"; }
      # "gamma G / P" or "no measured point meets ...; the closest is gamma G / P (...)"
      # against the report's "G / P" or "none meets; closest G / P".
      short=$(sed -E -e 's/^gamma ([^ ]+ \/ [^ ]+).*/\1/' -e 's/^no measured point meets.*the closest is gamma ([^ ]+ \/ [^ ]+).*/none meets; closest \1/' <<< "$choice")
      want=${checked[$i]:-?}; i=$((i + 1))
      same=no; [ "$short" = "$want" ] && same=yes
      echo "| $name | $task | $budget | $rc | $choice | $written | $want ([$(basename "$spearman")](../${spearman#results/})) | $same |" >> "$report"
    done
  done
done
mv "$report" "$out/README.md"
echo "tune-budgets: wrote $out/README.md" >&2
