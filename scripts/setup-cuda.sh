#!/usr/bin/env bash
# A CUDA 13.0 toolkit for building `--features cuda`, from NVIDIA's own PyPI wheels,
# into a folder outside the clone (nothing is installed into any Python environment):
#   $SELECTINFER_CUDA_HOME (default ~/.cache/selectinfer/cuda-13.0)
#     wheels/            the downloaded wheels (`pip download --no-deps`, pinned below)
#     nvidia/cu13/       the toolkit root: bin/nvcc, include/, lib/ (+ lib64 -> lib,
#                        targets/x86_64-linux -> .., unversioned libcudart.so,
#                        libcublas.so, libcublasLt.so), nvvm/
#     env.sh             what the CUDA build needs; source it (scripts/build-cuda.sh does)
# Idempotent: a complete install (stamp file) is left as it is. Checks the toolkit by
# compiling and linking a small CUDA + cuBLAS program for sm_90 (no GPU needed).
#
# Why 13.0: the GPU machine this workplace lends has nvcc 13.0 and driver 580; a
# binary built here links libcudart.so.13 / libcublas.so.13 dynamically and finds them
# in that machine's CUDA install (see docs/cuda.md).
set -euo pipefail

home=${SELECTINFER_CUDA_HOME:-$HOME/.cache/selectinfer/cuda-13.0}
say() { echo "setup-cuda: $*" >&2; }
die() { echo "setup-cuda: error: $*" >&2; exit 1; }

# CUDA 13.0 Update 2: the component versions NVIDIA ships together.
WHEELS=(
    nvidia-cuda-nvcc==13.0.88      # nvcc, ptxas, fatbinary, nvlink
    nvidia-cuda-crt==13.0.88       # crt/ headers nvcc includes
    nvidia-nvvm==13.0.88           # cicc, libdevice, libnvvm
    nvidia-cuda-runtime==13.0.96   # cudart headers and libraries
    nvidia-cuda-cccl==13.0.85      # thrust / cub / libcu++ headers
    nvidia-cublas==13.0.2.14       # cuBLAS headers and shared libraries
)
stamp="$home/.complete-$(printf '%s\n' "${WHEELS[@]%%#*}" | sha256sum | cut -c1-12)"
root="$home/nvidia/cu13"

if [ ! -f "$stamp" ]; then
    command -v unzip >/dev/null || die "unzip is missing (apt-get install unzip)"
    if command -v pip3 >/dev/null; then pip=pip3; elif command -v pip >/dev/null; then pip=pip; else pip="python3 -m pip"; fi
    mkdir -p "$home/wheels"
    specs=()
    for w in "${WHEELS[@]}"; do specs+=("${w%%#*}"); done
    say "downloading ${#specs[@]} wheels into $home/wheels (about 530 MB)"
    $pip download --no-deps --quiet --disable-pip-version-check -d "$home/wheels" "${specs[@]}" >&2 \
        || die "pip download failed (is PyPI reachable?)"
    # Unpack into a temporary folder, rename when complete.
    tmp="$home/nvidia.tmp"
    rm -rf "$tmp" && mkdir -p "$tmp"
    for spec in "${specs[@]}"; do
        name=${spec%%==*}; ver=${spec##*==}
        whl=$(ls "$home/wheels/${name//-/_}-$ver-"*.whl 2>/dev/null | head -n1)
        [ -n "$whl" ] || die "no wheel for $spec in $home/wheels"
        unzip -qo "$whl" 'nvidia/*' -d "$tmp" || die "could not unpack $whl"
    done
    t="$tmp/nvidia/cu13"
    [ -x "$t/bin/nvcc" ] || die "the wheels hold no nvidia/cu13/bin/nvcc"
    # The layout CMake's FindCUDAToolkit and nvcc.profile expect of a toolkit root.
    ln -sfn lib "$t/lib64"
    mkdir -p "$t/targets"
    ln -sfn .. "$t/targets/x86_64-linux"
    for l in cudart cublas cublasLt nvvm; do
        so=$(cd "$t/lib" && ls lib$l.so.* 2>/dev/null | head -n1)
        [ -n "$so" ] || die "lib$l.so.* missing from the wheels"
        ln -sfn "$so" "$t/lib/lib$l.so"
    done
    rm -rf "$home/nvidia"
    mv "$tmp/nvidia" "$home/nvidia"
    rmdir "$tmp"
    rm -f "$home"/.complete-*
    touch "$stamp"
fi

cat >"$home/env.sh.tmp" <<EOF
# Written by scripts/setup-cuda.sh: the CUDA 13.0 toolkit from PyPI wheels.
export CUDA_PATH=$root
export CUDA_HOME=$root
export CUDAToolkit_ROOT=$root
export CUDACXX=$root/bin/nvcc
export PATH=$root/bin:\$PATH
export LIBRARY_PATH=$root/lib\${LIBRARY_PATH:+:\$LIBRARY_PATH}
# The linker resolves libggml-cuda.so's libcudart.so.13 / libcublas.so.13 through it.
export LD_LIBRARY_PATH=$root/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
EOF
mv "$home/env.sh.tmp" "$home/env.sh"

# Check: compile and link CUDA + cuBLAS for sm_90 (running it needs a GPU).
check=$(mktemp -d)
trap 'rm -rf "$check"' EXIT
cat >"$check/t.cu" <<'EOF'
#include <cstdio>
#include <cublas_v2.h>
#include <cuda_runtime.h>
__global__ void twice(float *x) { x[threadIdx.x] *= 2.0f; }
int main() {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    cublasHandle_t h;
    std::printf("%s, %d device(s), cublasCreate %d\n", cudaGetErrorString(e), n, (int) cublasCreate(&h));
    return 0;
}
EOF
"$root/bin/nvcc" -arch=sm_90 -o "$check/t" "$check/t.cu" -L"$root/lib" -lcublas -lcudart >&2 \
    || die "the toolkit in $root cannot compile and link a CUDA + cuBLAS program"
say "$("$root/bin/nvcc" --version | tail -n2 | head -n1)"
say "toolkit ready at $root; source $home/env.sh"
echo "$home/env.sh"
