/*
 * stock_bench: an independent client of an unmodified llama.cpp, through its C API
 * (llama.h) only. Built by scripts/stock/build.sh.
 *
 *   stock_bench bench -m MODEL [-p 64] [-n 64] [-r 1] [-t 2] [--text FILE]
 *       Times prefill and decode exactly as `selectinfer bench` does
 *       (src/cli/bench.rs, src/engine/session.rs) and prints one JSON line per
 *       repetition:
 *       - prompt: the first P tokens of FILE (default data/wikitext2_raw_test.txt),
 *         cut to at most 40*P bytes on a character boundary, tokenized with the
 *         model's special tokens added (BOS) and special text not parsed;
 *       - context n_ctx = P + N + 16, n_batch = n_ubatch = min(512, n_ctx), the same
 *         thread count for decode and prefill, other settings llama.cpp's defaults;
 *         one context for all repetitions, its KV cache cleared before each;
 *       - prefill tok/s = prompt tokens / time of the llama_decode calls over the
 *         prompt (logits of the last token only);
 *       - decode tok/s = (N - 1) / time from the first greedy sample to the end of
 *         the N-th sample: N samples (each detokenized), N - 1 single-token decodes;
 *         end-of-generation tokens are ignored, so exactly N tokens are generated.
 *   stock_bench generate -m MODEL --prompt TEXT [-n 32] [-t 2] [--ctx 2048] [--json]
 *       Greedy generation as `selectinfer generate` does it (prompt tokenized with
 *       BOS, stop at an end-of-generation token or after N tokens) and prints the
 *       text; with --json one object with the text, the token ids and the five
 *       largest first-token logits.
 *   stock_bench info
 *       Prints llama.cpp's system info (the CPU features ggml was built with).
 *
 * Exit codes: 0 success, 1 bad input or a llama.cpp failure, 2 usage.
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llama.h"

static bool g_verbose = false;

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("stock_bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static void usage(const char *msg) {
    fprintf(stderr,
            "stock_bench: %s\n"
            "usage: stock_bench bench -m MODEL [-p PROMPT_TOKENS] [-n GEN] [-r REPS] [-t THREADS] [--text FILE]\n"
            "       stock_bench generate -m MODEL --prompt TEXT [-n GEN] [-t THREADS] [--ctx N] [--json]\n"
            "       stock_bench info\n"
            "       (add --verbose for llama.cpp's log)\n",
            msg);
    exit(2);
}

/* llama.cpp logs through one callback: errors always, the rest with --verbose. */
static void log_callback(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (g_verbose || level == GGML_LOG_LEVEL_ERROR) {
        fputs(text, stderr);
    }
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long parse_count(const char *flag, const char *v, long min) {
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || x < min) {
        char msg[256];
        snprintf(msg, sizeof msg, "%s wants an integer of at least %ld, got '%s'", flag, min, v);
        usage(msg);
    }
    return x;
}

/* A JSON string literal of `s` (n bytes) on `f`. */
static void json_string(FILE *f, const char *s, size_t n) {
    fputc('"', f);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': fputs("\\\"", f); break;
        case '\\': fputs("\\\\", f); break;
        case '\n': fputs("\\n", f); break;
        case '\r': fputs("\\r", f); break;
        case '\t': fputs("\\t", f); break;
        default:
            if (c < 0x20) {
                fprintf(f, "\\u%04x", c);
            } else {
                fputc(c, f);
            }
        }
    }
    fputc('"', f);
}

/* A growable byte buffer. */
typedef struct {
    char *data;
    size_t len, cap;
} buffer;

static void buffer_push(buffer *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->data = realloc(b->data, b->cap);
        if (!b->data) die("out of memory");
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = '\0';
}

static char *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) die("cannot read %s: %s", path, strerror(errno));
    buffer b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buffer_push(&b, chunk, n);
    if (ferror(f)) die("error reading %s", path);
    fclose(f);
    if (!b.data) buffer_push(&b, "", 0);
    *len = b.len;
    return b.data;
}

/* Tokens of text[0..n): add_special adds BOS (as the model wants), special text is
 * not parsed, as selectinfer's Model::tokenize(text, true, false). */
static llama_token *tokenize(const struct llama_vocab *vocab, const char *text, size_t n, int *n_out) {
    if (n > 0x7fffffff) die("text too long to tokenize");
    int cap = (int)n + 8;
    llama_token *toks = malloc(sizeof(llama_token) * (size_t)cap);
    if (!toks) die("out of memory");
    int k = llama_tokenize(vocab, text, (int32_t)n, toks, cap, true, false);
    if (k < 0) {
        cap = -k;
        toks = realloc(toks, sizeof(llama_token) * (size_t)cap);
        if (!toks) die("out of memory");
        k = llama_tokenize(vocab, text, (int32_t)n, toks, cap, true, false);
    }
    if (k < 0) die("tokenization failed");
    *n_out = k;
    return toks;
}

typedef struct {
    struct llama_model *model;
    const struct llama_vocab *vocab;
    struct llama_context *ctx;
    struct llama_batch batch;
    int n_batch;
    int n_past;
} session;

static void session_open(session *s, const char *path, int n_ctx, int threads) {
    struct llama_model_params mp = llama_model_default_params();
    /* As selectinfer's Model::load: memory-mapped, no GPU layers. */
    mp.load_mode = LLAMA_LOAD_MODE_MMAP;
    mp.n_gpu_layers = 0;
    s->model = llama_model_load_from_file(path, mp);
    if (!s->model) die("llama.cpp could not load %s", path);
    s->vocab = llama_model_get_vocab(s->model);
    s->n_batch = n_ctx < 512 ? n_ctx : 512;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)n_ctx;
    cp.n_batch = (uint32_t)s->n_batch;
    cp.n_ubatch = (uint32_t)s->n_batch;
    cp.n_threads = threads;
    cp.n_threads_batch = threads;
    s->ctx = llama_init_from_model(s->model, cp);
    if (!s->ctx) die("llama.cpp could not create a context (n_ctx %d) on %s", n_ctx, path);
    s->batch = llama_batch_init(s->n_batch, 0, 1);
    s->n_past = 0;
}

static void session_close(session *s) {
    llama_batch_free(s->batch);
    llama_free(s->ctx);
    llama_model_free(s->model);
}

static void session_clear(session *s) {
    llama_memory_clear(llama_get_memory(s->ctx), true);
    s->n_past = 0;
}

/* Decodes tokens after the cache in chunks of n_batch, logits of the last only. */
static void session_decode(session *s, const llama_token *toks, int n) {
    if (s->n_past + n > (int)llama_n_ctx(s->ctx)) die("context full (%d tokens)", s->n_past + n);
    for (int start = 0; start < n; start += s->n_batch) {
        int len = n - start < s->n_batch ? n - start : s->n_batch;
        s->batch.n_tokens = len;
        for (int i = 0; i < len; i++) {
            s->batch.token[i] = toks[start + i];
            s->batch.pos[i] = s->n_past + i;
            s->batch.n_seq_id[i] = 1;
            s->batch.seq_id[i][0] = 0;
            s->batch.logits[i] = (start + i + 1 == n);
        }
        int rc = llama_decode(s->ctx, s->batch);
        if (rc != 0) die("llama_decode returned %d", rc);
        s->n_past += len;
    }
}

/* The bytes of one token (special tokens not rendered), appended to `text`. */
static void token_piece(const struct llama_vocab *vocab, llama_token t, buffer *text) {
    char small[64];
    int n = llama_token_to_piece(vocab, t, small, sizeof small, 0, false);
    if (n >= 0) {
        buffer_push(text, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)-n);
    if (!big) die("out of memory");
    n = llama_token_to_piece(vocab, t, big, -n, 0, false);
    if (n < 0) die("llama_token_to_piece failed for token %d", t);
    buffer_push(text, big, (size_t)n);
    free(big);
}

typedef struct {
    int prompt_tokens, generated;
    double prefill_s, decode_s;
    float top_logit[5];
    int top_id[5];
} run_stats;

/* Prefill, then greedy generation of up to max_tokens (as Session::generate). */
static llama_token *generate(session *s, const llama_token *prompt, int n_prompt, int max_tokens, bool ignore_eog,
                             buffer *text, run_stats *st) {
    memset(st, 0, sizeof *st);
    st->prompt_tokens = n_prompt;
    double t0 = now_s();
    session_decode(s, prompt, n_prompt);
    st->prefill_s = now_s() - t0;

    const float *logits = llama_get_logits_ith(s->ctx, -1);
    int n_vocab = llama_vocab_n_tokens(s->vocab);
    for (int k = 0; k < 5; k++) st->top_id[k] = -1;
    for (int v = 0; v < n_vocab; v++) {
        for (int k = 0; k < 5; k++) {
            if (st->top_id[k] < 0 || logits[v] > st->top_logit[k]) {
                for (int j = 4; j > k; j--) {
                    st->top_id[j] = st->top_id[j - 1];
                    st->top_logit[j] = st->top_logit[j - 1];
                }
                st->top_id[k] = v;
                st->top_logit[k] = logits[v];
                break;
            }
        }
    }

    struct llama_sampler *smpl = llama_sampler_init_greedy();
    llama_token *out = malloc(sizeof(llama_token) * (size_t)(max_tokens > 0 ? max_tokens : 1));
    if (!out) die("out of memory");
    int n = 0;
    double t_start = now_s();
    while (n < max_tokens) {
        llama_token t = llama_sampler_sample(smpl, s->ctx, s->batch.n_tokens - 1);
        llama_sampler_accept(smpl, t);
        if (!ignore_eog && llama_vocab_is_eog(s->vocab, t)) break;
        out[n++] = t;
        token_piece(s->vocab, t, text);
        if (n == max_tokens) break;
        session_decode(s, &t, 1);
    }
    st->decode_s = n > 1 ? now_s() - t_start : 0.0;
    st->generated = n;
    llama_sampler_free(smpl);
    return out;
}

static double rate(int n, double s) { return s > 0 ? n / s : 0.0; }

typedef struct {
    const char *model, *text_path, *prompt;
    long prompt_tokens, gen, reps, threads, ctx;
    bool json, gen_given;
} options;

static options parse_args(int argc, char **argv, int first) {
    options o = {NULL, "data/wikitext2_raw_test.txt", NULL, 64, 64, 1, 2, 2048, false, false};
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (!strcmp(a, "--verbose")) {
            g_verbose = true;
        } else if (!strcmp(a, "--json")) {
            o.json = true;
        } else if (!has_value) {
            char msg[256];
            snprintf(msg, sizeof msg, "%s: unknown flag or missing value", a);
            usage(msg);
        } else if (!strcmp(a, "-m") || !strcmp(a, "--model")) {
            o.model = argv[++i];
        } else if (!strcmp(a, "--text")) {
            o.text_path = argv[++i];
        } else if (!strcmp(a, "--prompt")) {
            o.prompt = argv[++i];
        } else if (!strcmp(a, "-p") || !strcmp(a, "--prompt-tokens")) {
            o.prompt_tokens = parse_count(a, argv[++i], 1);
        } else if (!strcmp(a, "-n") || !strcmp(a, "--gen")) {
            o.gen = parse_count(a, argv[++i], 1);
            o.gen_given = true;
        } else if (!strcmp(a, "-r") || !strcmp(a, "--reps")) {
            o.reps = parse_count(a, argv[++i], 1);
        } else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) {
            o.threads = parse_count(a, argv[++i], 1);
        } else if (!strcmp(a, "--ctx")) {
            o.ctx = parse_count(a, argv[++i], 16);
        } else {
            char msg[256];
            snprintf(msg, sizeof msg, "unknown flag %s", a);
            usage(msg);
        }
    }
    if (!o.model) usage("-m MODEL is required");
    if (o.prompt_tokens > 1000000 || o.gen > 1000000 || o.ctx > 10000000) usage("sizes out of range");
    return o;
}

static void bench(const options *o) {
    size_t len;
    char *text = read_file(o->text_path, &len);
    /* About 40 bytes per token is plenty; cut on a character boundary. */
    size_t cut = (size_t)(40 * o->prompt_tokens);
    if (cut > len) cut = len;
    while (cut > 0 && cut < len && ((unsigned char)text[cut] & 0xC0) == 0x80) cut--;

    session s;
    session_open(&s, o->model, (int)(o->prompt_tokens + o->gen + 16), (int)o->threads);
    int n_prompt;
    llama_token *prompt = tokenize(s.vocab, text, cut, &n_prompt);
    if (n_prompt > o->prompt_tokens) n_prompt = (int)o->prompt_tokens;
    if (n_prompt < 1) die("%s gives no prompt tokens", o->text_path);

    for (long r = 0; r < o->reps; r++) {
        session_clear(&s);
        buffer out_text = {0};
        run_stats st;
        free(generate(&s, prompt, n_prompt, (int)o->gen, true, &out_text, &st));
        printf("{\"engine\":\"stock llama.cpp\",\"model\":");
        json_string(stdout, o->model, strlen(o->model));
        printf(",\"rep\":%ld,\"prefill_tps\":%.6g,\"decode_tps\":%.6g,\"prefill_s\":%.6g,\"decode_s\":%.6g,"
               "\"prompt_tokens\":%d,\"gen_tokens\":%d,\"threads\":%ld}\n",
               r + 1, rate(st.prompt_tokens, st.prefill_s), rate(st.generated - 1, st.decode_s), st.prefill_s,
               st.decode_s, st.prompt_tokens, st.generated, o->threads);
        fflush(stdout);
        free(out_text.data);
    }
    free(prompt);
    free(text);
    session_close(&s);
}

static void generate_text(const options *o) {
    if (!o->prompt || !*o->prompt) usage("generate needs a non-empty --prompt TEXT");
    session s;
    session_open(&s, o->model, (int)o->ctx, (int)o->threads);
    int n_prompt;
    llama_token *prompt = tokenize(s.vocab, o->prompt, strlen(o->prompt), &n_prompt);
    if (n_prompt < 1) die("the prompt gives no tokens");
    int max_tokens = o->gen_given ? (int)o->gen : 32;
    buffer text = {0};
    buffer_push(&text, "", 0);
    run_stats st;
    llama_token *out = generate(&s, prompt, n_prompt, max_tokens, false, &text, &st);
    if (o->json) {
        printf("{\"engine\":\"stock llama.cpp\",\"model\":");
        json_string(stdout, o->model, strlen(o->model));
        printf(",\"prompt_tokens\":%d,\"text\":", n_prompt);
        json_string(stdout, text.data, text.len);
        printf(",\"tokens\":[");
        for (int i = 0; i < st.generated; i++) printf(i ? ",%d" : "%d", out[i]);
        printf("],\"first_top_logits\":[");
        for (int k = 0; k < 5; k++) printf(k ? ",[%d,%.6g]" : "[%d,%.6g]", st.top_id[k], st.top_logit[k]);
        printf("]}\n");
    } else {
        printf("%s\n", text.data);
    }
    free(out);
    free(text.data);
    free(prompt);
    session_close(&s);
}

int main(int argc, char **argv) {
    if (argc < 2) usage("no mode given");
    const char *mode = argv[1];
    if (strcmp(mode, "bench") && strcmp(mode, "generate") && strcmp(mode, "info")) usage("the mode is bench, generate or info");
    llama_log_set(log_callback, NULL);
    llama_backend_init();
    if (!strcmp(mode, "info")) {
        printf("%s\n", llama_print_system_info());
    } else {
        options o = parse_args(argc, argv, 2);
        if (!strcmp(mode, "bench")) {
            bench(&o);
        } else {
            generate_text(&o);
        }
    }
    llama_backend_free();
    return 0;
}
