#!/usr/bin/env bash
# Builds `selectinfer --features cuda` (llama.cpp's CUDA backend) with the CUDA 13.0
# toolkit of scripts/setup-cuda.sh, in its own target directory so the CPU build is
# not disturbed, and packs what a GPU machine needs into one folder:
#   $SELECTINFER_CUDA_BUNDLE (default .cache/cuda-bundle in the clone, git-ignored)
#     selectinfer, compute-test (the tests/compute.rs test binary), libllama.so,
#     libggml*.so, ...   (stripped; see docs/cuda.md)
# which `scripts/gpu-check.sh` uses and the device tool can carry.
#
# Settings (environment):
#   SELECTINFER_CUDA_TARGET  target directory (default ~/.cache/selectinfer/target-cuda)
#   SELECTINFER_CUDA_ARCHS   CMAKE_CUDA_ARCHITECTURES (default "87;90": Jetson Orin, Hopper)
#   SELECTINFER_CUDA_FA      GGML_CUDA_FA, the flash-attention kernels (default ON)
#   SELECTINFER_NICE         niceness of the build (default 19)
#   CMAKE_BUILD_PARALLEL_LEVEL  parallel compiles inside CMake (default: all cores)
# Each build appends one row to results/cuda/build-times.tsv (cold = the target
# directory held no CUDA build of llama.cpp before).
#
# Two choices follow from what the PyPI wheels hold (no libcublas_static.a, no
# libculibos.a, no libcuda.so stub):
#   LLAMA_BUILD_SHARED_LIBS=1  llama.cpp as shared libraries linking libcudart.so.13 and
#                              libcublas.so.13 dynamically (the static link that
#                              llama-cpp-sys-2's build.rs does otherwise needs the
#                              static cuBLAS);
#   GGML_CUDA_NO_VMM=ON        no direct link to the driver library (libcuda.so);
#                              ggml's CUDA pool then uses cudaMalloc, not virtual memory.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
say() { echo "build-cuda: $*" >&2; }
die() { echo "build-cuda: error: $*" >&2; exit 1; }

env_sh=$(bash "$repo/scripts/setup-cuda.sh") || die "scripts/setup-cuda.sh failed"
# shellcheck disable=SC1090
source "$env_sh"

export CARGO_TARGET_DIR=${SELECTINFER_CUDA_TARGET:-$HOME/.cache/selectinfer/target-cuda}
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
export CMAKE_CUDA_ARCHITECTURES=${SELECTINFER_CUDA_ARCHS:-87;90}
export GGML_CUDA_FA=${SELECTINFER_CUDA_FA:-ON}
export GGML_CUDA_NO_VMM=ON
export LLAMA_BUILD_SHARED_LIBS=1
bundle=${SELECTINFER_CUDA_BUNDLE:-$repo/.cache/cuda-bundle}

cold=warm
ls -d "$CARGO_TARGET_DIR"/release/build/llama-cpp-sys-2-*/out/build/ggml/src/ggml-cuda >/dev/null 2>&1 || cold=cold
say "cargo build --release --features cuda ($cold; archs $CMAKE_CUDA_ARCHITECTURES, FA $GGML_CUDA_FA) in $CARGO_TARGET_DIR"
start=$(date +%s)
(cd "$repo" && nice -n "${SELECTINFER_NICE:-19}" cargo build --release --features cuda --bin selectinfer) \
    || die "cargo build --features cuda failed"
# The tests/compute.rs test binary, which scripts/gpu-check.sh runs on the GPU.
ctest=$(cd "$repo" && nice -n "${SELECTINFER_NICE:-19}" cargo test --release --features cuda --test compute --no-run \
    --message-format=json | sed -n 's/.*"executable":"\([^"]*\)".*/\1/p' | tail -n1)
[ -x "$ctest" ] || die "cargo test --features cuda --test compute --no-run made no test binary"
secs=$(( $(date +%s) - start ))
say "built in ${secs}s"

mkdir -p "$repo/results/cuda"
times="$repo/results/cuda/build-times.tsv"
[ -f "$times" ] || printf 'date\tcommit\tarchs\tfa\tbuild\tseconds\tcores\tload_1min\n' >"$times"
printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
    "$CMAKE_CUDA_ARCHITECTURES" "$GGML_CUDA_FA" "$cold" "$secs" "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)" >>"$times"

# The bundle: the binary and the shared libraries it loads from llama.cpp, stripped.
rel="$CARGO_TARGET_DIR/release"
tmp="$bundle.tmp"
rm -rf "$tmp" && mkdir -p "$tmp"
cp "$rel/selectinfer" "$tmp/"
cp "$ctest" "$tmp/compute-test"
# llama.cpp's shared libraries, under their sonames (libllama.so.0, ...), are in the
# build script's output directory (cargo copies only unversioned names to release/).
libdir=$(ls -td "$rel"/build/llama-cpp-sys-2-*/out/lib 2>/dev/null | head -n1)
[ -n "$libdir" ] || die "no llama-cpp-sys-2 output directory with lib/ under $rel/build"
libs=$(LD_LIBRARY_PATH="$libdir:$LD_LIBRARY_PATH" ldd "$rel/selectinfer" "$ctest" | awk '$3 ~ "^'"$libdir"'/" {print $1}' | sort -u)
[ -n "$libs" ] || die "ldd finds no llama.cpp library of $rel/selectinfer in $libdir"
for l in $libs; do cp -L "$libdir/$l" "$tmp/$l"; done
# The CUDA backend is loaded by libggml.so, not by the binary itself.
cuda=$(cd "$libdir" && ls libggml-cuda.so.* 2>/dev/null | awk -F. 'NF == 3' | head -n1)
[ -n "$cuda" ] || die "no libggml-cuda.so.N in $libdir"
cp -L "$libdir/$cuda" "$tmp/$cuda"
# OpenMP's runtime (ggml-cpu), small and not on every machine; the CUDA libraries come
# from the GPU machine's own CUDA install (libcublasLt alone is ~500 MB).
gomp=$(LD_LIBRARY_PATH="$libdir:$LD_LIBRARY_PATH" ldd "$rel/selectinfer" | awk '$1 == "libgomp.so.1" {print $3}')
[ -z "$gomp" ] || cp -L "$gomp" "$tmp/libgomp.so.1"
strip --strip-unneeded "$tmp"/* 2>/dev/null || true
rm -rf "$bundle" && mv "$tmp" "$bundle"
say "bundle $bundle ($(du -sh "$bundle" | cut -f1)):"
# The device tool carries at most 64 MiB; the H200 machine needs sm_90 alone.
[ "$(du -sm "$bundle" | cut -f1)" -le 64 ] || say "warning: over 64 MiB, too large to carry; build with SELECTINFER_CUDA_ARCHS=90 (and SELECTINFER_CUDA_FA=OFF if still too large)"
ls -l "$bundle" >&2
say "libraries the GPU machine must provide (from its CUDA 13 install):"
LD_LIBRARY_PATH="$bundle" ldd "$bundle"/* 2>/dev/null | awk '/=>/ && $1 ~ /^lib(cuda|cublas|cudart)/ {print "  " $1}' | sort -u >&2
