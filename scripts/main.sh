#!/usr/bin/env bash
# The README's main job: set up, build, then the quick experiment on Gemma-3-270M
# (experiments/quick.yaml): the reference, SelectInfer at the paper's defaults,
# CoreInfer, random loading and Q4_K_M on 30 qa, 30 translate and 20 summarize
# examples, every score with its 95% bootstrap interval and each method's paired
# difference to the reference, and each file's perplexity on wikitext-2 and on the
# task's evaluation text. About 18 minutes on 2 cores after the build (the
# estimate is in quick.yaml). Output: results/quick-local/ (README.md with the
# tables, results.csv, perplexity.csv, plots); re-running resumes.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/env.sh
SELECTINFER_MODELS=${SELECTINFER_MODELS:-gemma3} scripts/setup.sh
cargo build --release --locked
"$SELECTINFER_BIN" experiment experiments/quick.yaml --out-dir "${QUICK_OUT:-results/quick-local}"
echo
cat "${QUICK_OUT:-results/quick-local}/README.md"
