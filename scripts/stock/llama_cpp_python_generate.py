"""Greedy generation through llama-cpp-python (its own llama.cpp build), as
`stock_bench generate --json` does it: the prompt tokenized with BOS and special
text not parsed, argmax each step, stop at an end-of-generation token or after N
tokens. Prints one JSON object: text, token ids, the five largest first-token logits
and the llama-cpp-python version.

    python llama_cpp_python_generate.py MODEL.gguf PROMPT N_TOKENS [THREADS]

Exit codes: 0 success, 1 the model did not load or generation failed, 2 usage.
"""

import json
import sys


def main(argv):
    if len(argv) not in (4, 5):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    path, prompt = argv[1], argv[2]
    try:
        n_tokens = int(argv[3])
        threads = int(argv[4]) if len(argv) == 5 else 2
    except ValueError:
        print("llama_cpp_python_generate: N_TOKENS and THREADS are integers", file=sys.stderr)
        return 2
    import llama_cpp
    import numpy as np

    try:
        llm = llama_cpp.Llama(
            model_path=path,
            n_ctx=2048,
            n_batch=512,
            n_threads=threads,
            n_threads_batch=threads,
            n_gpu_layers=0,
            use_mmap=True,
            verbose=False,
        )
    except Exception as e:  # llama-cpp-python raises ValueError for a failed load
        print(f"llama_cpp_python_generate: cannot load {path}: {e}", file=sys.stderr)
        return 1
    tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=False)
    if not tokens:
        print("llama_cpp_python_generate: the prompt gives no tokens", file=sys.stderr)
        return 1
    vocab = llm._model.vocab
    n_vocab = llm.n_vocab()

    def last_logits():
        # Llama.eval keeps no logits unless logits_all; read the context's own.
        ptr = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(n_vocab,)).copy()

    llm.reset()
    llm.eval(tokens)
    first = last_logits()
    top = np.argsort(-first, kind="stable")[:5]
    out = []
    while len(out) < n_tokens:
        t = int(np.argmax(first if not out else last_logits()))
        if llama_cpp.llama_vocab_is_eog(vocab, t):
            break
        out.append(t)
        if len(out) == n_tokens:
            break
        llm.eval([t])
    text = llm.detokenize(out).decode("utf-8", errors="replace")
    print(
        json.dumps(
            {
                "engine": f"llama-cpp-python {llama_cpp.__version__}",
                "model": path,
                "prompt_tokens": len(tokens),
                "text": text,
                "tokens": out,
                "first_top_logits": [[int(i), float(first[i])] for i in top],
            },
            ensure_ascii=False,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
