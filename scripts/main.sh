#!/usr/bin/env bash
# The README's main job: set up, build, then the quick experiment on
# SmolLM2-135M-Instruct (experiments/quick.yaml): reference, SelectInfer at the
# paper's defaults, CoreInfer, random loading and Q4_K_M on 20 examples per task,
# plus decode speed under a memory cap. Output: results/quick-local/ (README.md with
# the tables, results.csv, plots); re-running resumes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/env.sh
SELECTINFER_MODELS=${SELECTINFER_MODELS:-smollm2} scripts/setup.sh
cargo build --release --locked
"$SELECTINFER_BIN" experiment experiments/quick.yaml --out-dir "${QUICK_OUT:-results/quick-local}"
echo
cat "${QUICK_OUT:-results/quick-local}/README.md"
