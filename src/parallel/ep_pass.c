/* parallel/ep_pass: the expert-parallel pass (see parallel/ep.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "parallel/ep.h"

/* The parameter behind v (through casts), or -1. */
static int param_of(const hp_graph *g, int v) {
    while (v >= 0 && g->vals[v].kind != HP_V_PARAM) {
        int p = g->vals[v].producer;
        if (p < 0 || !hp_op_is_cast(g->nodes[p].op)) return -1;
        v = g->nodes[p].in[0];
    }
    return v;
}

/* The mesh axis (of more than one member) the plan splits dim 0 of grouped_linear node n's weight along, -1 none. */
static hp_status expert_axis(int *axis, const hp_graph *g, const hp_node *n, const hp_plan *p, const hp_mesh *m) {
    *axis = -1;
    int w = param_of(g, n->in[1]);
    if (w < 0) return HP_OK;
    hp_layout l;
    HP_TRY(hp_plan_layout_of(&l, p, g->vals[w].name, 0, g->vals[w].shape.ndim));
    for (int a = 0; a < l.ndim && a < m->ndim; a++) {
        if (l.p[a].kind != HP_SHARD || m->size[a] < 2) continue;
        if (l.p[a].dim != 0)
            return hp_errorf("expert parallelism: '%s' is split along dim %d over '%s'; a stack of experts is split "
                             "by expert (S(0))", g->vals[w].name, l.p[a].dim, m->name[a]);
        if (*axis >= 0)
            return hp_errorf("expert parallelism: '%s' is split by expert over two axes ('%s' and '%s'); one "
                             "expert-parallel axis", g->vals[w].name, m->name[*axis], m->name[a]);
        *axis = a;
        if (g->vals[w].shape.d[0] % m->size[a])
            return hp_errorf("expert parallelism: '%s' has %lld experts, not a multiple of the %d members of '%s'",
                             g->vals[w].name, (long long)g->vals[w].shape.d[0], m->size[a], m->name[a]);
    }
    return HP_OK;
}

typedef struct {
    int axis, G, E; /* axis -1: the layer stays as it is; G 0: no grouped GEMM seen yet */
    int xp, eid, xr, er, src;
    double capacity;    /* > 0: the router's capacity factor, moved to the experts' owners */
    int scores, rowof;  /* then: the slots' scores (moe_route's) and rows (moe_dispatch's) */
    int stats, drops;   /* then: the router's statistics, and the owners' drops ep_send counts (moe_aux adds them) */
} layer;

static int new_value(hp_graph *g, hp_dtype dt, hp_shape s, const char *base, const char *what) {
    char nm[HP_NAME_LEN];
    snprintf(nm, sizeof nm, "%.80s.%s", base, what);
    return hp_graph_value(g, HP_V_ACT, dt, s, nm);
}

/* After rebuilding node id: its outputs' shapes must be what its shape rule says. */
static hp_status check_shapes(const hp_graph *g, int id) {
    const hp_node *n = &g->nodes[id];
    hp_shape os[HP_MAX_OUT];
    hp_dtype od[HP_MAX_OUT];
    HP_TRY(n->op->infer(g, n, os, od));
    for (int k = 0; k < n->nout; k++)
        if (n->out[k] >= 0 && !hp_shape_eq(&os[k], &g->vals[n->out[k]].shape))
            return hp_errorf("expert parallelism: node '%s' output %d does not fit the exchanged rows", n->name, k);
    return HP_OK;
}

/* The return exchange of layer ep_of[v]'s rows v (made on the members that hold their experts) to the ranks of
 * their tokens: ep_of[nv0 + v] its value. */
static hp_status emit_return(hp_graph *g, layer *ly, int *ep_of, int nv0, int v) {
    layer *L = &ly[ep_of[v]];
    hp_shape s = g->vals[v].shape;
    s.d[0] /= L->G;
    int back = new_value(g, g->vals[v].dtype, s, g->vals[v].name, "ep_back");
    int in3[3] = {v, L->src, L->eid};
    hp_attrs a = {.i = {L->G, L->E, L->axis}};
    int id = back < 0 ? -1 : hp_graph_node_into(g, &hp_op_moe_ep_return, in3, 3, &back, 1, &a, HP_PHASE_FWD, -1);
    if (id < 0) return hp_errorf("expert parallelism: %s", g->err ? hp_status_msg(g->err) : "out of memory");
    snprintf(g->nodes[id].name, sizeof g->nodes[id].name, "%.80s.ep_return", g->vals[v].name);
    ep_of[nv0 + v] = back;
    return check_shapes(g, id);
}

/* outside[v] = 1 where a node reads value v as what a layer's rows are not to it (any input but a grouped GEMM's
 * rows or a row-wise node's only input): if v is a layer's received rows, they go back right after v is made. */
static void mark_outside(unsigned char *outside, const hp_graph *g) {
    for (int i = 0; i < g->nnodes; i++) {
        const hp_node *n = &g->nodes[i];
        hp_moe_role role = hp_op_moe_role(n->op);
        for (int k = 0; k < n->nin; k++) {
            int inside = k == 0 && (role == HP_MOE_ROLE_EXPERTS ||
                                    ((role == HP_MOE_ROLE_ROWWISE || role == HP_MOE_ROLE_GATED) && n->nin == 1));
            if (!inside && n->in[k] >= 0) outside[n->in[k]] = 1;
        }
    }
}

hp_status hp_pass_ep(hp_graph *g, const hp_plan *p, const hp_mesh *m, int deterministic, int *nlayers,
                     int *axis_out) {
    *nlayers = 0, *axis_out = -1;
    if (g->err) return hp_errorf("expert parallelism: the graph has an error: %s", hp_status_msg(g->err));
    for (int i = 0; i < g->nnodes && deterministic; i++) { /* each slice its own balancing loss */
        hp_moe_role r = hp_op_moe_role(g->nodes[i].op);
        if (r == HP_MOE_ROLE_ROUTE) g->nodes[i].a.i[HP_MOE_ROUTE_PER_PART] = 1;
        if (r == HP_MOE_ROLE_AUX) g->nodes[i].a.i[HP_MOE_PER_PART] = 1;
    }
    int nnodes = g->nnodes, nv0 = g->nvals;
    /* each dispatch's layer, found from the grouped GEMMs reading its expert ids */
    layer *ly = malloc(sizeof *ly * (size_t)(nnodes ? nnodes : 1));
    int *lay_of_eid = malloc(sizeof(int) * (size_t)(nv0 ? nv0 : 1));
    if (!ly || !lay_of_eid) {
        free(ly);
        free(lay_of_eid);
        return hp_errorf("expert parallelism: out of memory");
    }
    for (int v = 0; v < nv0; v++) lay_of_eid[v] = -1;
    hp_status st = HP_OK;
    for (int i = 0; i < nnodes; i++) {
        ly[i] = (layer){.axis = -1, .xp = -1, .eid = -1, .xr = -1, .er = -1, .src = -1, .scores = -1, .rowof = -1,
                        .stats = -1, .drops = -1};
        if (hp_op_moe_role(g->nodes[i].op) == HP_MOE_ROLE_DISPATCH) lay_of_eid[g->nodes[i].out[1]] = i;
    }
    int any = 0;
    for (int i = 0; i < nnodes && !st; i++) {
        const hp_node *n = &g->nodes[i];
        if (hp_op_moe_role(n->op) != HP_MOE_ROLE_EXPERTS) continue;
        int a;
        st = expert_axis(&a, g, n, p, m);
        if (st) break;
        int d = lay_of_eid[n->in[2]];
        if (d < 0) {
            if (a >= 0) st = hp_errorf("expert parallelism: '%s' reads expert ids no dispatch made", n->name);
            continue;
        }
        layer *L = &ly[d];
        if (L->G && L->axis != a) {
            st = hp_errorf("expert parallelism: the experts of '%s' are split over different axes", g->nodes[d].name);
            break;
        }
        L->axis = a, L->eid = n->in[2], L->xp = g->nodes[d].out[0], L->G = a >= 0 ? m->size[a] : 1;
        L->E = (int)g->vals[param_of(g, n->in[1])].shape.d[0];
        if (a >= 0) {
            if (*axis_out >= 0 && *axis_out != a) {
                st = hp_errorf("expert parallelism: MoE layers split their experts over different axes ('%s', '%s')",
                               m->name[*axis_out], m->name[a]);
                break;
            }
            *axis_out = a;
            any = 1;
        }
    }
    free(lay_of_eid);
    /* a capacity is the owners' to apply: over every row of the group for their experts, not per rank */
    for (int i = 0; i < nnodes && !st; i++) {
        layer *L = &ly[i];
        if (L->axis < 0) continue;
        int rp = g->vals[g->nodes[i].in[1]].producer;
        if (rp < 0 || hp_op_moe_role(g->nodes[rp].op) != HP_MOE_ROLE_ROUTE || g->nodes[rp].nout < 5) {
            st = hp_errorf("expert parallelism: '%s' dispatches an index no router made", g->nodes[i].name);
            break;
        }
        if (!(g->nodes[rp].a.f[0] > 0)) continue;
        if (g->nodes[i].a.i[HP_MOE_DISPATCH_CHUNKS] > 1) {
            st = hp_errorf("expert parallelism: '%s' has a capacity factor and its tokens in chunks (--moe-chunks); "
                           "the owners' capacity per chunk is not built (use dropless routing)",
                           g->nodes[rp].name);
            break;
        }
        if (deterministic) {
            st = hp_errorf("expert parallelism: '%s' has a capacity factor; the deterministic mode's form of it (per "
                           "slice at one rank, per group under EP) is not built", g->nodes[rp].name);
            break;
        }
        L->capacity = g->nodes[rp].a.f[0], L->scores = g->nodes[rp].out[4], L->rowof = g->nodes[i].out[2];
        L->stats = g->nodes[rp].out[2];
        g->nodes[rp].a.f[0] = 0; /* the router drops nothing */
    }
    if (st || !any) {
        free(ly);
        return st;
    }
    /* rebuilt in order: the exchange after each such dispatch, the experts on the received rows, the rows back
     * before the first reader outside */
    hp_node *old = malloc(sizeof *old * (size_t)nnodes);
    int *ep_of = malloc(sizeof(int) * 3 * (size_t)nv0); /* [v]: the layer (dispatch node) whose received rows v
                                                          * holds; [nv0 + v]: v's rows returned; [2 nv0 + v]: the
                                                          * layer v is the dispatched rows of */
    if (!old || !ep_of) {
        free(old);
        free(ep_of);
        free(ly);
        return hp_errorf("expert parallelism: out of memory");
    }
    unsigned char *outside = calloc((size_t)nv0 + 1, 1);
    if (!outside) {
        free(old);
        free(ep_of);
        free(ly);
        return hp_errorf("expert parallelism: out of memory");
    }
    mark_outside(outside, g);
    memcpy(old, g->nodes, sizeof *old * (size_t)nnodes);
    for (int v = 0; v < 3 * nv0; v++) ep_of[v] = -1;
    g->nnodes = 0;
    for (int i = 0; i < nnodes && !st && !g->err; i++) {
        hp_node n = old[i];
        hp_moe_role role = hp_op_moe_role(n.op);
        int from = -1; /* the layer whose received rows this node reads */
        if (role == HP_MOE_ROLE_EXPERTS && n.in[0] < nv0)
            from = ep_of[n.in[0]] >= 0 ? ep_of[n.in[0]] : ep_of[2 * nv0 + n.in[0]];
        if ((role == HP_MOE_ROLE_ROWWISE || role == HP_MOE_ROLE_GATED) && n.nin == 1 && n.in[0] < nv0 &&
            ep_of[n.in[0]] >= 0)
            from = ep_of[n.in[0]];
        if (from >= 0) {
            layer *L = &ly[from];
            if (role == HP_MOE_ROLE_EXPERTS) {
                if (n.in[2] != L->eid) {
                    st = hp_errorf("expert parallelism: '%s' reads rows of one layer and ids of another", n.name);
                    break;
                }
                if (n.in[0] == L->xp) n.in[0] = L->xr;
                n.in[2] = L->er;
                n.a.i[HP_GROUPED_EP_AXIS] = L->axis + 1;
                if (deterministic) { /* one GEMM per source run, the weight's gradient a tree over sources */
                    n.in[3] = L->src;
                    n.nin = 4;
                    n.a.i[HP_GROUPED_SOURCES] = L->G;
                }
            }
            if (role == HP_MOE_ROLE_GATED) { /* only the rows that came: the ids as a second input */
                n.in[1] = L->er;
                n.nin = 2;
            }
            for (int k = 0; k < n.nout; k++)
                if (n.out[k] >= 0) {
                    g->vals[n.out[k]].shape.d[0] *= L->G;
                    ep_of[n.out[k]] = from;
                }
        } else {
            for (int k = 0; k < n.nin && !st; k++) { /* a reader outside: the rows back first */
                int v = n.in[k];
                if (v >= nv0 || ep_of[v] < 0) continue;
                if (ep_of[nv0 + v] < 0) st = emit_return(g, ly, ep_of, nv0, v);
                n.in[k] = ep_of[nv0 + v];
            }
        }
        if (role == HP_MOE_ROLE_AUX && n.nin == 1) /* the owners' drops into the balancing loss's report */
            for (int d = 0; d < nnodes; d++)
                if (ly[d].drops >= 0 && ly[d].stats == n.in[0]) n.in[1] = ly[d].drops, n.nin = 2;
        if (st) break;
        int id = hp_graph_node_into(g, n.op, n.in, n.nin, n.out, n.nout, &n.a, n.phase, n.fwd_node);
        if (id < 0) break;
        memcpy(g->nodes[id].name, n.name, sizeof n.name);
        if (from >= 0) st = check_shapes(g, id);
        for (int k = 0; from >= 0 && !st && k < n.nout; k++) /* rows a node outside reads: back right away */
            if (n.out[k] >= 0 && n.out[k] < nv0 && outside[n.out[k]]) st = emit_return(g, ly, ep_of, nv0, n.out[k]);
        if (role == HP_MOE_ROLE_DISPATCH && ly[i].axis >= 0) { /* the exchange right after the dispatch */
            layer *L = &ly[i];
            int xp = n.out[0], G = L->G;
            hp_shape xs = g->vals[xp].shape;
            xs.d[0] *= G;
            L->xr = new_value(g, g->vals[xp].dtype, xs, n.name, "ep_rows");
            L->er = new_value(g, HP_I32, hp_shape1(xs.d[0]), n.name, "ep_experts");
            L->src = new_value(g, HP_I32, hp_shape2(xs.d[0], 2), n.name, "ep_sources");
            if (L->capacity > 0) L->drops = new_value(g, HP_F32, hp_shape1(1), n.name, "ep_drops");
            int in4[4] = {xp, L->eid, L->scores, L->rowof}, out3[4] = {L->xr, L->er, L->src, L->drops};
            hp_attrs a = {.i = {G, L->E, L->axis}, .f = {L->capacity}};
            int sid = L->src < 0 ? -1
                                 : hp_graph_node_into(g, &hp_op_moe_ep_send, in4, L->capacity > 0 ? 4 : 2, out3,
                                                      L->capacity > 0 ? 4 : 3, &a, HP_PHASE_FWD, -1);
            if (sid < 0) break;
            snprintf(g->nodes[sid].name, sizeof g->nodes[sid].name, "%.80s.ep_send", n.name);
            g->vals[L->er].no_grad = g->vals[L->src].no_grad = 1;
            if (L->drops >= 0) g->vals[L->drops].no_grad = 1;
            st = check_shapes(g, sid);
            ep_of[2 * nv0 + xp] = i;
            ++*nlayers;
        }
    }
    free(old);
    free(ep_of);
    free(outside);
    free(ly);
    if (!st && g->err) st = hp_errorf("expert parallelism: %s", hp_status_msg(g->err));
    return st;
}
