#!/usr/bin/env python3
"""Counts the answers that run on past the end of the translation: more than twice
the dense file's words plus 5, on the same example, for every de-en output file of
the full experiment (results/qwen2.5-1.5b/outputs). Run from the repository root."""
import glob, json, os
d = 'results/qwen2.5-1.5b/outputs'
load = lambda f: [json.loads(l) for l in open(f)]
ref = load(f'{d}/qwen2.5-coder-1.5b-instruct-q4_k_m.reference.translate.wmt16_de_en_newstest2016_500.n100.jsonl')
print('| output file | run-on answers of 100 |')
print('|---|---|')
for f in sorted(glob.glob(f'{d}/*translate*n100.jsonl')):
    out = load(f)
    assert [o['id'] for o in out] == [r['id'] for r in ref], f
    n = sum(len(o['output'].split()) > 2 * len(r['output'].split()) + 5 for r, o in zip(ref, out))
    print(f'| {os.path.basename(f)} | {n} |')
