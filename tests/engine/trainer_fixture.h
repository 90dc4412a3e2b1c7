/* tests/engine/trainer_fixture: a trainer over a fixture's model (the engine
 * tests that train through hp_trainer_step): GPT-2 initialisation from a seed,
 * overlapped schedule, AdamW defaults, clipping at 1. */
#ifndef HP_TEST_TRAINER_FIXTURE_H
#define HP_TEST_TRAINER_FIXTURE_H

#include <string.h>

#include "fixture.h"
#include "runtime/trainer.h"

typedef struct {
    hp_gpt2_config c; /* the model's shape */
    uint64_t seed;
} trainer_init;

static inline hp_status trainer_fixture_init(void *ctx, float *const *ptrs, const char (*names)[HP_NAME_LEN],
                                             const hp_shape *shapes, int n) {
    const trainer_init *ti = ctx;
    return hp_gpt2_init(ptrs, names, shapes, n, &ti->c, ti->seed);
}

/* c for f's model under plan (NULL: one rank) on world (NULL: the one the
 * plan needs) with `threads` threads and `steps` steps; ti (the caller's,
 * alive while the trainer is) is filled with f's shape and seed. */
static inline void trainer_fixture_config(hp_trainer_config *c, trainer_init *ti, const gpt2_fixture *f,
                                          uint64_t seed, const hp_plan *plan, hp_comm_world *world, int threads,
                                          long steps) {
    memset(c, 0, sizeof *c);
    *ti = (trainer_init){f->c, seed};
    c->model = f->g;
    c->tokens = f->io.tokens, c->targets = f->io.targets;
    c->init = trainer_fixture_init, c->init_ctx = ti;
    c->plan = plan;
    c->world = world;
    c->threads = threads;
    c->comm_timeout = 60;
    c->compile.schedule = (hp_schedule_opts){.overlap = 1, .max_inflight = 4};
    hp_optim_config_default(&c->optim);
    c->compile.max_norm = 1.0f;
    c->steps = steps;
}

#endif
