#!/usr/bin/env bash
# Re-creates vendor/ from the pristine crates.io sources plus patches/, then checks
# that the result equals what is committed.
#
#   scripts/vendor.sh           rebuild into a temp dir and diff against vendor/ (exit 1 on difference)
#   scripts/vendor.sh --write   replace vendor/ with the rebuilt tree
#   scripts/vendor.sh --pristine DIR   only fetch: the two crates as published, untrimmed
#                               and unpatched, into DIR/<crate>-<version> (scripts/stock/)
#
# Steps: `cargo vendor` of the pinned versions into a scratch project (the ordinary
# client, so checksums are verified), delete the llama.cpp backends we never build
# (we keep CPU, CUDA/HIP, BLAS and RPC; see TRIMMED below), drop cargo's checksum
# files (vendor/ is wired in through [patch.crates-io] path dependencies, so they are
# not used), then apply patches/*.patch in order with `patch -p1`.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
LLAMA_CPP_2=0.1.160
LLAMA_CPP_SYS_2=0.1.161
# Backends that the build script can only enable through features we do not offer.
TRIMMED="ggml-cann ggml-et ggml-hexagon ggml-metal ggml-musa ggml-opencl ggml-openvino ggml-sycl ggml-virtgpu ggml-vulkan ggml-webgpu ggml-zdnn ggml-zendnn"

mode=${1:-check}
if [ "$mode" = --pristine ]; then
    dest=${2:?"--pristine needs a directory"}
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

mkdir -p "$scratch/probe/src"
cat >"$scratch/probe/Cargo.toml" <<TOML
[package]
name = "vendor-probe"
version = "0.0.0"
edition = "2021"
[dependencies]
llama-cpp-2 = "=$LLAMA_CPP_2"
llama-cpp-sys-2 = "=$LLAMA_CPP_SYS_2"
TOML
echo 'fn main() {}' >"$scratch/probe/src/main.rs"
echo "vendor.sh: fetching llama-cpp-2 $LLAMA_CPP_2 and llama-cpp-sys-2 $LLAMA_CPP_SYS_2" >&2
(cd "$scratch/probe" && cargo vendor --quiet --versioned-dirs "$scratch/all" >/dev/null)
if [ "$mode" = --pristine ]; then
    mkdir -p "$dest"
    for c in "llama-cpp-2-$LLAMA_CPP_2" "llama-cpp-sys-2-$LLAMA_CPP_SYS_2"; do
        rm -rf "${dest:?}/$c" "$dest/$c.tmp"
        cp -r "$scratch/all/$c" "$dest/$c.tmp"
        mv "$dest/$c.tmp" "$dest/$c"
    done
    echo "vendor.sh: pristine crates in $dest" >&2
    exit 0
fi

out="$scratch/vendor"
mkdir -p "$out"
cp -r "$scratch/all/llama-cpp-2-$LLAMA_CPP_2" "$out/llama-cpp-2"
cp -r "$scratch/all/llama-cpp-sys-2-$LLAMA_CPP_SYS_2" "$out/llama-cpp-sys-2"
rm -f "$out"/*/.cargo-checksum.json "$out"/*/.cargo_vcs_info.json
for b in $TRIMMED; do
    rm -rf "$out/llama-cpp-sys-2/llama.cpp/ggml/src/$b"
done

shopt -s nullglob
for p in "$root"/patches/*.patch; do
    echo "vendor.sh: applying $(basename "$p")" >&2
    patch -s -p1 -d "$out" --no-backup-if-mismatch <"$p"
done

if [ "$mode" = "--write" ]; then
    rm -rf "$root/vendor"
    mv "$out" "$root/vendor"
    echo "vendor.sh: vendor/ rewritten" >&2
else
    if diff -r -q "$out" "$root/vendor"; then
        echo "vendor.sh: vendor/ matches pristine crates + patches/" >&2
    else
        echo "vendor.sh: vendor/ differs from pristine crates + patches/ (see above)" >&2
        exit 1
    fi
fi
