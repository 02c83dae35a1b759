#!/usr/bin/env bash
# The README's install: set up the machine (scripts/setup.sh: Debian packages,
# no model downloads unless SELECTINFER_MODELS names some), then
# `cargo install --path . --locked`, which puts `selectinfer` in ~/.cargo/bin
# (override with CARGO_INSTALL_ROOT). scripts/env.sh sets CARGO_TARGET_DIR, so the
# install reuses the llama.cpp that scripts/test.sh or scripts/main.sh built, and on
# a fresh machine it builds it once (about 7 minutes on 2 cores).
# The installed binary reads the bundled task data from this clone: keep it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/env.sh
SELECTINFER_MODELS=${SELECTINFER_MODELS:-none} scripts/setup.sh
cargo install --path . --locked
bin=${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin
case ":$PATH:" in
    *":$bin:"*) echo "install: selectinfer is in $bin, on the PATH" >&2 ;;
    *) echo "install: selectinfer is in $bin, which is not on the PATH; add it: export PATH=\"$bin:\$PATH\"" >&2 ;;
esac
