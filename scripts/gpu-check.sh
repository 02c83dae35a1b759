#!/usr/bin/env bash
# The GPU check of the CUDA build, one command, nothing downloaded, no Rust toolchain:
#   scripts/gpu-check.sh [OUT_DIR]          (default results/cuda/gpu-check)
# 1. correctness: the `compute` integration tests (tests/compute.rs) run from their
#    test binary built with --features cuda, so every layer of the synthetic llama and
#    gemma3 models is offloaded: phi = gamma identical to the plain engine, phi < gamma
#    equal to the masked dense engine within the tests' tolerances;
# 2. speed: `selectinfer bench` on synthetic Llama-3.2-1B and -3B shapes made on the
#    spot by `selectinfer synth` (random weights, F16): dense Q4_K_M (the anchor),
#    dense F16, a random gamma 0.7 slice of F16 and of Q4_K_M at phi 0.7 (dense) and
#    0.4, one round-robin run per shape;
# 3. memory: peak GPU memory (nvidia-smi) and peak RSS of `selectinfer generate` per
#    setting, each in its own process, with the number of layers offloaded.
# Writes at most 7 files to OUT_DIR: summary.md, environment.txt, correctness.log,
# bench-<shape>.jsonl per shape, memory.tsv, commands.log. Exit 0 when every check
# that could run passed; without a GPU (or with a CPU build) the GPU parts say so and
# the rest runs on the CPU, which is this script's smoke test.
#
# What it runs (environment):
#   SELECTINFER_BUNDLE        folder from scripts/build-cuda.sh (default .cache/cuda-bundle)
#   SELECTINFER_BIN           the binary (default: the bundle's selectinfer)
#   SELECTINFER_COMPUTE_TEST  the tests/compute.rs test binary (default: the bundle's compute-test)
#   GPU_CHECK_SHAPES  (default "llama-3.2-1b llama-3.2-3b"; without a GPU "llama-3.2-1b")
#   GPU_CHECK_REPS / GPU_CHECK_GEN / GPU_CHECK_PROMPT  bench repetitions, generated and
#                     prompt tokens (default 5/64/64 on a GPU, 1/2/8 without one)
#   GPU_CHECK_WORK    scratch folder for the models (default a temporary one, removed)
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$repo/results/cuda/gpu-check}
say() { echo "gpu-check: $*" >&2; }
die() { echo "gpu-check: error: $*" >&2; exit 1; }

bundle=${SELECTINFER_BUNDLE:-$repo/.cache/cuda-bundle}
si=${SELECTINFER_BIN:-$bundle/selectinfer}
ctest=${SELECTINFER_COMPUTE_TEST:-$bundle/compute-test}
[ -x "$si" ] || die "no selectinfer binary at $si (run scripts/build-cuda.sh, or set SELECTINFER_BIN)"
[ -x "$ctest" ] || die "no compute test binary at $ctest (run scripts/build-cuda.sh, or set SELECTINFER_COMPUTE_TEST)"
si=$(cd "$(dirname "$si")" && pwd)/$(basename "$si")
ctest=$(cd "$(dirname "$ctest")" && pwd)/$(basename "$ctest")

mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)
rm -f "$out"/summary.md "$out"/environment.txt "$out"/correctness.log "$out"/bench-*.jsonl "$out"/memory.tsv "$out"/commands.log
log="$out/commands.log"
: >"$log"
work=${GPU_CHECK_WORK:-}
if [ -z "$work" ]; then
    work=$(mktemp -d "${TMPDIR:-/tmp}/selectinfer-gpu-check.XXXXXX") || die "no scratch folder"
    trap 'rm -rf "$work"' EXIT
fi
mkdir -p "$work"
start_all=$(date +%s)

# --- the CUDA libraries: the binary's folder first, then this machine's CUDA install.
libdirs=$(dirname "$si")
add_dir() { [ -d "$1" ] && case ":$libdirs:" in *":$1:"*) ;; *) libdirs="$libdirs:$1" ;; esac; }
for d in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda /usr/local/cuda-13* /opt/cuda; do
    [ -n "$d" ] && { add_dir "$d/lib64"; add_dir "$d/targets/x86_64-linux/lib"; add_dir "$d/lib"; }
done
if command -v nvcc >/dev/null; then
    nv=$(dirname "$(readlink -f "$(command -v nvcc)")")/..
    add_dir "$(cd "$nv" && pwd)/lib64"; add_dir "$(cd "$nv" && pwd)/targets/x86_64-linux/lib"
fi
for d in /usr/local/lib/python3*/dist-packages/nvidia/cu13/lib /usr/lib/python3/dist-packages/nvidia/cu13/lib \
    "$HOME"/.local/lib/python3*/site-packages/nvidia/cu13/lib "$HOME"/.cache/selectinfer/cuda-13.0/nvidia/cu13/lib; do
    add_dir "$d"
done
export LD_LIBRARY_PATH="$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# --- environment: GPU, binary, libraries.
gpu=""
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    gpu=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -n1)
fi
cuda_build=no
ldd "$si" 2>/dev/null | grep -q 'libggml-cuda' && cuda_build=yes
missing=$(ldd "$si" "$ctest" 2>/dev/null | awk '/not found/ {print $1}' | sort -u | tr '\n' ' ')
{
    echo "date: $(date -u +%FT%TZ)"
    echo "host: $(hostname), $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
    echo "binary: $si ($("$si" --version 2>&1))"
    echo "compute test binary: $ctest"
    echo "CUDA build: $cuda_build"
    echo "GPU: ${gpu:-none found}"
    echo "LD_LIBRARY_PATH: $LD_LIBRARY_PATH"
    echo "missing libraries: ${missing:-none}"
    echo; echo "== ldd $si"; ldd "$si" 2>&1
    if [ -n "$gpu" ]; then echo; echo "== nvidia-smi"; nvidia-smi 2>&1; fi
} >"$out/environment.txt"
[ -z "$missing" ] || die "libraries not found: $missing(see $out/environment.txt; the CUDA 13 runtime and cuBLAS come from this machine's CUDA install)"
if [ -n "$gpu" ] && [ "$cuda_build" = no ]; then say "warning: a GPU ($gpu) but a CPU build: the GPU parts cannot run"; fi
on_gpu=no
[ -n "$gpu" ] && [ "$cuda_build" = yes ] && on_gpu=yes
if [ "$on_gpu" = yes ]; then
    shapes=${GPU_CHECK_SHAPES:-llama-3.2-1b llama-3.2-3b}
    reps=${GPU_CHECK_REPS:-5}; gen=${GPU_CHECK_GEN:-64}; prompt=${GPU_CHECK_PROMPT:-64}
else
    shapes=${GPU_CHECK_SHAPES:-llama-3.2-1b}
    reps=${GPU_CHECK_REPS:-1}; gen=${GPU_CHECK_GEN:-2}; prompt=${GPU_CHECK_PROMPT:-8}
fi
say "GPU: ${gpu:-none found}; CUDA build: $cuda_build; output $out"

run() { # logged command; its stderr goes to the log
    echo "+ [$(date +%T)] $*" >>"$log"
    "$@" 2>>"$log"
}

# Peak GPU memory of a command: nvidia-smi samples every 100 ms while it runs; the
# peak of memory.used minus its value just before (MiB). "-" without a GPU.
gpu_peak_file="$work/gpu-peak"
with_gpu_peak() {
    if [ "$on_gpu" != yes ]; then echo - >"$gpu_peak_file"; "$@"; return; fi
    local base samples rc pid
    base=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 | head -n1)
    samples="$work/gpu-samples"
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -i 0 -lms 100 >"$samples" 2>/dev/null &
    pid=$!
    "$@"; rc=$?
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    awk -v b="$base" 'BEGIN {m = b} $1 + 0 > m {m = $1 + 0} END {print m - b}' "$samples" >"$gpu_peak_file"
    return $rc
}

failures=0; passes=0
verdict() { # name ok|fail|skip detail
    case $2 in ok) passes=$((passes + 1)) ;; fail) failures=$((failures + 1)) ;; esac
    printf '| %s | %s | %s |\n' "$1" "$2" "$3" >>"$work/verdicts"
}
: >"$work/verdicts"

# --- 1. correctness --------------------------------------------------------------
say "1/3 correctness: tests/compute.rs ($ctest)"
t0=$(date +%s)
# The clean-failure test runs the selectinfer binary of the build machine's target
# directory (a compile-time path): it checks argument errors, not the GPU; skipped.
(cd "$work" && echo "+ [$(date +%T)] $ctest --test-threads 4 --skip shares_out_of_order_are_clear_errors" >>"$log" &&
    with_gpu_peak "$ctest" --test-threads 4 --skip shares_out_of_order_are_clear_errors) >"$out/correctness.log" 2>&1
rc=$?
ct_peak=$(cat "$gpu_peak_file")
ct_summary=$(grep -E '^test result:' "$out/correctness.log" | tail -n1)
where="on the CPU (no GPU found)"
[ "$on_gpu" = yes ] && where="on $gpu, every layer offloaded, peak GPU memory ${ct_peak} MiB"
if [ $rc -eq 0 ]; then verdict "compute tests $where" ok "${ct_summary:-?} ($(( $(date +%s) - t0 )) s)"
else verdict "compute tests $where" fail "exit $rc: ${ct_summary:-see correctness.log}"; fi

# --- 2 and 3. speed and memory per shape ----------------------------------------
printf 'shape\tsetting\tfile\tcompute\toffloaded_layers\tpeak_gpu_mib\tpeak_rss_mib\tdecode_tps\tcompact_mib\n' >"$out/memory.tsv"
field() { # json key -> value (flat JSON objects only)
    sed -n "s/.*\"$2\":\(\"[^\"]*\"\|[^,}]*\).*/\1/p" <<<"$1" | tr -d '"'
}
for shape in $shapes; do
    say "2/3 $shape: synth, convert, slice"
    t0=$(date +%s)
    d="$work/$shape"; mkdir -p "$d"
    f16="$d/$shape.f16.gguf"; q4="$d/$shape.q4_k_m.gguf"
    s16="$d/$shape.f16.random-load0.7.gguf"; s4="$d/$shape.q4_k_m.random-load0.7.gguf"
    if ! { run "$si" synth --shape "$shape" -o "$f16" >/dev/null &&
        run "$si" convert "$f16" --to q4_k_m -o "$q4" >/dev/null &&
        run "$si" slice -m "$f16" --random --load 0.7 --static 0.3 -o "$s16" >/dev/null &&
        run "$si" slice -m "$q4" --random --load 0.7 --static 0.3 -o "$s4" >/dev/null; }; then
        verdict "$shape: synth, convert, slice" fail "see commands.log"
        rm -rf "$d"; continue
    fi
    prep=$(( $(date +%s) - t0 ))

    say "2/3 $shape: bench (reps $reps, gen $gen, prompt $prompt)"
    t0=$(date +%s)
    bench=(bench --dense "$q4" --dense "$f16" -m "$s16" -m "$s4" --compute-list 0.7,0.4
        --reps "$reps" --gen "$gen" --prompt-tokens "$prompt" --json)
    if run "$si" "${bench[@]}" >"$out/bench-$shape.jsonl" && [ "$(wc -l <"$out/bench-$shape.jsonl")" -eq 6 ]; then
        verdict "$shape: bench, 6 settings round-robin" ok "$(( $(date +%s) - t0 )) s (synth/convert/slice $prep s)"
    else
        verdict "$shape: bench" fail "see commands.log"
    fi

    say "3/3 $shape: peak memory per setting"
    ok=yes
    for setting in "q4_k_m dense|$q4|" "f16 dense|$f16|" "f16 gamma 0.7, dense|$s16|" "f16 gamma 0.7, phi 0.4|$s16|0.4" \
        "q4_k_m gamma 0.7, dense|$s4|" "q4_k_m gamma 0.7, phi 0.4|$s4|0.4"; do
        IFS='|' read -r name file phi <<<"$setting"
        extra=(); [ -n "$phi" ] && extra=(--compute "$phi")
        echo "+ [$(date +%T)] $si generate --verbose -m $file -p 'The history of the city begins' -n $gen --json ${extra[*]}" >>"$log"
        with_gpu_peak "$si" generate --verbose -m "$file" -p "The history of the city begins" -n "$gen" --json "${extra[@]}" \
            >"$work/gen.json" 2>"$work/gen.err"
        rc=$?
        peak=$(cat "$gpu_peak_file")
        grep -E 'error|offloaded|assigned to device' "$work/gen.err" | sed -E 's/layer +[0-9]+/layer N/' | sort | uniq -c >>"$log"
        j=$(cat "$work/gen.json")
        # llama.cpp's load log: "layer N assigned to device CUDA0" (or CPU) per layer.
        offl="$(grep -E 'layer +[0-9]+ assigned to device' "$work/gen.err" | grep -vc 'device CPU')/$(grep -cE 'layer +[0-9]+ assigned to device' "$work/gen.err")"
        if [ $rc -ne 0 ] || [ -z "$j" ]; then ok=no; echo "generate failed (exit $rc)" >>"$log"; continue; fi
        # On a GPU every layer must be offloaded (n/n).
        if [ "$on_gpu" = yes ] && ! awk -F/ '{exit !($1 == $2 && $1 > 0)}' <<<"$offl"; then ok=no; echo "not all layers offloaded: $offl" >>"$log"; fi
        rss=$(field "$j" peak_rss_bytes); tps=$(field "$j" decode_tps); cb=$(field "$j" compact_bytes)
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$shape" "$name" "$(basename "$file")" "${phi:-dense}" "$offl" "$peak" \
            "$(awk -v b="$rss" 'BEGIN {printf "%.1f", b / 1048576}')" "$(awk -v t="$tps" 'BEGIN {printf "%.2f", t}')" \
            "$(awk -v b="${cb:-0}" 'BEGIN {printf "%.1f", b / 1048576}')" >>"$out/memory.tsv"
    done
    if [ $ok = yes ]; then verdict "$shape: generate per setting (memory)" ok "6 settings"
    else verdict "$shape: generate per setting (memory)" fail "see commands.log"; fi
    rm -rf "$d"
done
[ "$on_gpu" = yes ] || verdict "GPU correctness, speed and GPU memory" skip "no GPU found${gpu:+ usable by a CPU build ($gpu)}: ran on the CPU as a smoke test"

# --- summary ------------------------------------------------------------------------
{
    echo "# GPU check of the CUDA build"
    echo
    echo "$(date -u +%F), GPU: ${gpu:-none found}, CUDA build: $cuda_build, $(nproc) cores, $(( $(date +%s) - start_all )) s in all."
    echo "Binary: \`$("$si" --version 2>&1)\`. Models: \`selectinfer synth\` (random weights, speed and memory only)."
    [ "$on_gpu" = yes ] || echo "No GPU: a smoke test of the pipeline on the CPU with tiny settings; its figures are not speed measurements."
    echo
    echo "| check | result | detail |"
    echo "|---|---|---|"
    cat "$work/verdicts"
    for shape in $shapes; do
        b="$out/bench-$shape.jsonl"
        [ -s "$b" ] || continue
        echo
        echo "## $shape: speed (one round-robin run, medians of $reps; anchor: dense Q4_K_M)"
        echo
        echo "| file | setting | layout | decode tok/s | prefill tok/s | speedup | ideal | weights + copies MiB |"
        echo "|---|---|---|---|---|---|---|---|"
        while IFS= read -r l; do
            f=$(basename "$(field "$l" model)"); c=$(field "$l" compute); dense=$(field "$l" dense)
            setting="phi $c"; [ "$dense" = true ] && setting=dense
            printf '| %s | %s | %s | %.1f | %.1f | %.2fx | %.2fx | %.1f |\n' "$f" "$setting" "$(field "$l" layout)" \
                "$(field "$l" decode_tps)" "$(field "$l" prefill_tps)" "$(field "$l" speedup)" "$(field "$l" ideal_speedup)" \
                "$(awk -v a="$(field "$l" weight_bytes)" -v b="$(field "$l" copy_bytes)" 'BEGIN {print (a + b) / 1048576}')"
        done <"$b"
    done
    echo
    echo "## Peak memory per setting (\`generate -n $gen\`, each in its own process)"
    echo
    echo "| shape | setting | phi | layers offloaded | peak GPU MiB | peak RSS MiB | decode tok/s | compacted copy MiB |"
    echo "|---|---|---|---|---|---|---|---|"
    tail -n +2 "$out/memory.tsv" | awk -F'\t' '{printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, $4, $5, $6, $7, $8, $9}'
    echo
    echo "$passes passed, $failures failed"
} >"$out/summary.md"
cat "$out/summary.md"
[ "$failures" -eq 0 ]
