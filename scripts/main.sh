#!/usr/bin/env bash
# The README's main job: set up, build, then run the default model densely and
# print its text and speed. (Replaced by the quick experiment once the experiment
# runner exists.)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/env.sh
SELECTINFER_MODELS=${SELECTINFER_MODELS:-smollm2} scripts/setup.sh
cargo build --release --locked
"$SELECTINFER_BIN" inspect models/SmolLM2-135M-Instruct.Q4_1.gguf
"$SELECTINFER_BIN" generate -m models/SmolLM2-135M-Instruct.Q4_1.gguf --chat -n 96 -t 2 \
    -p "Explain in two sentences why smaller language models run faster on small devices."
