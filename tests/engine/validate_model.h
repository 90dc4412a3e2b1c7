/* tests/engine/validate_model: the small GPT-2 the validation tests run (L=2,
 * NH=4, C=32, V=200 padded to 256), differentiated, GPT-2-initialised from a
 * fixed seed, with one random batch of B x T tokens and targets. */
#ifndef HP_TESTS_VALIDATE_MODEL_H
#define HP_TESTS_VALIDATE_MODEL_H

#include <stdlib.h>

#include "core/autodiff.h"
#include "core/rng.h"
#include "models/gpt2.h"
#include "ops/ops.h"
#include "runtime/dist.h"
#include "runtime/params.h"
#include "runtime/program.h"
#include "runtime/validate.h"
#include "testutil.h"

typedef struct {
    hp_graph *g;
    hp_gpt2_io io;
    hp_param_store ps;
    int32_t *tokens, *targets; /* [B * T] */
} model;

/* differentiate 0: the forward graph (for bf16 programs: the precision pass takes it) */
static inline void model_build_graph(model *m, int B, int T, int differentiate) {
    hp_gpt2_config c = {.L = 2, .NH = 4, .C = 32, .V = 200, .Vp = 256, .maxT = 16};
    CHECK_OK(hp_graph_create(&m->g));
    CHECK_OK(hp_gpt2_build(m->g, &m->io, &c, B, T));
    if (differentiate) CHECK_OK(hp_autodiff(m->g, m->io.loss, &hp_op_add));
    CHECK_OK(hp_param_store_create(&m->ps, m->g));
    float *ptrs[64];
    for (int i = 0; i < m->ps.n; i++) ptrs[i] = hp_param_ptr(&m->ps, i);
    CHECK_OK(hp_gpt2_init(ptrs, (const char(*)[HP_NAME_LEN])m->ps.name, m->ps.shape, m->ps.n, &c, 11));
    m->tokens = malloc(sizeof(int32_t) * (size_t)(B * T));
    m->targets = malloc(sizeof(int32_t) * (size_t)(B * T));
    hp_rng rng;
    hp_rng_seed(&rng, 5);
    for (int i = 0; i < B * T; i++) {
        m->tokens[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)c.V);
        m->targets[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)c.V);
    }
}

static inline void model_build(model *m, int B, int T) { model_build_graph(m, B, T, 1); }

/* The model's parameters, tokens and targets into every rank of d. */
static inline void model_scatter(hp_dist *d, const model *m) {
    CHECK_OK(hp_dist_scatter_params(d, &m->ps));
    for (int i = 0; i < hp_dist_nranks(d); i++) {
        hp_dist_rank *r = hp_dist_rank_at(d, i);
        hp_dist_scatter_value(d, r, m->io.tokens, hp_program_data(r->prog, r->c.rg.map[m->io.tokens]), m->tokens);
        hp_dist_scatter_value(d, r, m->io.targets, hp_program_data(r->prog, r->c.rg.map[m->io.targets]), m->targets);
    }
}

/* One validated step of d against its global graph, then the gradient check:
 * clean, every parameter's gradient within 1e-5 of the reference's and some
 * differing (another summation order). *rep is the caller's to free; returns
 * 1 when the step ran. */
static inline int model_validate_clean(hp_dist *d, const model *m, hp_validate_report *rep) {
    hp_validator *v = NULL;
    hp_validate_config vc = {.g = hp_dist_global(d), .d = d};
    CHECK_OK(hp_validate_create(&v, &vc));
    if (!v) return 0;
    CHECK_OK(hp_validate_step(v, rep));
    CHECK_OK(hp_validate_gradients(v, rep));
    CHECK(rep->ngrads == m->ps.n && rep->worst <= 1e-5 && rep->worst > 0);
    hp_validate_destroy(v);
    return 1;
}

static inline void model_free(model *m) {
    free(m->tokens), free(m->targets);
    hp_param_store_free(&m->ps);
    hp_graph_destroy(m->g);
}

#endif
