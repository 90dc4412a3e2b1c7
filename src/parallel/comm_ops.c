/* parallel/comm_ops: the operators that communicate inside per-rank programs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/rank.h"
#include "parallel/redistribute.h"

int hp_rank_ctx_add_plan(hp_rank_ctx *c, const hp_redist *plan) {
    if (c->nplans == c->capplans) {
        int cap = c->capplans ? 2 * c->capplans : 16;
        hp_redist *p = realloc(c->plans, sizeof *p * (size_t)cap);
        if (!p) return -1;
        c->plans = p;
        c->capplans = cap;
    }
    c->plans[c->nplans] = *plan;
    return c->nplans++;
}

hp_status hp_rank_ctx_alloc(hp_rank_ctx *c) {
    size_t need = 0;
    for (int i = 0; i < c->nplans; i++) {
        size_t s = hp_redistribute_scratch(&c->plans[i], c->mesh);
        if (s > need) need = s;
    }
    free(c->scratch);
    c->scratch = malloc(sizeof(float) * (need ? need : 1));
    if (!c->scratch) return hp_errorf("rank %d: cannot allocate %zu MB of redistribution scratch", c->rank, need * 4 >> 20);
    memset(c->scratch, 0, sizeof(float) * (need ? need : 1));
    c->scratch_floats = need;
    return HP_OK;
}

void hp_rank_ctx_free(hp_rank_ctx *c) {
    free(c->plans);
    free(c->scratch);
    c->plans = NULL;
    c->scratch = NULL;
    c->nplans = c->capplans = 0;
}

static void redistribute_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    hp_rank_ctx *c = k->rank;
    const hp_redist *plan = &c->plans[n->a.i[0]];
    hp_status st = hp_redistribute(c->comm, c->mc, plan, (float *)out[0].data, (const float *)in[0].data, c->scratch,
                                   c->rank);
    if (st) *k->err = st;
}

static double redistribute_bytes(const hp_graph *g, const hp_node *n) {
    (void)g;
    return (double)n->a.f[0];
}

const hp_opdef hp_op_redistribute = {.name = "redistribute", .nout = 1, .communicates = 1, .run = redistribute_run,
                                     .bytes = redistribute_bytes};

static void all_gather_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    hp_rank_ctx *c = k->rank;
    hp_comm_group *grp = hp_mesh_comm_group(c->mc, (int)n->a.i[0], c->rank);
    hp_status st = hp_comm_all_gather(c->comm, grp, out[0].data, in[0].data, hp_shape_numel(&in[0].shape), NULL, HP_F32);
    if (st) *k->err = st;
}

static double all_gather_bytes(const hp_graph *g, const hp_node *n) {
    return 4.0 * (double)hp_val_numel(g, n->out[0]);
}

const hp_opdef hp_op_mesh_all_gather = {.name = "all_gather", .nout = 1, .communicates = 1, .run = all_gather_run,
                                        .bytes = all_gather_bytes};
