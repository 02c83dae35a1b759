#!/usr/bin/env bash
# Memory of sliced SmolLM2-135M F16 files at gamma 1.0/0.8/0.7/0.55/0.4 (all 30
# layers sliced, static share 0.3, base task qa, committed profile), loaded with and
# without mmap. Each cell is a fresh process (`selectinfer bench --processes`) that
# prefills 6 prompt tokens and generates 16, with its resident memory after the run
# and its peak. Writes results/slice-memory/smollm2-f16.{csv,md}.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/env.sh
cargo build --release --locked
si="$SELECTINFER_BIN"
src=models/SmolLM2-135M-Instruct.F16.gguf
[ -f "$src" ] || "$si" convert models/SmolLM2-135M-Instruct.Q4_1.gguf --to f16 -o "$src"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
out=results/slice-memory
mkdir -p "$out"
"$si" inspect "$src" --json >"$work/base.json"
files=()
for gamma in 1.0 0.8 0.7 0.55 0.4; do
    f="$work/g$gamma.gguf"
    "$si" slice -m "$src" --profile profiles/SmolLM2-135M-Instruct.F16 --task qa --load "$gamma" --static 0.3 --layers 0..30 -o "$f" >/dev/null
    "$si" inspect "$f" --json >"$work/info$gamma.json"
    files+=(--dense "$f")
done
# Each setting in a fresh process (bench --processes), mapped and read into memory.
for mmap in yes no; do
    flag=""; [ $mmap = no ] && flag=--no-mmap
    "$si" bench "${files[@]}" --processes --reps 1 --prompt-tokens 6 --gen 16 -t 2 $flag -o json >"$work/bench-$mmap.jsonl"
done
python3 - "$work" >"$work/rows.csv" <<'PY'
import json, sys
work = sys.argv[1]
base = json.load(open(f"{work}/base.json"))
print("gamma,mmap,weight_bytes,ffn_bytes,non_ffn_bytes,expected_weight_bytes,rss_bytes,peak_rss_bytes,rss_file_bytes,rss_anon_bytes")
for mmap in ("yes", "no"):
    recs = [json.loads(l) for l in open(f"{work}/bench-{mmap}.jsonl")]
    for gamma, r in zip(("1.0", "0.8", "0.7", "0.55", "0.4"), recs):
        info = json.load(open(f"{work}/info{gamma}.json"))
        expected = base["non_ffn_bytes"] + float(gamma) * base["ffn_bytes"]
        print(",".join(str(x) for x in [gamma, mmap, info["total_bytes"], info["ffn_bytes"], info["non_ffn_bytes"], round(expected),
              r["rss_bytes"], r["peak_rss_bytes"], r["rss_file_bytes"], r["rss_anon_bytes"]]))
PY
mv "$work/rows.csv" "$out/smollm2-f16.csv"
python3 - "$out/smollm2-f16.csv" >"$out/smollm2-f16.md" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
mib = lambda b: f"{int(b) / 2**20:.1f}"
print("| gamma | load | weights MiB | non-FFN + gamma*FFN MiB | error | RSS MiB | peak RSS MiB | file-backed MiB | anonymous MiB |")
print("|---|---|---|---|---|---|---|---|---|")
for r in rows:
    err = 100 * (int(r["weight_bytes"]) - int(r["expected_weight_bytes"])) / int(r["expected_weight_bytes"])
    print(f"| {r['gamma']} | {'mmap' if r['mmap'] == 'yes' else 'read'} | {mib(r['weight_bytes'])} | {mib(r['expected_weight_bytes'])} | {err:+.2f}% "
          f"| {mib(r['rss_bytes'])} | {mib(r['peak_rss_bytes'])} | {mib(r['rss_file_bytes'])} | {mib(r['rss_anon_bytes'])} |")
PY
cat "$out/smollm2-f16.md"
