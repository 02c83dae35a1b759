#!/usr/bin/env bash
# The README's main job: set up, build, then the comparison of issue #39 in small on
# the real 1.5B model, Qwen2.5-Coder-1.5B-Instruct Q4_K_M:
#   1. experiments/quick-qwen2.5-1.5b.yaml: the dense Q4_K_M file (the reference)
#      against SelectInfer on that file at the paper's point (gamma 0.7, phi 0.4)
#      and at gamma 0.85 / phi 0.65, on 40 qa, 40 translate and 20 summarize
#      examples, every score with its 95% bootstrap interval and each method's
#      paired difference to the dense file;
#   2. speed and memory in one round-robin run (`selectinfer bench --processes`,
#      each repetition in its own process): the dense file, and the experiment's qa
#      slices (gamma 0.7 and 0.85) dense and at phi 0.65 and 0.4; stock llama.cpp's client on the
#      same file too when it is built (scripts/stock/build.sh, about 6 minutes; set
#      SELECTINFER_STOCK=1 to build it here).
# About 27 minutes on a quiet 2-core AMD EPYC after the build (results/main-time:
# 23 for the experiment, whose prompts reuse the prefix they share with the one
# before (prompt_cache), 4 for the bench). Output: results/quick-local/ (README.md with the tables, results.csv,
# plots, bench.md); re-running resumes the experiment and measures speed again.
# The Gemma-3-270M quick check is `selectinfer experiment experiments/quick.yaml`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/env.sh
SELECTINFER_MODELS=${SELECTINFER_MODELS:-qwen2.5-1.5b} scripts/setup.sh
cargo build --release --locked
out=${QUICK_OUT:-results/quick-local}
"$SELECTINFER_BIN" experiment experiments/quick-qwen2.5-1.5b.yaml --out-dir "$out"

stock=()
if [ "${SELECTINFER_STOCK:-0}" = 1 ]; then
    stock=(--stock "$(scripts/stock/build.sh)")
elif [ -x "${SELECTINFER_STOCK_DIR:-$HOME/.cache/selectinfer/stock}/bin/stock_bench" ]; then
    stock=(--stock "${SELECTINFER_STOCK_DIR:-$HOME/.cache/selectinfer/stock}/bin/stock_bench")
fi
dense=models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
{
    echo "# Speed and memory: one round-robin run, $(date -u +%F), $(nproc) cores, commit $(git rev-parse --short HEAD)"
    echo
    "$SELECTINFER_BIN" bench --dense "$dense" "${stock[@]}" --dense-no-repack "$dense" \
        -m models/qwen2.5-1.5b.source.qa-load0.7.neurons.gguf \
        -m models/qwen2.5-1.5b.source.qa-load0.85.neurons.gguf \
        --compute-list 1.0,0.65,0.4 --prompt-tokens 128 --gen 64 --reps 3 -t 2 --processes
} >"$out/bench.md.tmp"
mv "$out/bench.md.tmp" "$out/bench.md"
echo
cat "$out/README.md" "$out/bench.md"
