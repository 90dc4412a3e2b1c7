/* api/infer_engine: the single-process GPT-2 program of api/infer.h. */
#include <stdlib.h>
#include <string.h>

#include "api/infer.h"
#include "kernels/kernels.h"

hp_status hp_api_engine_create(hp_api_engine *e, const hp_gpt2_config *model, int B, int T, int threads, int train,
                               const hp_optim_config *oc, hp_dtype dtype) {
    memset(e, 0, sizeof *e);
    e->model = *model;
    e->B = B;
    e->T = T;
    HP_TRY(hp_gpt2_config_check(&e->model));
    hp_kernels_init();
    HP_TRY(hp_graph_create(&e->g));
    hp_status st = hp_gpt2_build(e->g, &e->io, &e->model, B, T);
    if (!st && !train) e->g->vals[e->io.logits].persistent = 1; /* read after the forward */
    hp_compile_opts co = {.train = train, .optim = train ? oc : NULL, .max_norm = 1.0f, .dtype = dtype};
    if (!st) st = hp_compile(&e->c, e->g, NULL, 0, &co);
    if (!st) st = hp_param_store_create(&e->ps, e->c.rg.g);
    if (!st) st = hp_pool_create(&e->pool, threads);
    if (!st)
        st = hp_program_create_ordered(&e->prog, e->c.rg.g, e->c.sched.order, e->c.sched.n, &e->c.mem, &e->ps, e->pool,
                                       &e->c.rg.ctx);
    if (st) hp_api_engine_destroy(e);
    return st;
}

void hp_api_engine_destroy(hp_api_engine *e) {
    hp_program_destroy(e->prog);
    hp_pool_destroy(e->pool);
    hp_param_store_free(&e->ps);
    hp_compiled_free(&e->c);
    hp_graph_destroy(e->g);
    memset(e, 0, sizeof *e);
}

hp_status hp_api_init_params(hp_param_store *ps, const hp_gpt2_config *model, uint64_t seed) {
    float **ptrs = malloc(sizeof(float *) * (size_t)(ps->n ? ps->n : 1));
    if (!ptrs) return hp_errorf("GPT-2 initialisation: out of memory");
    for (int i = 0; i < ps->n; i++) ptrs[i] = hp_param_ptr(ps, i);
    hp_status st = hp_gpt2_init(ptrs, (const char(*)[HP_NAME_LEN])ps->name, ps->shape, ps->n, model, seed);
    free(ptrs);
    return st;
}

hp_status hp_api_engine_load(hp_api_engine *e, const hp_ckpt *ck) {
    for (int i = 0; i < e->ps.n; i++)
        HP_TRY(hp_ckpt_read(ck, HP_CKPT_GROUP_MODEL, e->ps.name[i], HP_F32, &e->ps.shape[i], hp_param_ptr(&e->ps, i)));
    return HP_OK;
}
