#!/usr/bin/env python3
"""Paired perplexity differences between slices of one sweep, from perplexity.csv.

Each row keeps its chunks' NLL sums (chunk_nll); this pairs every file with the
paper's selection of the same task and gamma (the file without a variant suffix; for a
layer range, gamma 0.7, whose FFN bytes it keeps) and with the reference on the same chunks,
with the same 1000 resamples (SplitMix64, seed 12345, multiply-shift to 0..n) that
selectinfer's reports use, so its "vs reference" column reproduces the report's
Perplexity table to the printed digits. Usage:
ppl-pairs.py results/selection-gemma3/perplexity.csv > results/selection/gemma-ppl-pairs.md
"""
import csv, math, re, sys

MASK = (1 << 64) - 1

def resamples(n, count=1000, seed=12345):
    state = seed
    out = []
    for _ in range(count):
        idx = []
        for _ in range(n):
            state = (state + 0x9E3779B97F4A7C15) & MASK
            z = state
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
            z ^= z >> 31
            idx.append((z * n) >> 64)
        out.append(idx)
    return out

def ppl(sums, per_chunk, idx):
    return math.exp(sum(sums[i] for i in idx) / (per_chunk * len(idx)))

def interval(point, values):
    values = sorted(values)
    k = len(values) // 40
    return point, values[k], values[len(values) - k - 1]

def paired(a, b):
    n, per = a["n"], a["per"]
    sets = resamples(n)
    allidx = list(range(n))
    d = lambda idx: ppl(a["sums"], per, idx) - ppl(b["sums"], per, idx)
    return interval(d(allidx), [d(s) for s in sets])

def fmt(iv):
    p, lo, hi = iv
    star = " *" if lo > 0 or hi < 0 else ""
    return f"{p:+.2f} [{lo:+.2f}, {hi:+.2f}]{star}"

def main(path):
    rows = {}
    for r in csv.DictReader(open(path)):
        if not r.get("chunk_nll"):
            continue
        sums = [float(x) for x in r["chunk_nll"].split(";")]
        n = int(r["chunks"])
        rows[(r["model"], r["task"])] = {"sums": sums, "n": n, "per": int(r["tokens"]) // n, "ppl": float(r["ppl"]), "lo": float(r["ppl_lo"]), "hi": float(r["ppl_hi"])}
    models = sorted({m for m, _ in rows})
    ref = next(m for m in models if m.endswith(".F16.gguf"))
    print(f"| file | text | perplexity [95% CI] | Δ vs reference | Δ vs the paper's selection (same task, γ; a layer range: γ 0.7) |")
    print("|---|---|---|---|---|")
    for (m, task), r in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        text = task or "wikitext-2"
        vs_ref = fmt(paired(r, rows[(ref, task)])) if m != ref else "-"
        base = None
        hit = re.match(r"^(.*\.F16\.)(qa|translate|summarize)-load([0-9]+(?:\.[0-9]+)?)(.*)\.gguf$", m)
        if hit and hit.group(4):
            # A layer range (`-layersA-B`) keeps the FFN bytes of gamma 0.7 over the
            # default layers (the sweep files choose its gamma so): pair it with that.
            gamma = "0.7" if hit.group(4).startswith("-layers") else hit.group(3)
            cand = f"{hit.group(1)}{hit.group(2)}-load{gamma}.gguf"
            if (cand, task) in rows:
                base = fmt(paired(r, rows[(cand, task)]))
        print(f"| {m} | {text} | {r['ppl']:.2f} [{r['lo']:.2f}, {r['hi']:.2f}] | {vs_ref} | {base or '-'} |")

if __name__ == "__main__":
    main(sys.argv[1])
