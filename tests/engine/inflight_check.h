/* tests/engine/inflight_check: between a reduction's start and its wait (in
 * the schedule's order) no step writes into the bytes of the reduction's
 * source or destination: the arena keeps in-flight buffers apart. Shared by
 * test_compile and test_reduce_dtype. */
#ifndef HP_TESTS_INFLIGHT_CHECK_H
#define HP_TESTS_INFLIGHT_CHECK_H

#include "parallel/compile.h"
#include "runtime/program.h"
#include "testutil.h"

static inline void check_inflight_apart(const hp_compiled *c, hp_program *p) {
    const hp_graph *g = c->rg.g;
    for (int a = 0; a < c->sched.n; a++) {
        const hp_node *st = &g->nodes[c->sched.order[a]];
        if (st->op != &hp_op_redistribute_start) continue;
        int bufs[2] = {st->in[0], st->out[0]};
        for (int b = a + 1; b < c->sched.n; b++) {
            const hp_node *n = &g->nodes[c->sched.order[b]];
            if (n->op == &hp_op_redistribute_wait && n->in[0] == st->out[0]) break;
            for (int o = 0; o < n->nout; o++) {
                if (n->out[o] < 0) continue;
                char *w0 = hp_program_data(p, n->out[o]);
                char *w1 = w0 + (size_t)hp_val_numel(g, n->out[o]) * hp_dtype_size(g->vals[n->out[o]].dtype);
                for (int q = 0; q < 2; q++) {
                    char *b0 = hp_program_data(p, bufs[q]);
                    char *b1 = b0 + (size_t)hp_val_numel(g, bufs[q]) * hp_dtype_size(g->vals[bufs[q]].dtype);
                    CHECK(w1 <= b0 || b1 <= w0);
                }
            }
        }
    }
}

#endif
