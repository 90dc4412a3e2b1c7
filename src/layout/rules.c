/* layout/rules: picks, per mesh axis, the cheapest strategy an operator
 * allows for the layouts its inputs arrive in (see rules.h for the score).
 * Parameters never move between ranks: a strategy that would gather, reduce
 * or re-split a parameter is not taken, and an operator left without one is
 * a plan error naming the parameters, their layouts and the layouts needed. */
#include "layout/rules.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "layout/redist.h"
#include "layout/rules_family.h"

static const hp_rule_family *find_family(const hp_opdef *op) {
    int nd, ns, nm;
    const hp_rule_family *d = hp_rules_dense(&nd), *s = hp_rules_seq(&ns), *m = hp_rules_moe(&nm);
    for (int i = 0; i < nd; i++)
        if (d[i].op == op) return &d[i];
    for (int i = 0; i < ns; i++)
        if (s[i].op == op) return &s[i];
    for (int i = 0; i < nm; i++)
        if (m[i].op == op) return &m[i];
    return NULL;
}

int hp_rule_known(const hp_opdef *op) { return find_family(op) != NULL; }

/* Bytes per rank to move one axis of a tensor (N bytes: its size on this
 * axis, whole; k members) from `from` to `to`; -1 when rules never ask
 * for this move (only gathers / reductions to Replicate, and local slices or
 * partials of a Replicate, are taken). */
static double move_cost(hp_placement from, hp_placement to, double N, int k) {
    if (hp_placement_eq(from, to)) return 0;
    if (from.kind == HP_REPLICATE) return 0; /* local slice / to-partial */
    if (to.kind != HP_REPLICATE) return -1;
    if (k <= 1) return 0;
    double f = (double)(k - 1) / k;
    return from.kind == HP_SHARD ? N * f : 2.0 * N * f; /* all-gather / all-reduce */
}

static double value_bytes(const hp_graph *g, int v) {
    return (double)hp_val_numel(g, v) * (double)hp_dtype_size(g->vals[v].dtype);
}

/* Parameters never move between ranks: a parameter is consumed where it
 * lives, or made locally from a Replicate copy (slice, to-partial). Moving
 * parameters is FSDP's job, an explicit transform. */
static int is_param(const hp_graph *g, int v) { return g->vals[v].kind == HP_V_PARAM; }
static int param_stays(hp_placement from, hp_placement to) {
    return hp_placement_eq(from, to) || from.kind == HP_REPLICATE;
}

/* The share of a tensor one member holds on the axes other than `axis`. */
static double other_axes_share(const hp_layout *l, const hp_mesh *m, int axis) {
    double s = 1;
    for (int b = 0; b < m->ndim; b++)
        if (b != axis && l->p[b].kind == HP_SHARD) s /= m->size[b];
    return s;
}

/* Which input slots of the node its operator can take as Partial. */
static unsigned partial_inputs(const hp_graph *g, int node, const hp_mesh *m) {
    const hp_node *n = &g->nodes[node];
    const hp_rule_family *f = find_family(n->op);
    if (!f) return 0;
    hp_rule_axis ra;
    memset(&ra, 0, sizeof ra);
    ra.g = g, ra.node = node, ra.n = n, ra.m = m, ra.axis = 0;
    hp_status s = f->options(&ra); /* probing (no arriving layouts) never fails */
    hp_status_free(s);
    unsigned mask = 0;
    for (int i = 0; i < ra.nopt; i++)
        for (int k = 0; k < n->nin; k++)
            if (ra.opt[i].in[k].kind == HP_PARTIAL) mask |= 1u << k;
    return mask;
}

void hp_rule_partial_blockers(int *count, const hp_graph *g, const hp_mesh *m) {
    for (int v = 0; v < g->nvals; v++) count[v] = 0;
    for (int i = 0; i < g->nnodes; i++) {
        unsigned mask = partial_inputs(g, i, m);
        for (int k = 0; k < g->nodes[i].nin; k++)
            if (!(mask & (1u << k))) count[g->nodes[i].in[k]]++;
    }
}

static int blockers_of(const hp_graph *g, int v, const hp_mesh *m, const hp_rule_ctx *ctx) {
    if (ctx && ctx->partial_blockers) return ctx->partial_blockers[v];
    int c = 0;
    for (int i = 0; i < g->nnodes; i++) {
        const hp_node *n = &g->nodes[i];
        unsigned mask = ~0u;
        for (int k = 0; k < n->nin; k++) {
            if (n->in[k] != v) continue;
            if (mask == ~0u) mask = partial_inputs(g, i, m);
            if (!(mask & (1u << k))) c++;
        }
    }
    return c;
}

typedef struct {
    double score;
    int changes, partials, index;
} rank_key;

static int better(const rank_key *a, const rank_key *b) {
    double tol = 1e-9 * (b->score > 1 ? b->score : 1);
    if (a->score < b->score - tol) return 1;
    if (a->score > b->score + tol) return 0;
    if (a->changes != b->changes) return a->changes < b->changes;
    if (a->partials != b->partials) return a->partials < b->partials;
    return a->index < b->index;
}

/* ---- the errors of plans that would move a parameter ---- */

/* Appends printf text to buf (truncating quietly). */
static void append(char *buf, size_t cap, size_t *used, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t cap, size_t *used, const char *fmt, ...) {
    if (*used + 1 >= cap) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *used, cap - *used, fmt, ap);
    va_end(ap);
    if (w > 0) *used = *used + (size_t)w < cap ? *used + (size_t)w : cap - 1;
}

/* `l` with placement p on axis a, as text. */
static char *with_axis(char *buf, size_t n, const hp_layout *l, int a, hp_placement p, const hp_mesh *m) {
    hp_layout x = *l;
    x.p[a] = p;
    return hp_layout_str(buf, n, &x, m);
}

/* No option of axis ra->axis keeps every parameter in place. Names the
 * parameters the closest option would move (fewest, then fewest bytes), the
 * layout it needs them in, and the inputs that pin it. */
static hp_status explain_param_conflict(const hp_rule_axis *ra, const hp_layout *arriving) {
    const hp_graph *g = ra->g;
    const hp_node *n = ra->n;
    const hp_mesh *m = ra->m;
    int a = ra->axis, best = -1, best_moved = 0;
    double best_bytes = 0;
    for (int o = 0; o < ra->nopt; o++) {
        int moved = 0, ok = 1;
        double bytes = 0;
        for (int i = 0; i < n->nin && ok; i++) {
            hp_placement from = arriving[i].p[a], to = ra->opt[o].in[i];
            if (!is_param(g, n->in[i]))
                ok = move_cost(from, to, 1, m->size[a]) >= 0;
            else if (!param_stays(from, to))
                moved++, bytes += value_bytes(g, n->in[i]);
        }
        if (ok && (best < 0 || moved < best_moved || (moved == best_moved && bytes < best_bytes)))
            best = o, best_moved = moved, best_bytes = bytes;
    }
    if (best < 0) /* every family lists the all-Replicate strategy, always reachable */
        return hp_errorf("%s: no sharding strategy on mesh axis '%s' (a bug in the rule of '%s')", n->name,
                         m->name[a], n->op->name);
    const hp_rule_option *opt = &ra->opt[best];
    char msg[900], l1[160], l2[160], l3[160];
    size_t used = 0;
    msg[0] = 0;
    int nmoved = 0, nctx = 0;
    for (int i = 0; i < n->nin; i++) {
        hp_placement from = arriving[i].p[a], to = opt->in[i];
        if (!is_param(g, n->in[i]) || param_stays(from, to)) continue;
        append(msg, sizeof msg, &used, "%sparameter '%s' is %s where the operator needs %s", nmoved++ ? "; " : "",
               g->vals[n->in[i]].name, hp_layout_str(l1, sizeof l1, &arriving[i], m),
               with_axis(l2, sizeof l2, &arriving[i], a, to, m));
        if (to.kind != HP_REPLICATE) /* a Replicate parameter gives it locally */
            append(msg, sizeof msg, &used, " or %s", with_axis(l3, sizeof l3, &arriving[i], a, hp_replicate(), m));
    }
    for (int i = 0; i < n->nin; i++) {
        hp_placement from = arriving[i].p[a], to = opt->in[i];
        int moved = is_param(g, n->in[i]) && !param_stays(from, to);
        if (moved || from.kind == HP_REPLICATE) continue;
        append(msg, sizeof msg, &used, "%s%s '%s' %s", nctx++ ? ", " : " (with ",
               is_param(g, n->in[i]) ? "parameter" : "input", g->vals[n->in[i]].name,
               hp_layout_str(l1, sizeof l1, &arriving[i], m));
    }
    if (nctx) append(msg, sizeof msg, &used, ")");
    return hp_errorf("%s: %s: no strategy on mesh axis '%s' fits without moving a parameter across ranks", n->name,
                     msg, m->name[a]);
}

/* Across all axes: every parameter input is converted locally (nested
 * shards can make per-axis local steps need communication together). */
static hp_status check_params_local(const hp_graph *g, const hp_node *n, const hp_layout *arriving,
                                    const hp_strategy *st, const hp_mesh *m) {
    for (int i = 0; i < n->nin; i++) {
        int v = n->in[i];
        if (!is_param(g, v) || hp_layout_eq(&arriving[i], &st->in[i])) continue;
        hp_redist r;
        HP_TRY(hp_redist_plan(&r, &g->vals[v].shape, &arriving[i], &st->in[i], m));
        for (int s = 0; s < r.nsteps; s++) {
            if (r.step[s].kind == HP_RD_SLICE || r.step[s].kind == HP_RD_TO_PARTIAL) continue;
            char l1[160], l2[160], how[400];
            return hp_errorf("%s: parameter '%s' is %s where the operator needs %s, which takes %s: parameters never "
                             "move across ranks",
                             n->name, g->vals[v].name, hp_layout_str(l1, sizeof l1, &arriving[i], m),
                             hp_layout_str(l2, sizeof l2, &st->in[i], m), hp_redist_str(how, sizeof how, &r));
        }
    }
    return HP_OK;
}

/* Scores the options of one axis and writes the best into out. */
static hp_status pick_axis(hp_strategy *out, const hp_rule_axis *ra, const hp_layout *arriving,
                           const hp_rule_ctx *ctx) {
    const hp_graph *g = ra->g;
    const hp_node *n = ra->n;
    const hp_mesh *m = ra->m;
    int a = ra->axis, k = m->size[a];
    double in_bytes[HP_MAX_IN], out_share = n->nin ? other_axes_share(&arriving[0], m, a) : 1;
    for (int i = 0; i < n->nin; i++) in_bytes[i] = value_bytes(g, n->in[i]) * other_axes_share(&arriving[i], m, a);
    int best = -1;
    rank_key bk = {0, 0, 0, 0};
    for (int o = 0; o < ra->nopt; o++) {
        const hp_rule_option *opt = &ra->opt[o];
        rank_key key = {0, 0, 0, o};
        int ok = 1;
        for (int i = 0; i < n->nin && ok; i++) {
            double c = move_cost(arriving[i].p[a], opt->in[i], in_bytes[i], k);
            if (c < 0 || (is_param(g, n->in[i]) && !param_stays(arriving[i].p[a], opt->in[i]))) ok = 0;
            key.score += c;
            key.changes += !hp_placement_eq(arriving[i].p[a], opt->in[i]);
        }
        if (!ok) continue;
        for (int j = 0; j < n->nout; j++) {
            if (n->out[j] < 0 || opt->out[j].kind != HP_PARTIAL) continue;
            key.partials++;
            double N = value_bytes(g, n->out[j]) * out_share;
            key.score += move_cost(opt->out[j], hp_replicate(), N, k) * blockers_of(g, n->out[j], m, ctx);
        }
        if (best < 0 || better(&key, &bk)) best = o, bk = key;
    }
    if (best < 0) return explain_param_conflict(ra, arriving);
    const hp_rule_option *opt = &ra->opt[best];
    for (int i = 0; i < n->nin; i++) {
        out->in[i].p[a] = opt->in[i];
        out->cost += move_cost(arriving[i].p[a], opt->in[i], in_bytes[i], k);
    }
    for (int j = 0; j < n->nout; j++) out->out[j].p[a] = n->out[j] >= 0 ? opt->out[j] : hp_replicate();
    out->tensor_order |= opt->tensor_order;
    if (k > 1) out->own_order |= opt->own_order;
    if (k > 1 && opt->per_piece && !out->per_piece) out->per_piece = opt->per_piece, out->per_piece_axis = a;
    out->discrete |= opt->discrete;
    if (opt->parallel_xent) {
        if (out->parallel_xent_axis >= 0)
            return hp_errorf("%s: the vocabulary is split on mesh axes '%s' and '%s'; a vocabulary-parallel "
                             "cross-entropy over more than one axis is not supported",
                             n->name, m->name[out->parallel_xent_axis], m->name[a]);
        out->parallel_xent_axis = a;
    }
    return HP_OK;
}

static void init_strategy(hp_strategy *out, const hp_mesh *m) {
    memset(out, 0, sizeof *out);
    for (int i = 0; i < HP_MAX_IN; i++) out->in[i] = hp_layout_replicated(m);
    for (int j = 0; j < HP_MAX_OUT; j++) out->out[j] = hp_layout_replicated(m);
    out->parallel_xent_axis = -1;
    out->per_piece_axis = -1;
}

/* Operators without a rule: gather everything, run replicated (a sharded
 * parameter cannot be gathered: an error). */
static hp_status replicated_fallback(hp_strategy *out, const hp_graph *g, const hp_node *n, const hp_layout *arriving,
                                     const hp_mesh *m) {
    out->no_rule = 1;
    for (int i = 0; i < n->nin; i++) {
        if (is_param(g, n->in[i]) && !hp_layout_is_replicated(&arriving[i])) {
            char l1[160];
            return hp_errorf("%s: operator '%s' has no sharding rule and runs on Replicate inputs, but parameter '%s' "
                             "is %s: parameters never move across ranks (make it R in the plan)",
                             n->name, n->op->name, g->vals[n->in[i]].name, hp_layout_str(l1, sizeof l1, &arriving[i], m));
        }
        for (int a = 0; a < m->ndim; a++) {
            double N = value_bytes(g, n->in[i]) * other_axes_share(&arriving[i], m, a);
            out->cost += move_cost(arriving[i].p[a], hp_replicate(), N, m->size[a]);
        }
    }
    return HP_OK;
}

hp_status hp_sharding_rule(hp_strategy *out, const hp_graph *g, int node, const hp_layout *arriving,
                           const hp_mesh *m, const hp_rule_ctx *ctx) {
    if (node < 0 || node >= g->nnodes) return hp_errorf("sharding rule: node %d is not in the graph", node);
    const hp_node *n = &g->nodes[node];
    init_strategy(out, m);
    for (int i = 0; i < n->nin; i++) {
        const hp_value *v = &g->vals[n->in[i]];
        hp_status s = hp_layout_check(&arriving[i], m, v->shape.ndim, v->name);
        if (s) return hp_error_wrap(s, "%s: input '%s'", n->name, v->name);
    }
    const hp_rule_family *f = find_family(n->op);
    if (!f) return replicated_fallback(out, g, n, arriving, m);
    for (int a = 0; a < m->ndim; a++) {
        hp_placement arr[HP_MAX_IN];
        for (int i = 0; i < n->nin; i++) arr[i] = arriving[i].p[a];
        hp_rule_axis ra;
        memset(&ra, 0, sizeof ra);
        ra.g = g, ra.node = node, ra.n = n, ra.m = m, ra.axis = a, ra.arriving = arr;
        ra.val = ctx ? ctx->val : NULL;
        HP_TRY(f->options(&ra));
        HP_TRY(pick_axis(out, &ra, arriving, ctx));
    }
    if (f->check) HP_TRY(f->check(g, node, out->in, m));
    return check_params_local(g, n, arriving, out, m);
}
