# Sourced by the scripts: where cargo builds. The target directory lives outside
# the clone so that a fresh clone (CI) reuses the compiled llama.cpp; override with
# CARGO_TARGET_DIR.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/selectinfer/target}
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
# A copy can stand in while a long run goes on and cargo rebuilds the original.
SELECTINFER_BIN=${SELECTINFER_BIN:-$CARGO_TARGET_DIR/release/selectinfer}
