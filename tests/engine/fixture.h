/* tests/engine/fixture: a small GPT-2 built with global shapes, differentiated,
 * with its parameter store (optionally GPT-2-initialised) — the common start of
 * the engine tests. */
#ifndef HP_TEST_FIXTURE_H
#define HP_TEST_FIXTURE_H

#include "core/autodiff.h"
#include "kernels/kernels.h"
#include "models/gpt2.h"
#include "ops/ops.h"
#include "runtime/params.h"
#include "testutil.h"

typedef struct {
    hp_gpt2_config c;
    hp_graph *g;
    hp_gpt2_io io;
    hp_param_store ps;
} gpt2_fixture;

/* seed >= 0: GPT-2 initialisation from that seed; < 0: parameters left zero. */
static inline void fixture_build(gpt2_fixture *f, hp_gpt2_config c, int B, int T, long seed) {
    hp_kernels_init();
    f->c = c;
    CHECK_OK(hp_gpt2_config_check(&f->c));
    CHECK_OK(hp_graph_create(&f->g));
    CHECK_OK(hp_gpt2_build(f->g, &f->io, &f->c, B, T));
    CHECK_OK(hp_autodiff(f->g, f->io.loss, &hp_op_add));
    CHECK_OK(hp_param_store_create(&f->ps, f->g));
    if (seed < 0) return;
    float *ptrs[256];
    for (int i = 0; i < f->ps.n && i < 256; i++) ptrs[i] = hp_param_ptr(&f->ps, i);
    CHECK_OK(hp_gpt2_init(ptrs, (const char(*)[HP_NAME_LEN])f->ps.name, f->ps.shape, f->ps.n, &f->c,
                          (uint64_t)seed));
}

static inline void fixture_free(gpt2_fixture *f) {
    hp_param_store_free(&f->ps);
    hp_graph_destroy(f->g);
}

#endif
