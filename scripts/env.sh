# Sourced by the scripts: where cargo builds. The target directory lives outside
# the clone so that a fresh clone (CI) reuses the compiled llama.cpp; override with
# CARGO_TARGET_DIR.
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$HOME/.cache/selectinfer/target}
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
SELECTINFER_BIN="$CARGO_TARGET_DIR/release/selectinfer"
