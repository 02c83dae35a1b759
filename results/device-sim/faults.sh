#!/usr/bin/env bash
# Which bytes fault under the device simulation's cap: one capped run of a
# SelectInfer cell (as results/device-sim/capped-vs-uncapped.sh runs it) under
# `perf record -e major-faults -d`, every major fault with its address; each address
# in a mapping of the model file is turned into a file offset and named by the GGUF
# tensor it falls in. Prints faults per tensor kind and per phase (before the first
# decoded token's time is unknown to perf, so the phases are the run's first and
# last 50% of wall time, and the faults outside the model file).
#
#   results/device-sim/faults.sh [MODEL]   (default: the F16 columns slice)
# Writes results/device-sim/faults-<model stem>.md. Needs perf and root (the cap).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. scripts/env.sh
si="$SELECTINFER_BIN"
model=${1:-models/llama-3.2-3b-synthetic.F16.translate-load0.7.gguf}
cap=5905580032
command -v perf >/dev/null || { echo "faults.sh: perf not found" >&2; exit 1; }
[ -f "$model" ] || { echo "faults.sh: $model is missing" >&2; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
perf record -q -e major-faults -c 1 -d -o "$tmp/perf.data" -- "$si" eval -m "$model" --task translate --method selectinfer \
    --data ../shared/data/wmt16_de_en_newstest2016_500.jsonl --limit 2 --shots 0 -t 2 --out "$tmp/rows.csv" \
    --compute 0.4 --token-share 0.2 --speed-only 12 --mem-cap "$cap" >/dev/null
perf script -i "$tmp/perf.data" --show-mmap-events -F time,addr,event 2>/dev/null >"$tmp/events.txt" || true
out=results/device-sim/faults-$(basename "$model" .gguf).md
"$si" inspect "$model" --json --tensors >"$tmp/tensors.json"
python3 - "$model" "$tmp/events.txt" "$tmp/rows.csv" "$tmp/tensors.json" >"$tmp/out.md" <<'PY'
import csv, json, os, re, sys, collections, datetime
path, events, rows, places = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]

def tensors(p):
    """(start, end, name) of every tensor's data in the file, as `selectinfer inspect --tensors` places it."""
    return sorted((t["file_offset"], t["file_offset"] + t["bytes"], t["name"]) for t in json.load(open(p))["tensors"])

spans = tensors(places)
real = os.path.realpath(path)
maps, faults = [], []
mm = re.compile(r'PERF_RECORD_MMAP2? .*\[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) @ (0x[0-9a-f]+|\d+)[^\]]*\]: \S+ (.*)$')
for line in open(events):
    m = mm.search(line)
    if m:
        if os.path.realpath(m.group(4).strip()) == real:
            maps.append((int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 0)))
        continue
    if 'major-faults' in line:
        parts = line.split()
        t = float(parts[0].rstrip(':'))
        addr = int(parts[-1], 16)
        faults.append((t, addr))

def kind(name):
    if '.ffn_' in name: return name.split('.', 2)[2].replace('.weight', '')
    if name.startswith('blk.'): return 'attention and norms'
    return name.replace('.weight', '')

t0, t1 = (faults[0][0], faults[-1][0]) if faults else (0, 0)
mid = (t0 + t1) / 2
by = collections.Counter(); other = collections.Counter()
for t, a in faults:
    half = 'first half' if t <= mid else 'second half'
    hit = next(((s, l, o) for s, l, o in maps if s <= a < s + l), None)
    if hit is None:
        other[half] += 1; continue
    off = a - hit[0] + hit[2]
    name = next((n for s, e, n in spans if s <= off < e), 'header')
    by[(kind(name), half)] += 1
row = next(csv.DictReader(open(rows)))
print(f"# Major faults of one capped run: {os.path.basename(path)}\n")
print(f"{datetime.date.today()}, commit {row['git_commit']}, 5.5 GiB cap, decode {float(row['decode_tps']):.2f} tok/s, "
      f"{row['major_faults']} major faults counted by the run, {len(faults)} recorded by `perf record -e major-faults -d` "
      f"(`results/device-sim/faults.sh`). Each fault's address, mapped into the model file, names the tensor it falls in. "
      f"Halves are the first and second half of the time between the first and last fault.\n")
print("| bytes | first half | second half |\n|---|---|---|")
for k in sorted({k for k, _ in by}):
    print(f"| {k} | {by[(k, 'first half')]} | {by[(k, 'second half')]} |")
print(f"| outside the model file (program, libraries, anonymous) | {other['first half']} | {other['second half']} |")
PY
mv "$tmp/out.md" "$out"; cat "$out"
