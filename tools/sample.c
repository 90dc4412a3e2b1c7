/* tools/sample: `hyperpar sample` — generates tokens from a checkpoint. A model
 * with V = 256 reads and writes raw bytes (text); otherwise token ids are
 * printed. Each new token runs the forward program over the last T tokens. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "core/rng.h"
#include "io/ckpt.h"
#include "session.h"

typedef struct {
    char ckpt[512], prompt[1024];
    int tokens, threads;
    float temperature;
    uint64_t seed;
} sample_opts;

static int pick(const float *logits, int V, float temp, hp_rng *rng) {
    int best = 0;
    for (int i = 1; i < V; i++)
        if (logits[i] > logits[best]) best = i;
    if (temp <= 0) return best;
    double sum = 0, mx = logits[best];
    for (int i = 0; i < V; i++) sum += exp((logits[i] - mx) / temp);
    double r = hp_rng_uniform(rng) * sum, acc = 0;
    for (int i = 0; i < V; i++) {
        acc += exp((logits[i] - mx) / temp);
        if (acc >= r) return i;
    }
    return V - 1;
}

static hp_status sample(const sample_opts *o) {
    if (!o->ckpt[0]) return hp_errorf("hyperpar sample: --ckpt DIR is required");
    if (o->tokens < 1) return hp_errorf("hyperpar sample: --tokens must be >= 1, got %d", o->tokens);
    char *dir = NULL;
    char probe[1100];
    snprintf(probe, sizeof probe, "%s/%s", o->ckpt, HP_CKPT_STATE);
    FILE *f = fopen(probe, "r");
    if (f) {
        fclose(f);
        dir = strdup(o->ckpt);
    } else {
        HP_TRY(hp_ckpt_get_latest(&dir, o->ckpt));
    }
    hp_ckpt ck;
    hp_status st = hp_ckpt_open(&ck, dir);
    if (st) {
        free(dir);
        return st;
    }
    hp_gpt2_config m;
    hp_session s;
    memset(&s, 0, sizeof s);
    st = hp_ckpt_model_config(&m, &ck, dir);
    int T = m.maxT;
    if (!st) st = hp_session_create(&s, &m, 1, T, o->threads, 0, NULL);
    if (!st) st = hp_session_load(&s, &ck);
    hp_ckpt_close(&ck);
    free(dir);
    if (st) {
        hp_session_destroy(&s);
        return st;
    }
    int32_t *ctx = calloc((size_t)T, sizeof *ctx);
    int n = 0;
    int text = s.model.V == 256;
    if (o->prompt[0] && text) {
        for (const char *p = o->prompt; *p && n < T; p++) ctx[n++] = (unsigned char)*p;
        fputs(o->prompt, stdout);
    } else {
        ctx[n++] = text ? '\n' : 0;
    }
    hp_rng rng;
    hp_rng_seed(&rng, o->seed);
    int32_t *tok = hp_session_tokens(&s);
    for (int i = 0; i < o->tokens; i++) {
        int start = n > T ? n - T : 0, len = n - start;
        memset(tok, 0, sizeof(int32_t) * (size_t)T);
        memcpy(tok, ctx + start, sizeof(int32_t) * (size_t)len);
        hp_status rs = hp_program_run(s.prog, HP_PHASE_FWD);
        if (rs) {
            free(ctx);
            hp_session_destroy(&s);
            return rs;
        }
        const float *logits = (const float *)hp_program_data(s.prog, s.io.logits) + (size_t)(len - 1) * s.model.Vp;
        int next = pick(logits, s.model.V, o->temperature, &rng);
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
    free(ctx);
    hp_session_destroy(&s);
    return HP_OK;
}

int hp_cmd_sample(int argc, char **argv) {
    sample_opts o = {.tokens = 200, .threads = 2, .temperature = 0.8f, .seed = 42};
    hp_opt tab[] = {
        {"ckpt", OPT_STR, o.ckpt, sizeof o.ckpt, "checkpoint directory (or a run directory with 'latest')"},
        {"prompt", OPT_STR, o.prompt, sizeof o.prompt, "text to continue (byte-level models)"},
        {"tokens", OPT_INT, &o.tokens, 0, "tokens to generate"},
        {"temperature", OPT_FLOAT, &o.temperature, 0, "sampling temperature (0 = greedy)"},
        {"seed", OPT_U64, &o.seed, 0, "sampling seed"},
        {"threads", OPT_INT, &o.threads, 0, "compute threads"},
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
