#!/usr/bin/env bash
# SelectInfer on a Q4_K_M base of the synthetic Llama-3.2-1B / -3B shapes (random
# weights: speed and memory only) against dense Q4_K_M, one shape at a time:
#   speed:  one `selectinfer bench` process, dense Q4_K_M and the gamma 0.7 slices
#           (random selection, static 0.3; ffn_down neuron-major and in llama.cpp's
#           layout) at phi 0.7 (dense-loaded), 0.4 and 0.3, round-robin, medians of REPS;
#   memory: peak RSS of each setting in its own process, `selectinfer bench
#           --processes --reps 1 --gen 16 -o csv`.
#
#   scripts/bench-synth.sh [llama-3.2-1b|llama-3.2-3b ...]   (default: both)
# Writes results/bench/synth-<shape>.md. Files go to models/synth/ (about 9 GB for
# both shapes). REPS (default 5), GEN (32), PROMPT (32). Run nothing else meanwhile:
# about 6 (1B) and 12 (3B) minutes on 2 cores, most of it making the files.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/env.sh
reps=${REPS:-5}; gen=${GEN:-32}; prompt=${PROMPT:-32}
si="$SELECTINFER_BIN"
[ -x "$si" ] || { echo "bench-synth: build first (cargo build --release)" >&2; exit 1; }
mkdir -p models/synth results/bench

one_shape() {
    local shape=$1 d=models/synth
    local f16=$d/$shape.f16.gguf q4=$d/$shape.q4_k_m.gguf
    local cols=$d/$shape.q4_k_m.random-load0.7.gguf nm=$d/$shape.q4_k_m.random-load0.7.neurons.gguf
    [ -f "$q4" ] || { [ -f "$f16" ] || "$si" synth --shape "$shape" -o "$f16"; "$si" convert "$f16" --to q4_k_m -o "$q4"; rm -f "$f16"; }
    [ -f "$cols" ] || "$si" slice -m "$q4" --random --load 0.7 --static 0.3 -o "$cols" >/dev/null
    [ -f "$nm" ] || "$si" slice -m "$q4" --random --load 0.7 --static 0.3 --down-layout neurons -o "$nm" >/dev/null
    local out=results/bench/synth-$shape.md tmp
    tmp=$(mktemp); trap 'rm -f "$tmp" "$tmp".*' RETURN
    local settings=(--dense "$q4" -m "$nm" -m "$cols" --compute-list 0.7,0.4,0.3 --prompt-tokens "$prompt" -t 2)
    local cmd=("$si" bench "${settings[@]}" --reps "$reps" --gen "$gen")
    echo "bench-synth: $shape: speed (${cmd[*]})" >&2
    "${cmd[@]}" --json >"$tmp.jsonl"
    echo "bench-synth: $shape: peak RSS per setting (bench --processes)" >&2
    "$si" bench "${settings[@]}" --processes --reps 1 --gen 16 -o csv >"$tmp.rss.csv"
    python3 - "$tmp.jsonl" "$tmp.rss.csv" "$shape" "$reps" "${cmd[*]}" >"$tmp" <<'PY'
import csv, json, sys, subprocess, datetime
bench = [json.loads(l) for l in open(sys.argv[1])]
# Peak RSS per (file, phi) from bench's own records (docs/formats.md, "Bench records").
rss = {(r['model'], float(r['compute'])): int(r['peak_rss_bytes']) for r in csv.DictReader(open(sys.argv[2]))}
shape, reps, cmd = sys.argv[3], sys.argv[4], sys.argv[5]
mib = lambda b: f"{b / 1048576:.1f}"
cpu = next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name')), '?')
commit = subprocess.run(['git', 'describe', '--always', '--dirty'], capture_output=True, text=True).stdout.strip()
print(f"# Synthetic {shape} (random weights: speed and memory only), Q4_K_M base\n")
print(f"{datetime.date.today()}, {cpu}, 2 threads, commit {commit}. Speed: one round-robin run, medians of {reps}; peak RSS: `bench --processes --reps 1 --gen 16` (each setting in its own process). Slices: random selection, gamma 0.7, static 0.3.\n")
print(f"`{cmd}`\n")
print("| setting | ffn_down | layout | weights + copies MiB | peak RSS MiB | decode tok/s | speedup over dense Q4_K_M | ideal | selection ms |")
print("|---|---|---|---|---|---|---|---|---|")
for r in bench:
    f = r['model']; sliced = 'random-load0.7' in f
    setting = ('gamma 0.7, dense' if r['dense'] else f"gamma 0.7, phi {r['compute']}") if sliced else 'dense Q4_K_M (full)'
    down = 'neurons' if '.neurons.' in f else 'columns'
    peak = mib(rss[(f, r['compute'])]) if (f, r['compute']) in rss else '?'
    print(f"| {setting} | {down} | {r['layout']} | {mib(r['weight_bytes'] + r['copy_bytes'])} | {peak} | {r['decode_tps']:.2f} | {r['speedup']:.2f}x | {r['ideal_speedup']:.2f}x | {r['select_ms']:.0f} |")
PY
    chmod 644 "$tmp"; mv "$tmp" "$out"
    cat "$out"
}

shapes=("$@"); [ ${#shapes[@]} -gt 0 ] || shapes=(llama-3.2-1b llama-3.2-3b)
for s in "${shapes[@]}"; do
    case "$s" in
        llama-3.2-1b|llama-3.2-3b) one_shape "$s" ;;
        *) echo "bench-synth: unknown shape $s (llama-3.2-1b or llama-3.2-3b)" >&2; exit 2 ;;
    esac
done
