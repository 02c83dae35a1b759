#!/usr/bin/env bash
# Dense speed parity with stock llama.cpp, in one round-robin run: for each
# repetition, for each model file, one `stock_bench bench` process (unmodified
# llama.cpp through its C API, scripts/stock/) and one
# `selectinfer bench --compute-list 1.0 --reps 1` process, with the same prompt
# (the first P tokens of data/wikitext2_raw_test.txt), N generated tokens and
# threads. Which engine goes first alternates between repetitions. Medians per
# model and engine, and ours/stock ratios, go to results/bench/stock-parity.md
# (raw records: stock-parity.jsonl), each written under a temporary name and renamed.
#
#   scripts/stock-parity.sh [--reps R] [--prompt-tokens P] [--gen N] [--threads T] [--out FILE.md] [MODEL.gguf ...]
#
# Defaults: R 15, P 64, N 64, T 2, and SmolLM2-135M-Instruct in F16, Q8_0, Q4_0 and
# Q4_K_M (made with `selectinfer convert` from models/SmolLM2-135M-Instruct.Q4_1.gguf
# when missing). Run it on a quiet machine: each repetition of the four default
# files takes about 10-15 seconds on 2 cores, so the default run about 3-4 minutes
# after the builds (stock llama.cpp cold: about 6 minutes, once).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
die() { echo "stock-parity.sh: $*" >&2; exit 1; }
usage() { echo "stock-parity.sh: $*" >&2; grep -m1 '^#   scripts/stock-parity.sh' "$0" | sed 's/^# *//' >&2; exit 2; }

reps=15 prompt=64 gen=64 threads=2 out=results/bench/stock-parity.md
models=()
while [ $# -gt 0 ]; do
    case "$1" in
        --reps) reps=${2:-}; shift 2 || usage "--reps needs a value" ;;
        --prompt-tokens) prompt=${2:-}; shift 2 || usage "--prompt-tokens needs a value" ;;
        --gen) gen=${2:-}; shift 2 || usage "--gen needs a value" ;;
        --threads) threads=${2:-}; shift 2 || usage "--threads needs a value" ;;
        --out) out=${2:-}; shift 2 || usage "--out needs a value" ;;
        -h | --help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) usage "unknown flag $1" ;;
        *) models+=("$1"); shift ;;
    esac
done
for v in "$reps" "$prompt" "$gen" "$threads"; do
    [[ "$v" =~ ^[1-9][0-9]*$ ]] || usage "counts must be positive integers (got '$v')"
done
[ "$gen" -ge 2 ] || usage "--gen must be at least 2 (decode speed counts the steps after the first token)"
case "$out" in *.md) ;; *) usage "--out must end in .md" ;; esac

. scripts/env.sh
SELECTINFER_MODELS=smollm2 scripts/setup.sh
# Ours first, so that stock/build.sh can compare its CMake options with our build's.
cargo build --release --locked || die "cargo build failed"
stock=$(scripts/stock/build.sh) || die "building stock llama.cpp failed"
si=$SELECTINFER_BIN
[ -x "$si" ] || die "no selectinfer binary at $si"

if [ ${#models[@]} -eq 0 ]; then
    src=models/SmolLM2-135M-Instruct.Q4_1.gguf
    for t in F16 Q8_0 Q4_0 Q4_K_M; do
        m=models/SmolLM2-135M-Instruct.$t.gguf
        if [ ! -f "$m" ]; then
            [ -f "$src" ] || die "$src is missing (SELECTINFER_MODELS=smollm2 scripts/setup.sh fetches it)"
            lower=$(echo "$t" | tr 'A-Z' 'a-z')
            "$si" convert "$src" --to "$lower" -o "$m" || die "converting $src to $t failed"
        fi
        models+=("$m")
    done
fi
for m in "${models[@]}"; do [ -f "$m" ] || die "no model file $m"; done

cmd="scripts/stock-parity.sh --reps $reps --prompt-tokens $prompt --gen $gen --threads $threads $(printf '%q ' "${models[@]}")"
cmd=${cmd% }
cpu=$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit (dirty)"; fi
records=$(mktemp)
trap 'rm -f "$records" "$records.jsonl"' EXIT

run_stock() {
    "$stock" bench -m "$1" -p "$prompt" -n "$gen" -r 1 -t "$threads" --text data/wikitext2_raw_test.txt ||
        die "stock_bench failed on $1"
}
run_ours() {
    "$si" bench -m "$1" --compute-list 1.0 --reps 1 --json --prompt-tokens "$prompt" --gen "$gen" -t "$threads" ||
        die "selectinfer bench failed on $1"
}
# One JSON line per process; each record: engine, model, prefill tok/s, decode tok/s,
# prompt tokens, repetition.
field() { echo "$1" | sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p"; }
record() {
    local engine=$1 model=$2 r=$3 line=$4
    [ "$(echo "$line" | wc -l)" -eq 1 ] && [ -n "$(field "$line" decode_tps)" ] ||
        die "$engine printed no single JSON record for $model: $line"
    echo "{\"repetition\":$r,\"engine\":\"$engine\",\"record\":$line}" >>"$records.jsonl"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$engine" "$model" "$(field "$line" prefill_tps)" \
        "$(field "$line" decode_tps)" "$(field "$line" prompt_tokens)" "$r" >>"$records"
}
: >"$records.jsonl"
for r in $(seq 1 "$reps"); do
    for m in "${models[@]}"; do
        if [ $((r % 2)) -eq 1 ]; then
            line=$(run_stock "$m"); record stock "$m" "$r" "$line"
            line=$(run_ours "$m"); record ours "$m" "$r" "$line"
        else
            line=$(run_ours "$m"); record ours "$m" "$r" "$line"
            line=$(run_stock "$m"); record stock "$m" "$r" "$line"
        fi
    done
    echo "stock-parity.sh: repetition $r of $reps done" >&2
done

# The same prompt on both sides, or the comparison means nothing.
if [ "$(cut -f2,5 "$records" | sort -u | cut -f1 | uniq -d | wc -l)" -ne 0 ]; then
    die "the two engines tokenized the benchmark prompt to different lengths: $(cut -f1,2,5 "$records" | sort -u | tr '\n' ' ')"
fi

table=$(awk -F'\t' -v models="$(printf '%s\n' "${models[@]}")" '
    function median(list,   a, n, i, j, t) {
        n = split(list, a, " ")
        for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    function range(list,   a, n, i, lo, hi) {
        n = split(list, a, " "); lo = hi = a[1]
        for (i = 2; i <= n; i++) { if (a[i] < lo) lo = a[i]; if (a[i] > hi) hi = a[i] }
        return sprintf("%.3f-%.3f", lo, hi)
    }
    { pre[$1, $2] = pre[$1, $2] " " $3; dec[$1, $2] = dec[$1, $2] " " $4; d[$1, $2, $6] = $4 }
    END {
        print "| model | ours prefill tok/s | stock prefill tok/s | prefill ours/stock | ours decode tok/s | stock decode tok/s | decode ours/stock | paired decode ratios (min-max) | within 5% |"
        print "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
        n = split(models, ms, "\n")
        for (k = 1; k <= n; k++) {
            m = ms[k]; if (m == "") continue
            op = median(pre["ours", m]); sp = median(pre["stock", m])
            od = median(dec["ours", m]); sd = median(dec["stock", m])
            pairs = ""
            for (r = 1; ("ours", m, r) in d; r++) pairs = pairs " " d["ours", m, r] / d["stock", m, r]
            ok = (op / sp >= 0.95 && op / sp <= 1.05 && od / sd >= 0.95 && od / sd <= 1.05) ? "yes" : "no"
            name = m; sub(/.*\//, "", name)
            printf "| %s | %.1f | %.1f | %.3f | %.1f | %.1f | %.3f | %s | %s |\n", name, op, sp, op / sp, od, sd, od / sd, range(pairs), ok
        }
    }' "$records")
p_tokens=$(cut -f5 "$records" | head -n 1)

mkdir -p "$(dirname "$out")"
{
    echo "# Dense speed: selectinfer against stock llama.cpp"
    echo
    echo "\`$cmd\`"
    echo
    echo "$(date -u '+%F %H:%M UTC') | CPU: $cpu ($(nproc) cores) | commit $commit | stock: unmodified llama.cpp from llama-cpp-sys-2 $(sed -n 's/^LLAMA_CPP_SYS_2=//p' scripts/vendor.sh), same CMake options as our crate (scripts/stock/build.sh)"
    echo
    echo "$table"
    echo
    echo "Medians of $reps round-robin repetitions, one process per engine, model and repetition (the engine that goes first alternates); $p_tokens prompt tokens (wikitext-2 test), $gen generated with end-of-text ignored, greedy, $threads threads. Prefill tok/s: prompt tokens over the prompt's decode calls; decode tok/s: the $((gen - 1)) steps after the first token. Paired ratios: ours/stock decode within each repetition. Raw records: $(basename "${out%.md}").jsonl."
} >"$out.tmp"
mv "$records.jsonl" "${out%.md}.jsonl.tmp"
mv "${out%.md}.jsonl.tmp" "${out%.md}.jsonl"
mv "$out.tmp" "$out"
cat "$out"
