#!/usr/bin/env bash
# Independent llama.cpp clients load our artifacts: a uniform-width slice of
# SmolLM2-135M-Instruct F16 (gamma 0.7 in every layer, so the file's
# feed_forward_length is one number, as stock llama.cpp expects) generates text
#   1. in stock llama.cpp (unmodified, scripts/stock/build.sh) through stock_bench,
#   2. in llama-cpp-python (its PyPI source package, which builds its own llama.cpp,
#      installed into a venv under ~/.cache/selectinfer/), and
#   3. in selectinfer generate,
# greedy, on the same prompts, 2 threads. Writes results/bench/stock-clients.md with
# the commands and what each printed, and whether the texts and the first-token
# logits agree. Exits 1 when a client fails to load or generate, or when stock
# llama.cpp (the same llama.cpp version as ours) generates other tokens than
# selectinfer; a different llama-cpp-python text is recorded, not an error (its
# llama.cpp is another version).
#
#   scripts/stock-clients.sh [--no-python] [--tokens K]
#
# Measures no speed. Cold: about 6 minutes for stock llama.cpp and 4-5 for
# llama-cpp-python on 2 cores (both once; llama-cpp-python took 15 minutes on a
# busy machine); warm about a minute.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
die() { echo "stock-clients.sh: $*" >&2; exit 1; }
say() { echo "stock-clients.sh: $*" >&2; }
usage() { echo "stock-clients.sh: $*" >&2; echo "usage: scripts/stock-clients.sh [--no-python] [--tokens K]" >&2; exit 2; }

LLAMA_CPP_PYTHON=0.3.36
python_client=1 tokens=32
while [ $# -gt 0 ]; do
    case "$1" in
        --no-python) python_client=0; shift ;;
        --tokens) tokens=${2:-}; shift 2 || usage "--tokens needs a value" ;;
        -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) usage "unknown argument $1" ;;
    esac
done
[[ "$tokens" =~ ^[1-9][0-9]*$ ]] || usage "--tokens wants a positive integer (got '$tokens')"
command -v python3 >/dev/null || die "python3 not found"

. scripts/env.sh
SELECTINFER_MODELS=smollm2 scripts/setup.sh
# Ours first, so that stock/build.sh can compare its CMake options with our build's.
cargo build --release --locked || die "cargo build failed"
stock=$(scripts/stock/build.sh) || die "building stock llama.cpp failed"
si=$SELECTINFER_BIN

f16=models/SmolLM2-135M-Instruct.F16.gguf
slice=models/SmolLM2-135M-Instruct.F16.qa-load0.7-uniform.gguf
slice_cmd="selectinfer slice -m $f16 --profile profiles/SmolLM2-135M-Instruct.F16 --task qa --load 0.7 --layers 0..30 -o $slice"
[ -f "$f16" ] || "$si" convert models/SmolLM2-135M-Instruct.Q4_1.gguf --to f16 -o "$f16" || die "converting to F16 failed"
if [ ! -f "$slice" ]; then
    "$si" ${slice_cmd#selectinfer } --json >/dev/null || die "slicing failed: $slice_cmd"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# For contrast, the default slice (first and last layers whole: per-layer
# widths, which needs our patches/0002) must fail in stock llama.cpp with a shape error.
ragged=models/SmolLM2-135M-Instruct.F16.qa-load0.7.gguf
ragged_cmd="selectinfer slice -m $f16 --profile profiles/SmolLM2-135M-Instruct.F16 --task qa --load 0.7 --static 0.3 -o $ragged"
if [ ! -f "$ragged" ]; then
    "$si" ${ragged_cmd#selectinfer } --json >/dev/null || die "slicing failed: $ragged_cmd"
fi
if "$stock" generate -m "$ragged" --prompt "The capital of France is" -n 4 >/dev/null 2>"$work/ragged.err"; then
    die "stock llama.cpp loaded the per-layer-width slice $ragged; expected a shape error"
fi
grep -m1 'wrong shape' "$work/ragged.err" >"$work/ragged.txt" || die "stock llama.cpp failed on $ragged without a shape error: $(cat "$work/ragged.err")"

# Uniform width: every layer the same n_ff and the metadata key one number.
"$si" inspect --json "$slice" >"$work/inspect.json" || die "inspect failed on $slice"
"$si" inspect --metadata "$slice" >"$work/metadata.md" || die "inspect --metadata failed on $slice"
python3 - "$work/inspect.json" "$work/metadata.md" >"$work/width.txt" <<'PY' || die "$slice is not uniform-width: $(cat "$work/width.txt")"
import json, re, sys
info = json.load(open(sys.argv[1]))
widths = sorted(set(info["n_ff"]))
key = f'{info["architecture"]}.feed_forward_length'
row = [l for l in open(sys.argv[2]) if re.match(rf"\|\s*{re.escape(key)}\s*\|", l)]
value = row[0].split("|")[2].strip() if row else "(missing)"
print(f"{key} = {value}; n_ff per layer: {', '.join(map(str, widths))} ({len(info['n_ff'])} layers)")
sys.exit(0 if len(widths) == 1 and value.isdigit() else 1)
PY

# llama-cpp-python from its source package, in its own venv.
venv=$HOME/.cache/selectinfer/llama-cpp-python-$LLAMA_CPP_PYTHON
if [ "$python_client" = 1 ]; then
    if ! "$venv/bin/python" -c "import llama_cpp, sys; sys.exit(llama_cpp.__version__ != '$LLAMA_CPP_PYTHON')" 2>/dev/null; then
        say "installing llama-cpp-python $LLAMA_CPP_PYTHON from its source package into $venv (builds llama.cpp: 4-5 minutes on 2 cores; log: $venv.log)"
        rm -rf "$venv"
        python3 -m venv "$venv" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
        CMAKE_ARGS="-DGGML_BLAS=OFF -DGGML_CUDA=OFF" CMAKE_BUILD_PARALLEL_LEVEL=$(nproc) \
            "$venv/bin/pip" install --disable-pip-version-check --no-binary llama-cpp-python \
            "llama-cpp-python==$LLAMA_CPP_PYTHON" >"$venv.log" 2>&1 ||
            { rm -rf "$venv"; die "pip install llama-cpp-python==$LLAMA_CPP_PYTHON failed; see $venv.log"; }
    fi
fi

prompts=("The capital of France is" "Question: What is the boiling point of water in degrees Celsius?
Answer:")
for i in "${!prompts[@]}"; do
    p=${prompts[$i]}
    printf '%s' "$p" >"$work/prompt-$i.txt"
    say "prompt $((i + 1)): selectinfer, stock llama.cpp$([ "$python_client" = 1 ] && echo ", llama-cpp-python")"
    "$si" generate -m "$slice" -p "$p" -n "$tokens" -t 2 --json >"$work/ours-$i.json" 2>"$work/ours-$i.err" ||
        die "selectinfer generate failed on $slice: $(cat "$work/ours-$i.err")"
    "$si" generate -m "$f16" -p "$p" -n "$tokens" -t 2 --json >"$work/full-$i.json" 2>"$work/full-$i.err" ||
        die "selectinfer generate failed on $f16: $(cat "$work/full-$i.err")"
    "$stock" generate -m "$slice" --prompt "$p" -n "$tokens" -t 2 --json >"$work/stock-$i.json" 2>"$work/stock-$i.err" ||
        die "stock llama.cpp failed on $slice: $(cat "$work/stock-$i.err")"
    if [ "$python_client" = 1 ]; then
        "$venv/bin/python" scripts/stock/llama_cpp_python_generate.py "$slice" "$p" "$tokens" 2 \
            >"$work/python-$i.json" 2>"$work/python-$i.err" ||
            die "llama-cpp-python failed on $slice: $(cat "$work/python-$i.err")"
    fi
done

mkdir -p results/bench
out=results/bench/stock-clients.md
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then commit="$commit (dirty)"; fi
flags="--tokens $tokens"; [ "$python_client" = 1 ] || flags="$flags --no-python"
export R_RAGGED_CMD=$ragged_cmd R_WORK=$work R_N=${#prompts[@]} R_PY=$python_client R_K=$tokens R_SLICE=$slice R_F16=$f16 R_SLICE_CMD=$slice_cmd \
    R_HEAD="\`scripts/stock-clients.sh $flags\` ($(date -u '+%F %H:%M UTC'), commit $commit)" \
    R_SYS2=$(sed -n 's/^LLAMA_CPP_SYS_2=//p' scripts/vendor.sh) R_LCP=$LLAMA_CPP_PYTHON
python3 - >"$out.tmp" <<'PY' || { rm -f "$out.tmp"; die "stock llama.cpp and selectinfer disagree (see above)"; }
import json, os, sys
e = os.environ
work, n, py_on, k = e["R_WORK"], int(e["R_N"]), e["R_PY"] == "1", e["R_K"]
load = lambda name: json.load(open(os.path.join(work, name)))
fence = "`" * 3
print("# Independent llama.cpp clients load a selectinfer slice")
print()
print(e["R_HEAD"])
print()
print(f"Slice: `{e['R_SLICE_CMD']}`  ")
print(f"Uniform width: {open(os.path.join(work, 'width.txt')).read().strip()}.")
print()
print(f"Each client generates greedily, at most {k} tokens, stopping at end of generation, 2 threads:")
print(f"- selectinfer: `selectinfer generate -m {e['R_SLICE']} -p PROMPT -n {k} -t 2 --json` (our patched llama.cpp)")
print(f"- stock llama.cpp: `stock_bench generate -m {e['R_SLICE']} --prompt PROMPT -n {k} -t 2 --json` "
      f"(scripts/stock/stock_bench.c on the unmodified llama.cpp of llama-cpp-sys-2 {e['R_SYS2']}, built by scripts/stock/build.sh)")
if py_on:
    print(f"- llama-cpp-python: `python scripts/stock/llama_cpp_python_generate.py {e['R_SLICE']} PROMPT {k} 2` "
          f"(llama-cpp-python {e['R_LCP']} built from its PyPI source package, with the llama.cpp it bundles)")
print(f"- for contrast, selectinfer on the unsliced `{e['R_F16']}`")
print()
bad = []
for i in range(n):
    ours, stock, full = load(f"ours-{i}.json"), load(f"stock-{i}.json"), load(f"full-{i}.json")
    py = load(f"python-{i}.json") if py_on else None
    print(f"## Prompt {i + 1}")
    print()
    print(fence)
    print(open(os.path.join(work, f"prompt-{i}.txt")).read())
    print(fence)
    print()
    rows = [("selectinfer, slice", ours), ("stock llama.cpp, slice", stock)]
    if py:
        rows.append((py["engine"] + ", slice", py))
    rows.append(("selectinfer, unsliced F16", full))
    for name, r in rows:
        count = r["generated_tokens"] if "generated_tokens" in r else len(r["tokens"])
        print(f"{name} ({count} tokens):")
        print()
        print(fence)
        print(r["text"])
        print(fence)
        print()
    same = stock["text"] == ours["text"]
    if not same:
        bad.append(i + 1)
    print(f"- stock llama.cpp text identical to selectinfer's: {'yes' if same else 'NO'}")
    if py:
        print(f"- llama-cpp-python text identical to selectinfer's: {'yes' if py['text'] == ours['text'] else 'no'}")
        st, pt = dict(map(tuple, stock["first_top_logits"])), dict(map(tuple, py["first_top_logits"]))
        ids_s, ids_p = [t for t, _ in stock["first_top_logits"]], [t for t, _ in py["first_top_logits"]]
        common = [t for t in ids_s if t in pt]
        diff = max(abs(st[t] - pt[t]) for t in common) if common else float("nan")
        print(f"- first-token top-5 (token, logit), stock llama.cpp: {stock['first_top_logits']}")
        print(f"- first-token top-5 (token, logit), llama-cpp-python: {[[t, round(v, 4)] for t, v in py['first_top_logits']]}")
        print(f"- same top-5 tokens in the same order: {'yes' if ids_s == ids_p else 'no'}; "
              f"largest logit difference over the shared ones: {diff:.2g}")
    print(f"- the slice's text differs from the unsliced model's: {'yes' if full['text'] != ours['text'] else 'no'}")
    print()
print("selectinfer generate prints no logits; its agreement with the others is the greedy text, token for token.")
print()
print("## A slice with per-layer widths in stock llama.cpp")
print()
print(f"`{e['R_RAGGED_CMD']}` slices the default layer range and leaves the first and last layers whole, so "
      "feed_forward_length is an array. Stock llama.cpp creates every layer at layer 0's width and refuses it "
      "(our patches/0002 loads it):")
print()
print(fence)
print(open(os.path.join(work, "ragged.txt")).read().strip())
print(fence)
if bad:
    print(f"stock llama.cpp and selectinfer generated different text for prompt(s) {bad}", file=sys.stderr)
    sys.exit(1)
PY
mv "$out.tmp" "$out"
cat "$out"
