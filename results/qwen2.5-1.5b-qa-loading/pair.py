# Paired difference of two answer-perplexity files (perplexity --per-example): A - B
# over the same examples, 1000 bootstrap resamples of the examples (seed 12345).
import json, math, random, sys
def load(p): return [json.loads(l) for l in open(p)]
def ppl(rows, idx): return math.exp(sum(rows[i]['nll'] for i in idx)/sum(rows[i]['tokens'] for i in idx))
a, b = load(sys.argv[1]), load(sys.argv[2])
assert [r['id'] for r in a] == [r['id'] for r in b]
n = len(a); rng = random.Random(12345)
full = list(range(n)); d0 = ppl(a, full) - ppl(b, full)
ds = []
for _ in range(1000):
    idx = [rng.randrange(n) for _ in range(n)]
    ds.append(ppl(a, idx) - ppl(b, idx))
ds.sort()
print(f"{ppl(a,full):.4f} - {ppl(b,full):.4f} = {d0:+.4f} [{ds[25]:+.4f}, {ds[974]:+.4f}]")
