#!/usr/bin/env bash
# The README's test command: set up a fresh machine (scripts/setup.sh), check that
# vendor/ is the pristine crates plus patches/, then build and run every test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/env.sh
# The tests use the two small models; the 1.5B model (1 GiB) is for experiments and
# the main job.
SELECTINFER_MODELS=${SELECTINFER_MODELS:-smollm2,gemma3} scripts/setup.sh
scripts/vendor.sh
cargo test --release --locked "$@"
