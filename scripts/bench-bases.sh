#!/usr/bin/env bash
# SelectInfer on F16, Q8_0 and Q4_K_M bases against dense Q4_K_M, one model at a time:
#   speed:  one `selectinfer bench` process, every file and setting round-robin
#           (dense Q4_K_M is the anchor; medians of REPS repetitions);
#   memory: peak RSS of each setting in its own process, `selectinfer bench
#           --processes --reps 1 --gen 32 -o csv`, with the weights memory-mapped
#           and read into memory (--no-mmap).
# Settings per base B: dense B, the gamma 0.7 slice of B dense-loaded, and that slice
# at phi 0.4 and 0.3 (static 0.3, qa profile of the F16 original), each slice twice:
# ffn_down in llama.cpp's layout (columns) and neuron-major (--down-layout neurons).
#
#   scripts/bench-bases.sh [smollm2|gemma3 ...]     (default: both)
# Writes results/bench/bases-<model>.md. REPS (default 7), GEN (64), PROMPT (64).
# Run nothing else on the CPU meanwhile: about 6 minutes per model on 2 cores.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/env.sh
reps=${REPS:-7}; gen=${GEN:-64}; prompt=${PROMPT:-64}
si="$SELECTINFER_BIN"
[ -x "$si" ] || { echo "bench-bases: build first (cargo build --release)" >&2; exit 1; }

one_model() { # name source profile
    local name=$1 source=$2 profile=$3
    local f16=models/$name.F16.gguf
    [ -f "$f16" ] || "$si" convert "$source" --to f16 -o "$f16"
    local files=() slices=()
    for b in f16 q8_0 q4_k_m; do
        local base=models/$name.$b.gguf
        [ "$b" = f16 ] && base=$f16
        [ -f "$base" ] || "$si" convert "$f16" --to $b -o "$base"
        local s=models/$name.$b.qa-load0.7.gguf n=models/$name.$b.qa-load0.7.neurons.gguf
        [ -f "$s" ] || "$si" slice -m "$base" --profile "$profile" --task qa --load 0.7 --static 0.3 -o "$s" >/dev/null
        [ -f "$n" ] || "$si" slice -m "$base" --profile "$profile" --task qa --load 0.7 --static 0.3 --down-layout neurons -o "$n" >/dev/null
        files+=("$base"); slices+=("$s" "$n")
    done
    local q4=models/$name.q4_k_m.gguf
    local out=results/bench/bases-$name.md tmp
    tmp=$(mktemp); trap 'rm -f "$tmp" "$tmp".*' RETURN
    local settings=(--dense "$q4" --dense "${files[0]}" --dense "${files[1]}"
        $(printf -- '-m %s ' "${slices[@]}") --compute-list 0.7,0.4,0.3 --prompt-tokens "$prompt" -t 2)
    local cmd=("$si" bench "${settings[@]}" --reps "$reps" --gen "$gen")
    echo "bench-bases: $name: speed (${cmd[*]})" >&2
    "${cmd[@]}" --json >"$tmp.jsonl"
    echo "bench-bases: $name: peak RSS per setting (bench --processes)" >&2
    for mode in mmap read; do
        local extra=()
        [ "$mode" = read ] && extra+=(--no-mmap)
        "$si" bench "${settings[@]}" --processes --reps 1 --gen 32 "${extra[@]}" -o csv >"$tmp.rss-$mode.csv"
    done
    python3 - "$tmp.jsonl" "$tmp" "$name" "$reps" "${cmd[*]}" >"$tmp" <<'PY'
import csv, json, sys, os, subprocess, datetime
bench = [json.loads(l) for l in open(sys.argv[1])]
# Peak RSS per (file, phi, mode) from bench's own records (docs/formats.md, "Bench records").
rss = {(r['model'], float(r['compute']), mode): int(r['peak_rss_bytes'])
       for mode in ('mmap', 'read') for r in csv.DictReader(open(f"{sys.argv[2]}.rss-{mode}.csv"))}
name, reps, cmd = sys.argv[3], sys.argv[4], sys.argv[5]
mib = lambda b: f"{b / 1048576:.1f}"
cpu = next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name')), '?')
commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()
print(f"# {name}: SelectInfer on F16 / Q8_0 / Q4_K_M bases vs dense Q4_K_M\n")
print(f"{datetime.date.today()}, {cpu}, 2 threads, commit {commit}. Speed: one round-robin run, medians of {reps}; peak RSS: `bench --processes --reps 1 --gen 32` (each setting in its own process).\n")
print(f"`{cmd}`\n")
print("| base | setting | ffn_down | layout | weights + copies MiB | peak RSS MiB (mmap) | peak RSS MiB (read) | decode tok/s | speedup over dense Q4_K_M | ideal | selection ms |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for r in bench:
    f = r['model']; base = os.path.basename(f)[len(name) + 1:].split('.')[0].upper()
    sliced = '.qa-load0.7' in f
    setting = ('gamma 0.7, dense' if r['dense'] else f"gamma 0.7, phi {r['compute']}") if sliced else 'dense (full)'
    peak = lambda m: mib(rss[(f, r['compute'], m)]) if (f, r['compute'], m) in rss else '?'
    down = 'neurons' if '.neurons.' in f else 'columns'
    print(f"| {base} | {setting} | {down} | {r['layout']} | {mib(r['weight_bytes'] + r['copy_bytes'])} | {peak('mmap')} | {peak('read')} | {r['decode_tps']:.1f} | {r['speedup']:.2f}x | {r['ideal_speedup']:.2f}x | {r['select_ms']:.0f} |")
PY
    chmod 644 "$tmp"; mv "$tmp" "$out"
    cat "$out"
}

models=("$@"); [ ${#models[@]} -gt 0 ] || models=(smollm2 gemma3)
mkdir -p results/bench
for m in "${models[@]}"; do
    case "$m" in
        smollm2) SELECTINFER_MODELS=smollm2 SELECTINFER_SKIP_APT=1 scripts/setup.sh
                 one_model SmolLM2-135M-Instruct models/SmolLM2-135M-Instruct.Q4_1.gguf profiles/SmolLM2-135M-Instruct.F16 ;;
        gemma3)  SELECTINFER_MODELS=gemma3 SELECTINFER_SKIP_APT=1 scripts/setup.sh
                 one_model gemma-3-270m models/gemma-3-270m-q4_k_m.gguf profiles/gemma-3-270m.F16 ;;
        *) echo "bench-bases: unknown model $m (smollm2 or gemma3)" >&2; exit 2 ;;
    esac
done
