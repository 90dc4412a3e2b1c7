/* api/infer: hp_infer, the forward over a token window with a checkpoint's
 * weights (api/infer.h's engine), and hp_sampler (core/rng). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/ckpt_state.h"
#include "api/infer.h"
#include "core/rng.h"

struct hp_infer {
    hp_api_engine e;
};

hp_status hp_infer_create(hp_infer **out, const char *ckpt, int T, int threads) {
    *out = NULL;
    if (!ckpt || !ckpt[0]) return hp_errorf("hp_infer_create: no checkpoint directory given");
    if (threads < 1 || threads > 256) return hp_errorf("hp_infer_create: threads must be in 1..256, got %d", threads);
    char *dir = NULL;
    hp_ckpt ck;
    HP_TRY(hp_api_ckpt_open(&ck, &dir, ckpt, 0));
    hp_gpt2_config m;
    hp_infer *inf = calloc(1, sizeof *inf);
    hp_status st = hp_api_ckpt_gpt2(&ck, dir, "inference");
    if (!st) st = inf ? hp_ckpt_model_config(&m, &ck, dir) : hp_errorf("hp_infer_create: out of memory");
    if (!st && T == 0) T = m.maxT;
    if (!st && (T < 1 || T > m.maxT))
        st = hp_errorf("hp_infer_create: T must be in 1..%d (the model's max_seq), got %d", m.maxT, T);
    if (!st) st = hp_api_engine_create(&inf->e, &m, 1, T, threads, 0, NULL, HP_F32);
    if (!st) st = hp_api_engine_load(&inf->e, &ck);
    if (!st) st = hp_api_params_finite(&inf->e.ps, dir); /* a NaN weight would sample garbage silently */
    hp_ckpt_close(&ck);
    free(dir);
    if (st) {
        hp_infer_free(inf);
        return st;
    }
    *out = inf;
    return HP_OK;
}

void hp_infer_free(hp_infer *inf) {
    if (!inf) return;
    hp_api_engine_destroy(&inf->e);
    free(inf);
}

int hp_infer_vocab(const hp_infer *inf) { return inf->e.model.V; }
int hp_infer_padded_vocab(const hp_infer *inf) { return inf->e.model.Vp; }
int hp_infer_seq(const hp_infer *inf) { return inf->e.T; }

hp_status hp_infer_logits(hp_infer *inf, const float **logits, const int32_t *tokens, int n, int pos) {
    *logits = NULL;
    int T = inf->e.T, V = inf->e.model.V;
    if (n < 1 || n > T) return hp_errorf("hp_infer_logits: n must be in 1..%d, got %d", T, n);
    if (pos < 0 || pos >= n) return hp_errorf("hp_infer_logits: pos must be in 0..%d, got %d", n - 1, pos);
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= V)
            return hp_errorf("hp_infer_logits: token %d at %d is not in 0..%d", tokens[i], i, V - 1);
    int32_t *tok = hp_program_data(inf->e.prog, inf->e.io.tokens);
    memset(tok, 0, sizeof(int32_t) * (size_t)T);
    memcpy(tok, tokens, sizeof(int32_t) * (size_t)n);
    HP_TRY(hp_program_run(inf->e.prog, HP_PHASE_FWD));
    *logits = (const float *)hp_program_data(inf->e.prog, inf->e.io.logits) + (size_t)pos * (size_t)inf->e.model.Vp;
    return HP_OK;
}

void hp_sampler_seed(hp_sampler *r, uint64_t seed) {
    hp_rng g;
    hp_rng_seed(&g, seed);
    memcpy(r->s, g.s, sizeof r->s);
}

int hp_sampler_pick(hp_sampler *r, const float *logits, int V, float temperature) {
    int best = 0;
    for (int i = 1; i < V; i++)
        if (logits[i] > logits[best]) best = i;
    if (temperature <= 0) return best;
    double sum = 0, mx = logits[best];
    for (int i = 0; i < V; i++) sum += exp((logits[i] - mx) / temperature);
    hp_rng g;
    memcpy(g.s, r->s, sizeof g.s);
    double u = hp_rng_uniform(&g) * sum, acc = 0;
    memcpy(r->s, g.s, sizeof r->s);
    for (int i = 0; i < V; i++) {
        acc += exp((logits[i] - mx) / temperature);
        if (acc >= u) return i;
    }
    return V - 1;
}
