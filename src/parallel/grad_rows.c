/* parallel/grad_rows: the rows pass (see the header). */
#include "parallel/grad_rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "ops/ops_util.h"
#include "parallel/rank.h"

/* The graph's error as one of the caller's own (the graph keeps and frees its own). */
static hp_status gstatus(const hp_graph *g) {
    hp_status e = hp_graph_status(g);
    return e ? hp_errorf("rows: %s", hp_status_msg(e)) : HP_OK;
}

/* ---- the split, on the global graph ---- */

static int sharded_on(const hp_layout *l, const hp_mesh *m, hp_pl_kind kind) {
    for (int a = 0; a < l->ndim; a++)
        if (m->size[a] > 1 && l->p[a].kind == kind) return 1;
    return 0;
}

hp_status hp_pass_rows_split(int *nsplit, hp_graph *g, hp_propagation *prop, const hp_mesh *m, int deterministic) {
    *nsplit = 0;
    for (int i = 0; i < g->nnodes; i++) {
        hp_node *n = &g->nodes[i];
        int rows, ids, sofar;
        if (n->phase != HP_PHASE_BWD || !n->op->grad_rows || n->nout != 1 || n->out[0] < 0 ||
            !n->op->grad_rows(n, &rows, &ids, &sofar) || sofar < 0)
            continue;
        int out = n->out[0], p = g->vals[out].grad_of;
        if (p < 0 || g->vals[p].kind != HP_V_PARAM || g->vals[p].grad != out || g->vals[p].shape.ndim != 2 ||
            g->vals[sofar].dtype != HP_F32 || g->vals[ids].dtype != HP_I32)
            continue;
        int k[3] = {-1, -1, -1};
        for (int q = 0; q < n->nin; q++) {
            if (n->in[q] == rows) k[0] = q;
            if (n->in[q] == ids) k[1] = q;
            if (n->in[q] == sofar) k[2] = q;
        }
        if (k[0] < 0 || k[1] < 0 || k[2] < 0) continue;
        const hp_layout *need = prop->need[i];
        if (sharded_on(&prop->val[p], m, HP_SHARD) || sharded_on(&need[k[0]], m, HP_PARTIAL) ||
            sharded_on(&need[k[1]], m, HP_PARTIAL))
            continue;
        if (!deterministic && !sharded_on(&need[k[1]], m, HP_SHARD)) continue; /* no sum over ranks: nothing to gain */
        hp_layout nl[3] = {need[k[0]], need[k[1]], need[k[2]]};
        char nm[HP_NAME_LEN];
        memcpy(nm, g->vals[out].name, HP_NAME_LEN);
        snprintf(g->vals[out].name, HP_NAME_LEN, "%.80s.whole", nm); /* no longer produced */
        memcpy(g->vals[sofar].name, nm, HP_NAME_LEN);
        g->vals[out].grad_of = -1, g->vals[out].persistent = 0;
        g->vals[sofar].grad_of = p, g->vals[sofar].persistent = 1;
        g->vals[p].grad = sofar;
        n->op = &hp_op_grad_rows;
        n->in[0] = rows, n->in[1] = ids, n->in[2] = sofar, n->nin = 3;
        n->out[0] = -1, n->nout = 0;
        memset(&n->a, 0, sizeof n->a);
        n->a.i[0] = p;
        for (int q = 0; q < HP_MAX_IN; q++) prop->need[i][q] = q < 3 ? nl[q] : hp_layout_replicated(m);
        (*nsplit)++;
    }
    return gstatus(g);
}

/* ---- the rows, on the rank's graph ---- */

/* The micro-batch input in[at] when there is one (has): *m its index; 1 at
 * the last micro-batch (or without the input). */
static int micro_of(const hp_tensor *in, int has, int at, int *m) {
    *m = 0;
    if (!has) return 1;
    const int32_t *mb = in[at].data;
    *m = mb[0];
    return mb[0] == mb[1] - 1;
}

static void keep_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)out, (void)k;
    int m;
    micro_of(in, (int)n->a.i[0], 2, &m);
    size_t rb = (size_t)hp_shape_numel(&in[0].shape) * hp_dtype_size(in[0].dtype);
    size_t ib = (size_t)hp_shape_numel(&in[1].shape) * sizeof(int32_t);
    memcpy((char *)in[n->nin].data + rb * (size_t)m, in[0].data, rb);
    memcpy((char *)in[n->nin + 1].data + ib * (size_t)m, in[1].data, ib);
}

const hp_opdef hp_op_grad_rows_keep = {.name = "grad_rows_keep", .run = keep_run, .bytes = hp_ops_io_bytes};

static void gather_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    int m;
    if (!micro_of(in, (int)n->a.i[1], 1, &m)) return;
    hp_rank_ctx *c = k->rank;
    hp_comm_group *grp = hp_mesh_comm_group(c->mc, (int)n->a.i[0], c->rank);
    /* ids move as 4-byte words (a gather copies, it sums nothing) */
    hp_dtype dt = in[0].dtype == HP_I32 ? HP_F32 : in[0].dtype;
    hp_status st = hp_comm_all_gather(c->comm, grp, out[0].data, in[0].data, hp_shape_numel(&in[0].shape), NULL, dt);
    if (st) *k->err = st;
}

static double gather_bytes(const hp_graph *g, const hp_node *n) {
    return (double)hp_dtype_size(g->vals[n->out[0]].dtype) * (double)hp_val_numel(g, n->out[0]);
}

static void gather_describe(hp_coll_desc *d, const hp_graph *g, const hp_node *n) {
    *d = (hp_coll_desc){.kind = HP_COLL_ALL_GATHER, .role = HP_COLL_BLOCKING, .group = HP_COLL_GROUP_AXIS,
                        .axis = (int)n->a.i[0], .plan = -1, .unit = -1, .peer = -1, .pair = HP_COLL_PAIR_NONE,
                        .pair_key = -1, .bytes = gather_bytes(g, n), .purpose = "a gradient's rows"};
}

const hp_opdef hp_op_grad_rows_gather = {.name = "grad_rows_gather", .nout = 1, .communicates = 1,
                                         .run = gather_run, .bytes = gather_bytes, .describe = gather_describe};

/* The rows into the target, in the order micro-batch, rank, position; a row
 * index outside the table (which the forward's lookup would have refused)
 * adds nothing. */
static void apply_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)out, (void)k;
    int m;
    if (!micro_of(in, (int)n->a.i[0], 2, &m)) return;
    int64_t pa = n->a.i[1], pb = n->a.i[2], off = n->a.i[3], rows = n->a.i[5], N = n->a.i[6];
    int KK = (int)n->a.i[4];
    const hp_tensor *rec = &in[0];
    const int32_t *rid = in[1].data;
    float *dst = (float *)in[n->nin].data + off - pa;
    int64_t C = rec->shape.d[rec->shape.ndim - 1];
    int64_t R = hp_shape_numel(&in[1].shape) / ((int64_t)KK * N);
    float s = KK > 1 ? 1.0f / (float)KK : 1.0f;
    int b16 = rec->dtype == HP_BF16;
    for (int mm = 0; mm < KK; mm++)
        for (int64_t r = 0; r < R; r++)
            for (int64_t t = 0; t < N; t++) {
                int64_t idx = (r * KK + mm) * N + t, row = rid[idx];
                if (row < 0 || row >= rows) continue;
                int64_t e0 = row * C, a = e0 > pa ? e0 : pa, b = e0 + C < pb ? e0 + C : pb;
                if (b16) {
                    const uint16_t *x = (const uint16_t *)rec->data + idx * C - e0;
                    for (int64_t e = a; e < b; e++) dst[e] += s * hp_bf16_to_f32(x[e]);
                } else {
                    const float *x = (const float *)rec->data + idx * C - e0;
                    for (int64_t e = a; e < b; e++) dst[e] += s * x[e];
                }
            }
}

static double apply_flops(const hp_graph *g, const hp_node *n) { return 2.0 * (double)hp_val_numel(g, n->in[0]); }

const hp_opdef hp_op_grad_rows_apply = {.name = "grad_rows_apply", .run = apply_run, .flops = apply_flops,
                                        .bytes = hp_ops_io_bytes};

static int persistent(hp_graph *g, hp_dtype dt, hp_shape s, const char *name) {
    int v = hp_graph_value(g, HP_V_ACT, dt, s, name);
    if (v >= 0) g->vals[v].persistent = 1, g->vals[v].no_grad = 1;
    return v;
}

static int named_node(hp_rank_graph *rg, const hp_opdef *op, const int *in, int nin, const int *xin, int nx,
                      const int *out, int nout, const hp_attrs *a, const char *name, const char *what) {
    int node = hp_graph_node_list(rg->g, op, in, nin, xin, nx, out, nout, a, HP_PHASE_BWD);
    if (node >= 0) snprintf(rg->g->nodes[node].name, HP_NAME_LEN, "%.70s.%s", name, what);
    return node;
}

/* The target of parameter p's rows (local value, index k among the
 * parameters, n elements): *tv and the parameter's flat elements [*pa, *pb)
 * it holds from element *off on; 0 when the rank holds none. */
static int target_of(int *tv, int64_t *pa, int64_t *pb, int64_t *off, const hp_rank_graph *rg,
                     const hp_fsdp_plan *f, int p, int k, int64_t n) {
    const hp_graph *g = rg->g;
    if (!f || !f->level || k >= f->nparams || f->unit_of[k] < 0) {
        *tv = g->vals[p].grad, *pa = 0, *pb = n, *off = 0;
        return *tv >= 0;
    }
    const hp_fsdp_unit *un = &f->units[f->unit_of[k]];
    if (!hp_fsdp_shard_part(pa, pb, f, k, n)) return 0;
    *tv = un->grad_acc >= 0 ? un->grad_acc : un->grad_shard;
    *off = (int64_t)(f->offset[k] - un->offset) + *pa - (int64_t)un->shard * f->me; /* in the rank's shard */
    return 1;
}

/* One split parameter's keep, gathers and apply after local node i. */
static hp_status split_rows(hp_rank_graph *rg, int i, const hp_graph *global, const hp_propagation *prop,
                         const hp_mesh *m, const hp_fsdp_plan *f, int micro, int K, const int *ids, int np) {
    hp_graph *g = rg->g;
    int gi = rg->node_of[i], pg = gi >= 0 ? (int)global->nodes[gi].a.i[0] : -1;
    if (pg < 0) return hp_errorf("rows: node '%s' stands for no global node", g->nodes[i].name);
    /* the local node stands for no global one any more: validation's reference then adds the rows (runs
     * global grad_rows) only at the end of the backward, after the reductions were checked against the dense
     * part, as the rank adds them (grad_rows_apply) */
    rg->node_of[i] = -1;
    int p = rg->map[pg], k = 0;
    while (k < np && ids[k] != p) k++;
    if (k == np) return hp_errorf("rows: '%s' is not a parameter of the rank's graph", global->vals[pg].name);
    int rows = g->nodes[i].in[0], idv = g->nodes[i].in[1], gid = global->nodes[gi].in[1];
    int64_t N = hp_val_numel(g, idv), C = g->vals[rows].shape.d[g->vals[rows].shape.ndim - 1];
    char pn[HP_NAME_LEN]; /* a copy: adding values may move g->vals */
    memcpy(pn, g->vals[p].name, HP_NAME_LEN);
    char nm[HP_NAME_LEN];
    snprintf(nm, sizeof nm, "%.80s.rows", pn);
    int rec = persistent(g, g->vals[rows].dtype, (hp_shape){2, {(int64_t)K * N, C}}, nm);
    snprintf(nm, sizeof nm, "%.80s.rows_ids", pn);
    int rid = persistent(g, HP_I32, (hp_shape){1, {(int64_t)K * N}}, nm);
    HP_TRY(gstatus(g));
    hp_attrs a;
    memset(&a, 0, sizeof a);
    a.i[0] = micro >= 0;
    int kin[3] = {rows, idv, micro}, kx[2] = {rec, rid};
    int keep = named_node(rg, &hp_op_grad_rows_keep, kin, micro >= 0 ? 3 : 2, kx, 2, NULL, 0, &a, pn, "rows_keep");
    HP_TRY(gstatus(g));
    HP_TRY(hp_rank_graph_sync_nodes(rg));
    rg->hint[keep] = HP_HINT_AFTER(i);
    /* the gathers, one axis after the other: the members' records one after the other (rank r's micro-batch
     * m's position t at (r K + m) N + t, r counting the first gathered axis fastest) */
    const hp_layout *il = &prop->val[gid];
    for (int ax = 0; ax < m->ndim; ax++) {
        if (m->size[ax] <= 1 || il->p[ax].kind != HP_SHARD) continue;
        int *x[2] = {&rec, &rid};
        for (int q = 0; q < 2; q++) {
            const hp_value *v = &g->vals[*x[q]];
            hp_shape s = v->shape;
            s.d[0] *= m->size[ax];
            snprintf(nm, sizeof nm, "%.70s.all_%s", v->name, m->name[ax]);
            int o = hp_graph_value(g, HP_V_ACT, v->dtype, s, nm);
            if (o < 0) return gstatus(g);
            g->vals[o].no_grad = 1;
            hp_attrs ga;
            memset(&ga, 0, sizeof ga);
            ga.i[0] = ax, ga.i[1] = micro >= 0;
            int gin[2] = {*x[q], micro};
            int gn = named_node(rg, &hp_op_grad_rows_gather, gin, micro >= 0 ? 2 : 1, NULL, 0, &o, 1, &ga, pn,
                                q ? "rows_ids_gather" : "rows_gather");
            HP_TRY(gstatus(g));
            HP_TRY(hp_rank_graph_sync_nodes(rg));
            rg->hint[gn] = HP_HINT_END;
            *x[q] = o;
        }
    }
    int tv;
    int64_t pa, pb, off;
    if (!target_of(&tv, &pa, &pb, &off, rg, f, p, k, hp_val_numel(g, p))) return HP_OK; /* gathers only */
    memset(&a, 0, sizeof a);
    a.i[0] = micro >= 0, a.i[1] = pa, a.i[2] = pb, a.i[3] = off, a.i[4] = K;
    a.i[5] = global->vals[pg].shape.d[0], a.i[6] = N;
    int ain[3] = {rec, rid, micro};
    int ap = named_node(rg, &hp_op_grad_rows_apply, ain, micro >= 0 ? 3 : 2, &tv, 1, NULL, 0, &a, pn, "rows_apply");
    HP_TRY(gstatus(g));
    HP_TRY(hp_rank_graph_sync_nodes(rg));
    rg->hint[ap] = HP_HINT_END;
    return HP_OK;
}

hp_status hp_pass_rows(int *nrows, hp_rank_graph *rg, const hp_graph *global, const hp_propagation *prop,
                       const hp_mesh *m, const hp_fsdp_plan *fsdp, int micro, int K) {
    *nrows = 0;
    hp_graph *g = rg->g;
    int n0 = g->nnodes, np = hp_graph_params(g, NULL, 0);
    int *ids = malloc(sizeof(int) * (size_t)(np ? np : 1));
    if (!ids) return hp_errorf("rows: out of memory");
    hp_graph_params(g, ids, np);
    hp_status st = HP_OK;
    for (int i = 0; !st && i < n0; i++) {
        if (!hp_op_is_grad_rows(g->nodes[i].op)) continue;
        st = split_rows(rg, i, global, prop, m, fsdp, micro, K < 1 ? 1 : K, ids, np);
        (*nrows)++;
    }
    free(ids);
    return st;
}
