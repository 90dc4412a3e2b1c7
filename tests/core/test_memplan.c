/* The memory planner: values whose lives overlap never share bytes, values
 * whose lives don't can, and the arena is far below one buffer per value on a
 * chain. Checked on a synthetic chain graph and on random graphs. */
#include "core/memplan.h"
#include "core/opdef.h"
#include "testutil.h"

static hp_status id_infer(const hp_graph *g, const hp_node *n, hp_shape *os, hp_dtype *od) {
    os[0] = g->vals[n->in[0]].shape;
    od[0] = HP_F32;
    return HP_OK;
}
static const hp_opdef op_id = {.name = "id", .nout = 1, .infer = id_infer};

static void check_plan(const hp_graph *g, const hp_memplan *p) {
    /* recompute lives */
    int nv = g->nvals;
    int *first = malloc(sizeof(int) * (size_t)nv), *last = malloc(sizeof(int) * (size_t)nv);
    for (int v = 0; v < nv; v++) first[v] = last[v] = -1;
    for (int i = 0; i < g->nnodes; i++) {
        const hp_node *n = &g->nodes[i];
        for (int k = 0; k < n->nin; k++) {
            if (first[n->in[k]] < 0) first[n->in[k]] = i;
            last[n->in[k]] = i;
        }
        for (int k = 0; k < n->nout; k++) {
            if (first[n->out[k]] < 0) first[n->out[k]] = i;
            if (last[n->out[k]] < i) last[n->out[k]] = i;
        }
    }
    for (int a = 0; a < nv; a++) {
        if (p->offset[a] == HP_MEMPLAN_NONE) continue;
        CHECK(p->offset[a] % HP_MEMPLAN_ALIGN == 0);
        size_t ea = p->offset[a] + (size_t)hp_val_numel(g, a) * 4;
        CHECK(ea <= p->arena_bytes);
        for (int b = a + 1; b < nv; b++) {
            if (p->offset[b] == HP_MEMPLAN_NONE) continue;
            int overlap_time = !(last[a] < first[b] || last[b] < first[a]);
            size_t eb = p->offset[b] + (size_t)hp_val_numel(g, b) * 4;
            int overlap_mem = p->offset[a] < eb && p->offset[b] < ea;
            CHECK(!(overlap_time && overlap_mem));
        }
    }
    free(first), free(last);
}

int main(void) {
    /* A chain x0 -> x1 -> ... -> x20: only two buffers live at a time. */
    hp_graph *g;
    CHECK_OK(hp_graph_create(&g));
    int x = hp_graph_input(g, "x", HP_F32, hp_shape1(1000));
    for (int i = 0; i < 20; i++) x = hp_graph_node(g, NULL, &op_id, &x, 1, NULL);
    int order[64];
    for (int i = 0; i < g->nnodes; i++) order[i] = i;
    hp_memplan p;
    CHECK_OK(hp_memplan_build(&p, g, order, g->nnodes));
    CHECK(p.offset[0] == HP_MEMPLAN_NONE); /* the input is persistent */
    CHECK(p.arena_bytes <= 2 * 4032);
    CHECK(p.naive_bytes == 20 * 4032);
    check_plan(g, &p);
    hp_memplan_free(&p);
    hp_graph_destroy(g);

    /* Random graphs: each node reads one or two earlier values. */
    hp_test_rng r = {12345};
    for (int rep = 0; rep < 30; rep++) {
        CHECK_OK(hp_graph_create(&g));
        int vals[200], nvals = 0;
        vals[nvals++] = hp_graph_input(g, "x", HP_F32, hp_shape1(64));
        for (int i = 0; i < 120; i++) {
            int a = vals[(int)(hp_test_uniform(&r) * nvals)];
            int64_t sz = 1 + (int64_t)(hp_test_uniform(&r) * 5000);
            int v = hp_graph_node(g, NULL, &op_id, &a, 1, NULL);
            g->vals[v].shape = hp_shape1(sz); /* vary sizes */
            vals[nvals++] = v;
        }
        int *ord = malloc(sizeof(int) * (size_t)g->nnodes);
        for (int i = 0; i < g->nnodes; i++) ord[i] = i;
        CHECK_OK(hp_memplan_build(&p, g, ord, g->nnodes));
        check_plan(g, &p);
        CHECK(p.arena_bytes <= p.naive_bytes);
        hp_memplan_free(&p);
        free(ord);
        hp_graph_destroy(g);
    }
    return hp_test_finish("test_memplan");
}
