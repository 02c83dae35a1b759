#!/usr/bin/env bash
# The README's test command: set up a fresh machine (scripts/setup.sh), check that
# vendor/ is the pristine crates plus patches/, then build and run every test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/env.sh
scripts/setup.sh
scripts/vendor.sh
cargo test --release --locked "$@"
