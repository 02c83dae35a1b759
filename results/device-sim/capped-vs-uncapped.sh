#!/usr/bin/env bash
# The device simulation's SelectInfer cells (F16 columns and neuron-major, Q8_0 and
# Q4_K_M neuron-major), capped and
# uncapped in alternation, REPS times each (default 3), so that "capped vs uncapped"
# is a ratio of medians over runs made side by side rather than of two single runs.
# Each run is the experiment's own child (`selectinfer eval ... --speed-only 12`, two
# examples, gamma 0.7 phi 0.4, 2 threads), with and without the 5.5 GiB cap; the
# files are the ones `selectinfer experiment experiments/device-sim.yaml` made.
#
#   results/device-sim/capped-vs-uncapped.sh [MODEL ...]   (from the repository root)
# Writes results/device-sim/capped-vs-uncapped.md, or with MODEL arguments (only
# those files) capped-vs-uncapped-<first model's stem>.md. Run nothing else meanwhile.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. scripts/env.sh
si="$SELECTINFER_BIN"
reps=${REPS:-3}
cap=5905580032 # 5.5 GiB, as in experiments/device-sim.yaml
data=../shared/data/wmt16_de_en_newstest2016_500.jsonl
files=(models/llama-3.2-3b-synthetic.F16.translate-load0.7.gguf
       models/llama-3.2-3b-synthetic.F16.translate-load0.7.neurons.gguf
       models/llama-3.2-3b-synthetic.q8_0.translate-load0.7.neurons.gguf
       models/llama-3.2-3b-synthetic.q4_k_m.translate-load0.7.neurons.gguf)
out=results/device-sim/capped-vs-uncapped.md
if [ $# -gt 0 ]; then
    files=("$@"); out=results/device-sim/capped-vs-uncapped-$(basename "$1" .gguf).md
fi
for f in "${files[@]}"; do
    [ -f "$f" ] || { echo "capped-vs-uncapped: $f is missing (run the device-sim experiment first)" >&2; exit 1; }
done
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
for rep in $(seq "$reps"); do
    for f in "${files[@]}"; do
        for capped in 1 0; do
            extra=(); [ "$capped" = 1 ] && extra=(--mem-cap "$cap")
            echo "capped-vs-uncapped: rep $rep, $(basename "$f"), capped=$capped" >&2
            "$si" eval -m "$f" --task translate --method selectinfer --data "$data" --limit 2 --shots 0 -t 2 \
                --out "$tmp/rows.csv" --compute 0.4 --token-share 0.2 --speed-only 12 "${extra[@]}" >/dev/null
        done
    done
done
python3 - "$tmp/rows.csv" "$reps" >"$tmp/out.md" <<'PY'
import csv, statistics, sys, subprocess, datetime
rows = list(csv.DictReader(open(sys.argv[1])))
reps = sys.argv[2]
cpu = next((l.split(':', 1)[1].strip() for l in open('/proc/cpuinfo') if l.startswith('model name')), '?')
commits = sorted({r['git_commit'] for r in rows})
print("# Device simulation: capped against uncapped, side by side\n")
print(f"{datetime.date.today()}, {cpu}, 2 threads, commit {', '.join(commits)}. Made by `results/device-sim/capped-vs-uncapped.sh`: "
      f"each SelectInfer cell of `experiments/device-sim.yaml` (gamma 0.7, phi 0.4, 12 decoded tokens on each of 2 examples), "
      f"run {reps} times capped (5.5 GiB) and {reps} times uncapped in alternation. Medians; decode tok/s of each run in brackets.\n")
print("| slice | capped tok/s | uncapped tok/s | capped / uncapped | major faults capped (each run) | group max usage capped | peak RSS |")
print("|---|---|---|---|---|---|---|")
by = {}
for r in rows:
    by.setdefault((r['model'], r['mem_cap_bytes'] != ''), []).append(r)
for model in dict.fromkeys(r['model'] for r in rows):
    c, u = by[(model, True)], by[(model, False)]
    tc = [float(r['decode_tps']) for r in c]; tu = [float(r['decode_tps']) for r in u]
    mc, mu = statistics.median(tc), statistics.median(tu)
    faults = ', '.join(r['major_faults'] for r in c)
    usage = max(int(r['cap_max_usage_bytes']) for r in c) / 2**30
    peak = max(int(r['peak_rss_bytes']) for r in c + u) / 2**30
    fmt = lambda v: ', '.join(f"{x:.2f}" for x in v)
    print(f"| {model} | {mc:.2f} [{fmt(tc)}] | {mu:.2f} [{fmt(tu)}] | {mc / mu:.2f} | {faults} | {usage:.2f} GiB | {peak:.2f} GiB |")
PY
mv "$tmp/out.md" "$out"
cat "$out"
