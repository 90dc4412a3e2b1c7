/* parallel/remat: the rematerialisation pass (see the header). */
#include "parallel/remat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/pp_stages.h"

hp_status hp_remat_parse(hp_remat_policy *out, const char *name) {
    if (!name || !*name || !strcmp(name, "none")) *out = HP_REMAT_NONE;
    else if (!strcmp(name, "selective")) *out = HP_REMAT_SELECTIVE;
    else if (!strcmp(name, "full")) *out = HP_REMAT_FULL;
    else return hp_errorf("--remat '%s': none, selective or full", name);
    return HP_OK;
}

const char *hp_remat_name(hp_remat_policy p) {
    return p == HP_REMAT_FULL ? "full" : p == HP_REMAT_SELECTIVE ? "selective" : "none";
}

static int saved_op(const hp_remat_opts *o, const hp_opdef *op) {
    if (o->policy == HP_REMAT_FULL) return 0;
    if (!o->nsave) return !strcmp(op->name, "linear");
    for (int i = 0; i < o->nsave; i++)
        if (!strcmp(op->name, o->save[i])) return 1;
    return 0;
}

typedef struct {
    hp_rank_graph *rg;
    int n0, nv0;
    int *unit;          /* [n0]: the model unit of each local node (its forward node's for a backward one); -1 */
    unsigned char *cand; /* [n0]: a forward node that may be recomputed */
    unsigned char *mark; /* [n0]: recomputed */
    int *clone;          /* [nv0]: a recomputed value's copy, -1 */
} remat_state;

/* The unit of every local node: the forward node it is or differentiates, by the global graph's units. */
static void local_units(remat_state *s, const hp_graph *global, const hp_pp_units *u) {
    const hp_rank_graph *rg = s->rg;
    for (int i = 0; i < s->n0; i++) {
        int gn = i < rg->nnode_of ? rg->node_of[i] : -1, f = -1;
        if (gn >= 0) f = global->nodes[gn].phase == HP_PHASE_FWD ? gn : global->nodes[gn].fwd_node;
        s->unit[i] = f >= 0 ? u->unit_of[f] : -1;
    }
}

/* Forward nodes of a block that may be recomputed under the policy. */
static void candidates(remat_state *s, const hp_remat_opts *o, int nblocks) {
    const hp_graph *g = s->rg->g;
    for (int i = 0; i < s->n0; i++) {
        const hp_node *n = &g->nodes[i];
        int b = s->unit[i];
        s->cand[i] = n->phase == HP_PHASE_FWD && b >= 1 && b <= nblocks && !n->op->communicates && !n->nxin &&
                     !saved_op(o, n->op);
        for (int k = 0; s->cand[i] && k < n->nin; k++)
            if (n->in[k] >= 0 && g->vals[n->in[k]].view_of >= 0) s->cand[i] = 0;
        for (int k = 0; s->cand[i] && k < n->nout; k++)
            if (n->out[k] >= 0 && (g->vals[n->out[k]].view_of >= 0 || g->vals[n->out[k]].persistent)) s->cand[i] = 0;
    }
    /* a value another unit's forward reads (the block's output) is kept */
    for (int i = 0; i < s->n0; i++) {
        const hp_node *n = &g->nodes[i];
        if (n->phase != HP_PHASE_FWD) continue;
        for (int k = 0; k < n->nin; k++) {
            int v = n->in[k], pr = v >= 0 ? g->vals[v].producer : -1;
            if (pr >= 0 && pr < s->n0 && s->cand[pr] && s->unit[pr] != s->unit[i]) s->cand[pr] = 0;
        }
    }
}

/* What the block's backward needs, and what that needs from the block, transitively. */
static void closure(remat_state *s) {
    const hp_graph *g = s->rg->g;
    for (int i = 0; i < s->n0; i++) {
        const hp_node *n = &g->nodes[i];
        if (n->phase != HP_PHASE_BWD) continue;
        for (int k = 0; k < n->nin; k++) {
            int v = n->in[k], pr = v >= 0 ? g->vals[v].producer : -1;
            if (pr >= 0 && pr < s->n0 && s->cand[pr] && s->unit[pr] == s->unit[i]) s->mark[pr] = 1;
        }
    }
    for (int i = s->n0 - 1; i >= 0; i--) {
        if (!s->mark[i]) continue;
        const hp_node *n = &g->nodes[i];
        for (int k = 0; k < n->nin; k++) {
            int v = n->in[k], pr = v >= 0 ? g->vals[v].producer : -1;
            if (pr >= 0 && pr < s->n0 && s->cand[pr] && s->unit[pr] == s->unit[i]) s->mark[pr] = 1;
        }
    }
}

static int mapped(const remat_state *s, int v) { return v >= 0 && v < s->nv0 && s->clone[v] >= 0 ? s->clone[v] : v; }

/* Block b's copies, placed before its first backward reader of one of them; its backward then reads them. */
static hp_status copy_block(remat_state *s, int b, hp_remat_result *out) {
    hp_rank_graph *rg = s->rg;
    hp_graph *g = rg->g;
    int anchor = -1;
    for (int i = 0; i < s->n0 && anchor < 0; i++) {
        const hp_node *n = &g->nodes[i];
        if (n->phase != HP_PHASE_BWD || s->unit[i] != b) continue;
        for (int k = 0; k < n->nin && anchor < 0; k++) {
            int pr = n->in[k] >= 0 ? g->vals[n->in[k]].producer : -1;
            if (pr >= 0 && pr < s->n0 && s->mark[pr]) anchor = i;
        }
    }
    if (anchor < 0) return HP_OK;
    int first = g->nnodes, copies = 0;
    for (int i = 0; i < s->n0; i++) {
        if (!s->mark[i] || s->unit[i] != b) continue;
        hp_node n = g->nodes[i]; /* a copy: g->nodes may move */
        int in[HP_MAX_IN], outv[HP_MAX_OUT];
        for (int k = 0; k < n.nin; k++) in[k] = mapped(s, n.in[k]);
        for (int k = 0; k < n.nout; k++) {
            outv[k] = -1;
            if (n.out[k] < 0) continue;
            const hp_value *x = &g->vals[n.out[k]];
            char nm[HP_NAME_LEN];
            snprintf(nm, sizeof nm, "%.80s.remat", x->name);
            outv[k] = hp_graph_value(g, x->kind, x->dtype, x->shape, nm);
            if (outv[k] < 0) return hp_graph_error(g);
            g->vals[outv[k]].no_grad = 1;
            s->clone[n.out[k]] = outv[k];
            out->bytes += (double)hp_val_numel(g, outv[k]) * (double)hp_dtype_size(g->vals[outv[k]].dtype);
        }
        int c = hp_graph_node_into(g, n.op, in, n.nin, outv, n.nout, &n.a, HP_PHASE_BWD, -1);
        if (c < 0) return hp_graph_error(g);
        snprintf(g->nodes[c].name, HP_NAME_LEN, "%.80s.remat", n.name);
        if (n.op->flops) out->flops += n.op->flops(g, &g->nodes[c]);
        copies++;
    }
    HP_TRY(hp_rank_graph_sync_nodes(rg));
    for (int c = first; c < g->nnodes; c++) {
        rg->hint[c] = HP_HINT_BEFORE(anchor);
        rg->node_of[c] = rg->node_of[anchor]; /* stands for the block's backward in traces and validation */
    }
    for (int i = 0; i < s->n0; i++) { /* the block's backward reads the copies */
        hp_node *n = &g->nodes[i];
        if (n->phase != HP_PHASE_BWD || s->unit[i] != b) continue;
        for (int k = 0; k < n->nin; k++) n->in[k] = mapped(s, n->in[k]);
    }
    out->nblocks++, out->nnodes += copies;
    return HP_OK;
}

hp_status hp_pass_remat(hp_remat_result *out, hp_rank_graph *rg, const hp_graph *global, const hp_remat_opts *o) {
    memset(out, 0, sizeof *out);
    if (o->policy == HP_REMAT_NONE) return HP_OK;
    hp_pp_units u;
    HP_TRY(hp_pp_units_of(&u, global));
    hp_graph *g = rg->g;
    remat_state s = {rg, g->nnodes, g->nvals, NULL, NULL, NULL, NULL};
    s.unit = malloc(sizeof(int) * (size_t)(s.n0 ? s.n0 : 1));
    s.cand = calloc((size_t)(s.n0 ? s.n0 : 1), 1);
    s.mark = calloc((size_t)(s.n0 ? s.n0 : 1), 1);
    s.clone = malloc(sizeof(int) * (size_t)(s.nv0 ? s.nv0 : 1));
    hp_status st = s.unit && s.cand && s.mark && s.clone ? HP_OK : hp_errorf("remat: out of memory");
    if (!st) {
        for (int v = 0; v < s.nv0; v++) s.clone[v] = -1;
        local_units(&s, global, &u);
        candidates(&s, o, u.nblocks);
        closure(&s);
    }
    for (int b = 1; b <= u.nblocks && !st; b++) st = copy_block(&s, b, out);
    if (!st) st = hp_rank_graph_place_before(rg, s.n0); /* the copies where they run: FSDP reads order as time */
    free(s.unit), free(s.cand), free(s.mark), free(s.clone);
    hp_pp_units_free(&u);
    return st;
}
