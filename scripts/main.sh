#!/usr/bin/env bash
# The README's main job (until the experiment runner exists): set up, build, then on
# SmolLM2-135M-Instruct
#   1. dense generation with the downloaded Q4_1 model (text + tok/s),
#   2. SelectInfer: the F16 original sliced at the paper's defaults (load 0.7,
#      static 0.3, committed qa profile), decoding with compute 0.4 (alpha 0.2),
#   3. the decode speed of phi 1.0 / 0.7 / 0.55 / 0.4 on the F16 model, side by side.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/env.sh
SELECTINFER_MODELS=${SELECTINFER_MODELS:-smollm2} scripts/setup.sh
cargo build --release --locked
si="$SELECTINFER_BIN"
q4=models/SmolLM2-135M-Instruct.Q4_1.gguf
f16=models/SmolLM2-135M-Instruct.F16.gguf
sliced=models/SmolLM2-135M-Instruct.F16.qa-load0.7.gguf
prompt="Explain in two sentences why smaller language models run faster on small devices."

echo "== dense, $q4"
"$si" generate -m "$q4" --chat -n 64 -t 2 -p "$prompt"
[ -f "$f16" ] || "$si" convert "$q4" --to f16 -o "$f16"
[ -f "$sliced" ] || "$si" slice -m "$f16" --profile profiles/SmolLM2-135M-Instruct.F16 --task qa --load 0.7 --static 0.3 -o "$sliced"
echo
echo "== SelectInfer, $sliced (load 0.7, static 0.3), compute 0.4"
"$si" generate -m "$sliced" --chat -n 64 -t 2 --compute 0.4 -p "$prompt"
echo
echo "== decode speed by computed share (F16 model, qa static set, layers 5..28)"
full=models/SmolLM2-135M-Instruct.F16.qa-load1.0.gguf
[ -f "$full" ] || "$si" slice -m "$f16" --profile profiles/SmolLM2-135M-Instruct.F16 --task qa --load 1.0 --static 0.3 -o "$full"
"$si" bench -m "$full" --compute-list 1.0,0.7,0.55,0.4 --reps 3 -t 2
