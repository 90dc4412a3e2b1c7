/* tools/sample: `hyperpar sample` — generates tokens from a checkpoint. With
 * --tokenizer (GPT-2's byte-level BPE) the prompt is encoded and the output
 * decoded, token by token as raw bytes; every prompt token must be in the
 * model's vocabulary. Without one, a model with V = 256 reads and writes raw
 * bytes (text); otherwise token ids are printed, a prompt is refused, and
 * generation starts from <|endoftext|> (V-1) when V = 50257 (GPT-2's
 * vocabulary), else from token 0. Each new token runs the forward program
 * over the last T tokens (a longer prompt: its last T tokens). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hyperpar/hyperpar.h>

#include "args.h"
#include "commands.h"

#define GPT2_VOCAB 50257

typedef struct {
    char ckpt[512], prompt[4096], tokenizer[1024];
    int tokens, threads;
    float temperature;
    uint64_t seed;
} sample_opts;

/* Writes token `id` as the output shows it. */
static void emit(const hp_tokenizer *tok, int id, int bytes) {
    size_t len;
    const char *s = tok ? hp_tokenizer_token(tok, id, &len) : NULL;
    if (s)
        fwrite(s, 1, len, stdout);
    else if (bytes)
        putchar(id);
    else
        printf("%d ", id);
}

/* Generates from the context ctx[0..n) (room for T) on inf. */
static hp_status generate(hp_infer *inf, int32_t *ctx, int n, const hp_tokenizer *tok, const sample_opts *o) {
    int T = hp_infer_seq(inf), V = hp_infer_vocab(inf), bytes = V == 256;
    hp_sampler rng;
    hp_sampler_seed(&rng, o->seed);
    for (int i = 0; i < o->tokens; i++) {
        const float *logits;
        HP_TRY(hp_infer_logits(inf, &logits, ctx, n, n - 1));
        int next = hp_sampler_pick(&rng, logits, V, o->temperature);
        emit(tok, next, bytes);
        fflush(stdout);
        if (n == T) {
            memmove(ctx, ctx + 1, sizeof(int32_t) * (size_t)(T - 1));
            n--;
        }
        ctx[n++] = next;
    }
    putchar('\n');
    return HP_OK;
}

/* The prompt's ids (every one < V), the last T of them in ctx; or, with no
 * prompt, <|endoftext|>. */
static hp_status prompt_tokens(int32_t *ctx, int *n, hp_tokenizer *tok, const sample_opts *o, int V, int T) {
    const char *src = o->tokenizer;
    if (!o->prompt[0]) {
        int eot = hp_tokenizer_eot(tok);
        if (eot < 0) return hp_errorf("hyperpar sample: %s: no <|endoftext|> token to start from; give --prompt", src);
        if (eot >= V)
            return hp_errorf("hyperpar sample: %s: <|endoftext|> is id %d, outside the model's vocabulary of %d tokens; "
                             "give --prompt",
                             src, eot, V);
        ctx[(*n)++] = eot;
        return HP_OK;
    }
    int32_t *ids;
    size_t k;
    HP_TRY(hp_tokenizer_encode(&ids, &k, tok, o->prompt, strlen(o->prompt)));
    for (size_t i = 0; i < k; i++)
        if (ids[i] >= V) {
            size_t len;
            const char *s = hp_tokenizer_token(tok, ids[i], &len);
            hp_status e = hp_errorf("hyperpar sample: --prompt: token %zu \"%.*s\" (id %d) is not in the model's "
                                    "vocabulary of %d tokens (tokenizer %s)",
                                    i, (int)(len > 60 ? 60 : len), s, ids[i], V, src);
            free(ids);
            return e;
        }
    size_t first = k > (size_t)T ? k - (size_t)T : 0;
    for (size_t i = first; i < k; i++) ctx[(*n)++] = ids[i];
    free(ids);
    return HP_OK;
}

/* Fills ctx with the starting tokens (n of them) and echoes the prompt. */
static hp_status start(int32_t *ctx, int *n, hp_tokenizer *tok, const sample_opts *o, int V, int T) {
    *n = 0;
    if (tok) {
        int tv = hp_tokenizer_vocab_size(tok);
        if (V > tv)
            return hp_errorf("hyperpar sample: the model has %d tokens, more than the %d of tokenizer %s: its ids "
                             "could not be decoded",
                             V, tv, o->tokenizer);
        HP_TRY(prompt_tokens(ctx, n, tok, o, V, T));
    } else if (V == 256) {
        if (o->prompt[0]) { /* a prompt longer than the context: its last T bytes */
            size_t len = strlen(o->prompt), first = len > (size_t)T ? len - (size_t)T : 0;
            for (size_t i = first; i < len; i++) ctx[(*n)++] = (unsigned char)o->prompt[i];
        } else {
            ctx[(*n)++] = '\n';
        }
    } else {
        if (o->prompt[0])
            return hp_errorf("hyperpar sample: --prompt on a %d-token model needs --tokenizer DIR (GPT-2's "
                             "vocab.json + merges.txt or tokenizer.json)",
                             V);
        ctx[(*n)++] = V == GPT2_VOCAB ? V - 1 : 0;
    }
    fputs(o->prompt, stdout);
    return HP_OK;
}

static hp_status sample(const sample_opts *o) {
    if (!o->ckpt[0]) return hp_errorf("hyperpar sample: --ckpt DIR is required");
    if (o->tokens < 1) return hp_errorf("hyperpar sample: --tokens must be >= 1, got %d", o->tokens);
    if (o->threads < 1 || o->threads > 256) return hp_errorf("hyperpar sample: --threads must be in 1..256, got %d", o->threads);
    if (o->temperature < 0)
        return hp_errorf("hyperpar sample: --temperature must be >= 0 (0: greedy), got %g", (double)o->temperature);
    hp_tokenizer *tok = NULL;
    if (o->tokenizer[0]) HP_TRY(hp_tokenizer_load(&tok, o->tokenizer));
    hp_infer *inf;
    hp_status st = hp_infer_create(&inf, o->ckpt, 0, o->threads);
    if (st) {
        hp_tokenizer_free(tok);
        return st;
    }
    int T = hp_infer_seq(inf), n = 0;
    int32_t *ctx = calloc((size_t)T, sizeof *ctx);
    if (!ctx) st = hp_errorf("hyperpar sample: out of memory");
    if (!st) st = start(ctx, &n, tok, o, hp_infer_vocab(inf), T);
    if (!st) st = generate(inf, ctx, n, tok, o);
    free(ctx);
    hp_infer_free(inf);
    hp_tokenizer_free(tok);
    return st;
}

int hp_cmd_sample(int argc, char **argv) {
    sample_opts o = {.tokens = 200, .threads = 2, .temperature = 0.8f, .seed = 42};
    hp_opt tab[] = {
        {"ckpt", HP_OPT_STR, o.ckpt, sizeof o.ckpt, "checkpoint directory (or a run directory with 'latest')"},
        {"tokenizer", HP_OPT_STR, o.tokenizer, sizeof o.tokenizer,
         "GPT-2 tokenizer: DIR with vocab.json + merges.txt or tokenizer.json"},
        {"prompt", HP_OPT_STR, o.prompt, sizeof o.prompt, "text to continue (none: start from <|endoftext|>)"},
        {"tokens", HP_OPT_INT, &o.tokens, 0, "tokens to generate"},
        {"temperature", HP_OPT_FLOAT, &o.temperature, 0, "sampling temperature (0 = greedy)"},
        {"seed", HP_OPT_U64, &o.seed, 0, "sampling seed"},
        {"threads", HP_OPT_INT, &o.threads, 0, "compute threads (1..256)"},
    };
    int help = 0, n = (int)(sizeof tab / sizeof tab[0]);
    hp_status st = hp_args_parse(&help, tab, n, argc, argv, 2, "sample");
    if (!st && help) {
        hp_args_usage(tab, n, "sample",
                      "Generates text from a checkpoint. With --tokenizer the prompt is encoded (every token must be\n"
                      "in the model's vocabulary) and the output decoded. Without one, a 256-token model reads and\n"
                      "writes bytes; other vocabularies print token ids and take no --prompt, starting from token\n"
                      "V-1 when V = 50257 (GPT-2's <|endoftext|>), else from token 0.");
        return 0;
    }
    if (!st) st = sample(&o);
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    return 0;
}
