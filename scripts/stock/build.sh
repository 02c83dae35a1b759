#!/usr/bin/env bash
# Builds an UNMODIFIED llama.cpp (the pristine sources inside the crates.io crate
# llama-cpp-sys-2 that scripts/vendor.sh pins, with no patches/ applied) and
# scripts/stock/stock_bench.c against it: the stock anchor that our speed and
# compatibility claims are measured against.
#
#   scripts/stock/build.sh          build (or reuse) and print the stock_bench path
#
# Everything lives outside the clone, in $SELECTINFER_STOCK_DIR (default
# ~/.cache/selectinfer/stock):
#   src/llama-cpp-sys-2-VERSION/   the crate as `cargo vendor` unpacks it (checksums verified)
#   build-VERSION/                 the CMake build folder
#   install-VERSION/               headers and static libraries (cmake --install)
#   bin/stock_bench                the timing / generation program
# A finished build leaves build-VERSION/selectinfer-stock.options holding the CMake
# options; when it matches, the llama.cpp build is skipped (about 6 minutes on 2
# cores cold, a second warm). stock_bench is recompiled when its source changes.
#
# CMake options: the same as the llama-cpp-sys-2 build script passes for our crate
# (vendor/llama-cpp-sys-2/build.rs, default features, no target-cpu=native):
#   CMAKE_BUILD_TYPE=Release, BUILD_SHARED_LIBS=OFF (static libraries),
#   GGML_NATIVE=OFF, which leaves ggml's defaults GGML_SSE42/AVX/AVX2/BMI2/F16C/FMA=ON
#     and AVX512 off (ggml/CMakeLists.txt; -msse4.2 -mf16c -mfma -mbmi2 -mavx -mavx2),
#   GGML_OPENMP=ON (the crate's default `openmp` feature), GGML_LLAMAFILE and
#     GGML_CPU_REPACK left at their default ON, no BLAS, CPU backend only,
#   CMAKE_C_FLAGS / CMAKE_CXX_FLAGS = the cc crate's defaults that cmake-rs hands
#     over: -ffunction-sections -fdata-sections -fPIC (-m64 -march=x86-64 on x86_64) -w.
# Tests, examples, tools, server, app and common are not built (they add build time
# and nothing to libllama). After building, every GGML_* entry and the flags are
# compared with the CMakeCache.txt of our crate's build when one is found under
# $CARGO_TARGET_DIR, and any difference is printed.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
die() { echo "stock/build.sh: $*" >&2; exit 1; }
say() { echo "stock/build.sh: $*" >&2; }

for tool in cargo cmake cc c++; do
    command -v "$tool" >/dev/null || die "$tool not found (scripts/setup.sh installs the build tools)"
done
version=$(sed -n 's/^LLAMA_CPP_SYS_2=\([0-9.]*\)$/\1/p' "$root/scripts/vendor.sh")
[ -n "$version" ] || die "cannot read the pinned LLAMA_CPP_SYS_2 version from scripts/vendor.sh"

dir=${SELECTINFER_STOCK_DIR:-$HOME/.cache/selectinfer/stock}
src=$dir/src/llama-cpp-sys-2-$version
build=$dir/build-$version
prefix=$dir/install-$version
bin=$dir/bin/stock_bench
mkdir -p "$dir/src" "$dir/bin"

# 1. Pristine sources, fetched by scripts/vendor.sh (cargo vendor, checksums verified).
if [ ! -f "$src/llama.cpp/CMakeLists.txt" ]; then
    say "fetching llama-cpp-sys-2 $version with cargo vendor"
    "$root/scripts/vendor.sh" --pristine "$dir/src" || die "fetching the pristine crates failed"
    [ -f "$src/llama.cpp/CMakeLists.txt" ] || die "$src has no llama.cpp/CMakeLists.txt"
fi

# 2. llama.cpp with the crate's options.
flags="-ffunction-sections -fdata-sections -fPIC"
if [ "$(uname -m)" = x86_64 ]; then flags="$flags -m64 -march=x86-64"; fi
flags="$flags -w"
options=(
    -DCMAKE_BUILD_TYPE=Release
    -DBUILD_SHARED_LIBS=OFF
    "-DCMAKE_C_FLAGS=$flags"
    "-DCMAKE_CXX_FLAGS=$flags"
    -DGGML_NATIVE=OFF
    -DGGML_OPENMP=ON
    -DGGML_BLAS=OFF
    -DGGML_CUDA=OFF
    -DLLAMA_BUILD_TESTS=OFF
    -DLLAMA_BUILD_EXAMPLES=OFF
    -DLLAMA_BUILD_TOOLS=OFF
    -DLLAMA_BUILD_SERVER=OFF
    -DLLAMA_BUILD_APP=OFF
    -DLLAMA_BUILD_COMMON=OFF
    -DLLAMA_CURL=OFF
    -DLLAMA_OPENSSL=OFF
    "-DCMAKE_INSTALL_PREFIX=$prefix"
)
stamp=$build/selectinfer-stock.options
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "${options[*]}" ] && [ -f "$prefix/include/llama.h" ]; then
    say "llama.cpp $version already built in $build"
else
    rm -f "$stamp"
    jobs=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
    say "configuring llama.cpp $version (unmodified) in $build"
    cmake -S "$src/llama.cpp" -B "$build" "${options[@]}" >"$dir/cmake-configure.log" 2>&1 ||
        die "cmake configure failed; see $dir/cmake-configure.log"
    say "building with $jobs jobs (about 6 minutes on 2 cores); log: $dir/cmake-build.log"
    cmake --build "$build" --config Release -j "$jobs" >"$dir/cmake-build.log" 2>&1 ||
        die "cmake build failed; see $dir/cmake-build.log"
    cmake --install "$build" >"$dir/cmake-install.log" 2>&1 ||
        die "cmake install failed; see $dir/cmake-install.log"
    echo "${options[*]}" >"$stamp"
fi

# 3. The options our crate's build used, when its CMake cache is at hand.
target=${CARGO_TARGET_DIR:-$HOME/.cache/selectinfer/target}
ours=$(ls -t "$target"/release/build/llama-cpp-sys-2-*/out/build/CMakeCache.txt 2>/dev/null | head -n 1 || true)
if [ -n "$ours" ]; then
    pick() { grep -E '^(GGML_[A-Z0-9_]+:BOOL|CMAKE_BUILD_TYPE:|CMAKE_C_FLAGS:|CMAKE_CXX_FLAGS:|BUILD_SHARED_LIBS:)' "$1" |
        sed 's/= */=/' | sort; }
    if diff <(pick "$ours") <(pick "$build/CMakeCache.txt") >"$dir/options.diff"; then
        say "CMake options match our crate's build ($ours)"
    else
        say "CMake options differ from our crate's build ($ours; < ours, > stock):"
        cat "$dir/options.diff" >&2
    fi
else
    say "no llama-cpp-sys-2 CMakeCache.txt under $target; options not compared"
fi

# 4. stock_bench against the installed headers and static libraries.
csrc=$root/scripts/stock/stock_bench.c
if [ ! -x "$bin" ] || [ "$csrc" -nt "$bin" ] || [ "$stamp" -nt "$bin" ]; then
    libdir=$prefix/lib
    [ -d "$libdir" ] || libdir=$prefix/lib64
    say "compiling stock_bench"
    cc -O2 -std=c11 -Wall -Wextra -I"$prefix/include" "$csrc" -o "$bin.tmp" \
        "$libdir/libllama.a" "$libdir/libggml.a" "$libdir/libggml-cpu.a" "$libdir/libggml-base.a" \
        -fopenmp -lstdc++ -lm -lpthread || die "compiling $csrc failed"
    mv "$bin.tmp" "$bin"
fi
echo "$bin"
