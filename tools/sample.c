/* tools/sample: `hyperpar sample` — generates tokens from a checkpoint. A model
 * with V = 256 reads and writes raw bytes (text); otherwise token ids are
 * printed. Each new token runs the forward program over the last T tokens
 * (a prompt longer than T: its last T bytes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hyperpar/hyperpar.h>

#include "args.h"
#include "commands.h"

typedef struct {
    char ckpt[512], prompt[1024];
    int tokens, threads;
    float temperature;
    uint64_t seed;
} sample_opts;

/* Generates from the context ctx[0..*n) (room for T) on inf. */
static hp_status generate(hp_infer *inf, int32_t *ctx, int n, const sample_opts *o) {
    int T = hp_infer_seq(inf), V = hp_infer_vocab(inf), text = V == 256;
    hp_sampler rng;
    hp_sampler_seed(&rng, o->seed);
    for (int i = 0; i < o->tokens; i++) {
        const float *logits;
        HP_TRY(hp_infer_logits(inf, &logits, ctx, n, n - 1));
        int next = hp_sampler_pick(&rng, logits, V, o->temperature);
        if (text)
            putchar(next);
        else
            printf("%d ", next);
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

static hp_status sample(const sample_opts *o) {
    if (!o->ckpt[0]) return hp_errorf("hyperpar sample: --ckpt DIR is required");
    if (o->tokens < 1) return hp_errorf("hyperpar sample: --tokens must be >= 1, got %d", o->tokens);
    if (o->threads < 1 || o->threads > 256) return hp_errorf("hyperpar sample: --threads must be in 1..256, got %d", o->threads);
    if (o->temperature < 0)
        return hp_errorf("hyperpar sample: --temperature must be >= 0 (0: greedy), got %g", (double)o->temperature);
    hp_infer *inf;
    HP_TRY(hp_infer_create(&inf, o->ckpt, 0, o->threads));
    int T = hp_infer_seq(inf), n = 0, text = hp_infer_vocab(inf) == 256;
    int32_t *ctx = calloc((size_t)T, sizeof *ctx);
    if (!ctx) {
        hp_infer_free(inf);
        return hp_errorf("hyperpar sample: out of memory");
    }
    if (o->prompt[0] && text) { /* a prompt longer than the context: its last T bytes */
        size_t len = strlen(o->prompt), first = len > (size_t)T ? len - (size_t)T : 0;
        for (size_t i = first; i < len; i++) ctx[n++] = (unsigned char)o->prompt[i];
        fputs(o->prompt, stdout);
    } else {
        ctx[n++] = text ? '\n' : 0;
    }
    hp_status st = generate(inf, ctx, n, o);
    free(ctx);
    hp_infer_free(inf);
    return st;
}

int hp_cmd_sample(int argc, char **argv) {
    sample_opts o = {.tokens = 200, .threads = 2, .temperature = 0.8f, .seed = 42};
    hp_opt tab[] = {
        {"ckpt", OPT_STR, o.ckpt, sizeof o.ckpt, "checkpoint directory (or a run directory with 'latest')"},
        {"prompt", OPT_STR, o.prompt, sizeof o.prompt, "text to continue (byte-level models)"},
        {"tokens", OPT_INT, &o.tokens, 0, "tokens to generate"},
        {"temperature", OPT_FLOAT, &o.temperature, 0, "sampling temperature (0 = greedy)"},
        {"seed", OPT_U64, &o.seed, 0, "sampling seed"},
        {"threads", OPT_INT, &o.threads, 0, "compute threads (1..256)"},
    };
    int help = 0, n = (int)(sizeof tab / sizeof tab[0]);
    hp_status st = hp_args_parse(&help, tab, n, argc, argv, 2, "sample");
    if (!st && help) {
        hp_args_usage(tab, n, "sample", "Generates text from a checkpoint.");
        return 0;
    }
    if (!st) st = sample(&o);
    if (st) {
        hp_cli_error(st);
        return 1;
    }
    return 0;
}
