#!/usr/bin/env bash
# What the 1.5B model's qa loses to selective loading at gamma 0.85, and whether
# another ranking, a per-layer budget of the same bytes or llama.cpp's own layout
# keeps it (results/qwen2.5-1.5b-qa-loading/README.md). Answer perplexity of 40 qa
# evaluation examples (1 shot; each reference answer teacher-forced after its
# prompt) with every loaded neuron decoded, so only the loading differs, each file
# paired per example; then qa F1 on 100 examples of the output-budget slice at
# phi 0.65, dynamic only. Run from the repository root after `cargo build
# --release --locked`; about 75 minutes on 2 cores, nothing else running.
set -euo pipefail
source scripts/env.sh
B=$SELECTINFER_BIN
M=models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
OUT=results/qwen2.5-1.5b-qa-loading
W=${WORK:-$(mktemp -d)}
# profile sensitivity writes into the profile folder: work on a copy.
P=$W/profile
[ -d "$P" ] || cp -r profiles/qwen2.5-coder-1.5b-instruct.Q4_K_M.spread "$P"
slice() { local name=$1; shift; [ -f "$W/$name.gguf" ] || $B slice -m $M --profile "$P" --task qa --load 0.85 --compensate none "$@" -o "$W/$name.gguf"; }
# The full experiment's slice (neuron-major ffn_down, Q5_0 / Q8_0), then the same
# selection and the variants in llama.cpp's layout (ffn_down requantized in its own type).
slice paper --down-layout neurons
slice paper-columns
slice contribution --importance contribution
slice secondary-task --secondary task
slice contribution-secondary-task --importance contribution --secondary task
# What slicing each layer alone at gamma 0.85 costs the qa profiling text (about 20 min).
ls "$P"/sensitivity/qa.*.json >/dev/null 2>&1 || $B profile sensitivity "$P" -m $M --task qa --load 0.85 -t 2
slice output --budget output
slice output.neurons --budget output --down-layout neurons
answers() {
  local name=$1 file=$2; shift 2
  [ -f "$OUT/answers-$name.jsonl" ] && return
  $B perplexity -m "$file" --task qa --answers --limit 40 --shots 1 -t 2 --per-example "$W/answers-$name.jsonl" "$@"
  mv "$W/answers-$name.jsonl" "$OUT/answers-$name.jsonl"
}
answers dense $M
answers paper "$W/paper.gguf" --paired-with $OUT/answers-dense.jsonl
for v in contribution secondary-task contribution-secondary-task output paper-columns; do
  answers $v "$W/$v.gguf" --paired-with $OUT/answers-paper.jsonl
done
# Pairs the runs above did not make (the same resampling, 1000 resamples, in Python).
for v in contribution secondary-task contribution-secondary-task output; do
  echo "$v - paper-columns: $(python3 $OUT/pair.py $OUT/answers-$v.jsonl $OUT/answers-paper-columns.jsonl)"
done
echo "paper-columns - dense: $(python3 $OUT/pair.py $OUT/answers-paper-columns.jsonl $OUT/answers-dense.jsonl)"
cp "$P"/sensitivity/qa.*.json $OUT/sensitivity-qa-load0.85.json
# qa F1 of the output-budget slice, neuron-major, phi 0.65 dynamic only (as the
# experiment's coreinfer-loading cells with slice: profile run), paired with the
# full experiment's dense file and dynamic-only cell on the same examples.
[ -f $OUT/results.csv ] || $B eval -m "$W/output.neurons.gguf" --task qa --method coreinfer-loading --data data/qa_squad11dev_xquad_en_500.jsonl \
  --limit 100 --shots 1 -t 2 --compute 0.65 --token-share 0.2 --no-static --decode-refit off --out $OUT/results.csv --outputs $OUT/output-budget.qa.compute0.65.n100.jsonl
