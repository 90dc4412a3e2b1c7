#include "session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/ckpt.h"
#include "io/llmc.h"
#include "kernels/kernels.h"
#include "ops/ops.h"

hp_status hp_session_create(hp_session *s, const hp_gpt2_config *model, int B, int T, int threads, int train,
                            const hp_optim_config *oc) {
    memset(s, 0, sizeof *s);
    s->model = *model;
    s->B = B;
    s->T = T;
    HP_TRY(hp_gpt2_config_check(&s->model));
    hp_kernels_init();
    HP_TRY(hp_graph_create(&s->g));
    hp_status st = hp_gpt2_build(s->g, &s->io, &s->model, B, T);
    if (!st && !train) s->g->vals[s->io.logits].persistent = 1; /* read after forward */
    hp_compile_opts co = {.train = train, .optim = train ? oc : NULL, .max_norm = 1.0f};
    if (!st) st = hp_compile(&s->c, s->g, NULL, 0, &co);
    if (!st) st = hp_param_store_create(&s->ps, s->c.rg.g);
    if (!st) st = hp_pool_create(&s->pool, threads);
    if (!st)
        st = hp_program_create_ordered(&s->prog, s->c.rg.g, s->c.sched.order, s->c.sched.n, &s->c.mem, &s->ps, s->pool,
                                       &s->c.rg.ctx);
    if (st) hp_session_destroy(s);
    return st;
}

void hp_session_destroy(hp_session *s) {
    hp_program_destroy(s->prog);
    hp_pool_destroy(s->pool);
    hp_param_store_free(&s->ps);
    hp_compiled_free(&s->c);
    hp_graph_destroy(s->g);
    memset(s, 0, sizeof *s);
}

void hp_session_set_step(hp_session *s, const hp_optim_config *oc, float lr, long step) {
    if (!s->c.has_optim) return;
    hp_optim_phase_lrs(hp_program_data(s->prog, s->c.optim.lr), oc, lr);
    *(int32_t *)hp_program_data(s->prog, s->c.optim.step) = (int32_t)(step + 1);
}

static void param_ptrs(const hp_session *s, float **ptrs) {
    for (int i = 0; i < s->ps.n; i++) ptrs[i] = hp_param_ptr(&s->ps, i);
}

hp_status hp_session_init_params(hp_session *s, uint64_t seed) {
    float **ptrs = malloc(sizeof(float *) * (size_t)s->ps.n);
    if (!ptrs) return hp_errorf("session: out of memory");
    param_ptrs(s, ptrs);
    hp_status st = hp_gpt2_init(ptrs, (const char(*)[HP_NAME_LEN])s->ps.name, s->ps.shape, s->ps.n, &s->model, seed);
    free(ptrs);
    return st;
}

float hp_session_loss(const hp_session *s) { return ((float *)hp_program_data(s->prog, s->io.loss))[0]; }
int32_t *hp_session_tokens(const hp_session *s) { return hp_program_data(s->prog, s->io.tokens); }
int32_t *hp_session_targets(const hp_session *s) { return hp_program_data(s->prog, s->io.targets); }

hp_status hp_session_load(hp_session *s, const hp_ckpt *ck) {
    for (int i = 0; i < s->ps.n; i++)
        HP_TRY(hp_safetensors_read_into(ck->model, s->ps.name[i], HP_F32, &s->ps.shape[i], hp_param_ptr(&s->ps, i)));
    return HP_OK;
}

static hp_llmc_header header_of(const hp_gpt2_config *c) {
    return (hp_llmc_header){c->maxT, c->V, c->L, c->NH, c->C, c->Vp};
}

hp_status hp_session_import_llmc(hp_session *s, const char *path) {
    hp_llmc_header h;
    float *flat = NULL;
    HP_TRY(hp_llmc_read(&h, &flat, path));
    hp_llmc_header want = header_of(&s->model);
    if (memcmp(&h, &want, sizeof h) != 0) {
        free(flat);
        return hp_errorf("%s: model shape (L=%d NH=%d C=%d V=%d Vp=%d maxT=%d) differs from the run's", path, h.L,
                         h.NH, h.C, h.V, h.Vp, h.maxT);
    }
    float **ptrs = malloc(sizeof(float *) * (size_t)s->ps.n);
    hp_status st = ptrs ? HP_OK : hp_errorf("%s: out of memory", path);
    if (!st) {
        param_ptrs(s, ptrs);
        st = hp_gpt2_llmc_copy(flat, ptrs, (const char(*)[HP_NAME_LEN])s->ps.name, s->ps.shape, s->ps.n, &s->model, 0);
    }
    free(ptrs);
    free(flat);
    return st;
}

hp_status hp_session_export_llmc(const hp_session *s, const char *path) {
    hp_llmc_header h = header_of(&s->model);
    size_t n = hp_gpt2_num_params(&s->model);
    float *flat = malloc(n * sizeof(float));
    float **ptrs = malloc(sizeof(float *) * (size_t)s->ps.n);
    hp_status st = (flat && ptrs) ? HP_OK : hp_errorf("%s: out of memory", path);
    if (!st) {
        param_ptrs(s, ptrs);
        st = hp_gpt2_llmc_copy(flat, ptrs, (const char(*)[HP_NAME_LEN])s->ps.name, s->ps.shape, s->ps.n, &s->model, 1);
    }
    if (!st) st = hp_llmc_write(path, &h, flat);
    free(ptrs);
    free(flat);
    return st;
}
