/* A program's and a parameter store's memory come through the allocator they
 * are given (core/alloc.h hp_allocator; runtime/program hp_program_create_on,
 * runtime/params hp_param_store_create_with): a counting allocator sees the
 * store's buffer and the program's arena, gradients, inputs and scratch, of
 * the sizes the program reports, zeroed; a training step asks it for
 * nothing; everything is handed back; the losses are those of the same
 * program on the host allocator. */
#include <string.h>

#include "fixture.h"
#include "core/alloc.h"
#include "kernels/backend.h"
#include "runtime/program.h"

typedef struct {
    int live, calls;
    size_t bytes, live_bytes;
} counter;

static void *count_alloc(void *ctx, size_t n) {
    counter *c = ctx;
    void *p = hp_alloc_zeroed(n);
    if (p) c->live++, c->calls++, c->bytes += n, c->live_bytes += n;
    return p;
}

static void count_free(void *ctx, void *p, size_t n) {
    counter *c = ctx;
    c->live--, c->live_bytes -= n;
    free(p);
}

static float train_step(hp_program *p, const hp_gpt2_io *io, int B, int T, int V) {
    int32_t *tok = hp_program_data(p, io->tokens), *tgt = hp_program_data(p, io->targets);
    for (int i = 0; i < B * T; i++) tok[i] = (i * 5 + 1) % V, tgt[i] = (i * 3 + 2) % V;
    CHECK_OK(hp_program_run(p, HP_PHASE_FWD));
    CHECK_OK(hp_program_run(p, HP_PHASE_BWD));
    return ((float *)hp_program_data(p, io->loss))[0];
}

int main(void) {
    const int B = 2, T = 6;
    gpt2_fixture f;
    fixture_build(&f, (hp_gpt2_config){.L = 1, .NH = 2, .C = 8, .V = 11, .Vp = 16, .maxT = 8}, B, T, 3);
    hp_pool *pool;
    CHECK_OK(hp_pool_create(&pool, 2));

    counter c = {0};
    hp_allocator counting = {count_alloc, count_free, &c};
    hp_param_store ps;
    CHECK_OK(hp_param_store_create_with(&ps, &counting, f.g, NULL, 0));
    CHECK(c.calls == 1 && c.bytes == ps.total * sizeof(float));
    memcpy(ps.data, f.ps.data, ps.total * sizeof(float));
    CHECK_OK(hp_param_store_add_mirror(&ps));
    CHECK(c.calls == 2 && c.live_bytes == ps.total * (sizeof(float) + sizeof(uint16_t)));

    size_t before = c.bytes;
    hp_program_backend be = {.kern = hp_kbackend_cpu(), .mem = &counting};
    hp_program *p;
    CHECK_OK(hp_program_create_on(&p, &be, f.g, NULL, 0, NULL, &ps, pool, NULL));
    const hp_program_info *info = hp_program_get_info(p);
    CHECK(c.calls == 6); /* gradients, inputs, arena, scratch */
    CHECK(c.bytes - before == info->grad_bytes + info->input_bytes + info->arena_bytes + info->scratch_bytes);
    const char *g = (const char *)hp_program_grads(p);
    for (size_t k = 0; k < info->grad_bytes; k++) CHECK(g[k] == 0);

    int calls = c.calls;
    float l1 = train_step(p, &f.io, B, T, f.c.V);
    float l2 = train_step(p, &f.io, B, T, f.c.V);
    CHECK(c.calls == calls); /* the steady state asks for nothing */

    hp_program *q; /* the same on the host allocator */
    CHECK_OK(hp_program_create(&q, f.g, &f.ps, pool));
    CHECK(train_step(q, &f.io, B, T, f.c.V) == l1);
    CHECK(train_step(q, &f.io, B, T, f.c.V) == l2);
    hp_program_destroy(q);

    hp_program_destroy(p);
    CHECK(c.live == 2); /* the store's data and mirror */
    hp_param_store_free(&ps);
    CHECK(c.live == 0 && c.live_bytes == 0);
    hp_pool_destroy(pool);
    fixture_free(&f);
    return 0;
}
