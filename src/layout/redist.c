/* layout/redist: the redistribution planner — a cheapest-path search over
 * layouts where each edge changes one mesh axis's placement (redist.h). */
#include "layout/redist.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPTS 8 /* R, S(0..3), and up to two Partial ops per axis */

/* The placements each axis may take on the way (R, every shard dim, and the
 * Partial ops of `from` and `to` on that axis). */
typedef struct {
    int ndim;
    int nopt[HP_MESH_MAX_DIMS];
    hp_placement opt[HP_MESH_MAX_DIMS][MAX_OPTS];
    int nstates;
} space;

static void add_opt(space *sp, int a, hp_placement p) {
    for (int k = 0; k < sp->nopt[a]; k++)
        if (hp_placement_eq(sp->opt[a][k], p)) return;
    HP_ASSERT(sp->nopt[a] < MAX_OPTS);
    sp->opt[a][sp->nopt[a]++] = p;
}

static void space_init(space *sp, int tensor_ndim, const hp_layout *from, const hp_layout *to) {
    memset(sp, 0, sizeof *sp);
    sp->ndim = from->ndim;
    sp->nstates = 1;
    for (int a = 0; a < sp->ndim; a++) {
        add_opt(sp, a, hp_replicate());
        for (int d = 0; d < tensor_ndim; d++) add_opt(sp, a, hp_shard(d));
        if (from->p[a].kind == HP_PARTIAL) add_opt(sp, a, from->p[a]);
        if (to->p[a].kind == HP_PARTIAL) add_opt(sp, a, to->p[a]);
        sp->nstates *= sp->nopt[a];
    }
}

static int opt_index(const space *sp, int a, hp_placement p) {
    for (int k = 0; k < sp->nopt[a]; k++)
        if (hp_placement_eq(sp->opt[a][k], p)) return k;
    return -1;
}

static int encode(const space *sp, const hp_layout *l) {
    int s = 0;
    for (int a = sp->ndim - 1; a >= 0; a--) s = s * sp->nopt[a] + opt_index(sp, a, l->p[a]);
    return s;
}

static void decode(hp_layout *l, const space *sp, int s) {
    memset(l, 0, sizeof *l);
    l->ndim = sp->ndim;
    for (int a = 0; a < sp->ndim; a++) {
        l->p[a] = sp->opt[a][s % sp->nopt[a]];
        s /= sp->nopt[a];
    }
}

/* Does an axis after `a` shard tensor dim d? */
static int shard_later(const hp_layout *l, int a, int d) {
    for (int b = a + 1; b < l->ndim; b++)
        if (l->p[b].kind == HP_SHARD && l->p[b].dim == d) return 1;
    return 0;
}

/* Average elements of a rank's piece. */
static double avg_numel(const hp_layout *l, const hp_shape *g, const hp_mesh *m) {
    double n = (double)hp_shape_numel(g);
    for (int a = 0; a < l->ndim; a++)
        if (l->p[a].kind == HP_SHARD) n /= m->size[a];
    return n;
}

/* The step that sets axis a of `before` to y; 0 if there is no valid one. */
static int make_step(hp_redist_step *st, const hp_layout *before, int a, hp_placement y, const hp_shape *g,
                     const hp_mesh *m) {
    hp_placement x = before->p[a];
    if (hp_placement_eq(x, y)) return 0;
    memset(st, 0, sizeof *st);
    st->axis = a;
    st->dim = -1;
    st->dim_to = -1;
    st->global = *g;
    st->before = *before;
    st->after = *before;
    st->after.p[a] = y;
    double n = m->size[a], frac = (n - 1) / n, bytes_in = 4 * avg_numel(before, g, m),
           bytes_out = 4 * avg_numel(&st->after, g, m);
    if (x.kind == HP_REPLICATE && y.kind == HP_SHARD) {
        if (shard_later(before, a, y.dim)) return 0;
        st->kind = HP_RD_SLICE;
        st->dim = y.dim;
    } else if (x.kind == HP_REPLICATE && y.kind == HP_PARTIAL) {
        st->kind = HP_RD_TO_PARTIAL;
        st->op = y.op;
    } else if (x.kind == HP_SHARD && y.kind == HP_REPLICATE) {
        if (shard_later(before, a, x.dim)) return 0;
        st->kind = HP_RD_ALL_GATHER;
        st->dim = x.dim;
        st->bytes = frac * bytes_out;
    } else if (x.kind == HP_SHARD && y.kind == HP_SHARD) {
        if (shard_later(before, a, x.dim) || shard_later(before, a, y.dim)) return 0;
        st->kind = HP_RD_ALL_TO_ALL;
        st->dim = x.dim;
        st->dim_to = y.dim;
        st->bytes = frac * bytes_in;
    } else if (x.kind == HP_PARTIAL && y.kind == HP_REPLICATE) {
        st->kind = HP_RD_ALL_REDUCE;
        st->op = x.op;
        st->bytes = x.op == HP_PARTIAL_MAX ? (n - 1) * bytes_in : 2 * frac * bytes_in;
    } else if (x.kind == HP_PARTIAL && y.kind == HP_SHARD) {
        if (shard_later(before, a, y.dim)) return 0;
        st->kind = HP_RD_REDUCE_SCATTER;
        st->op = x.op;
        st->dim = y.dim;
        st->bytes = frac * bytes_in;
    } else {
        return 0; /* Shard -> Partial, Partial -> other Partial: through Replicate */
    }
    return 1;
}

/* (bytes, steps) lexicographic, bytes compared with a relative tolerance. */
static int better(double b1, int s1, double b2, int s2) {
    double tol = 1e-9 * (1 + fabs(b1) + fabs(b2));
    if (b1 < b2 - tol) return 1;
    if (b1 > b2 + tol) return 0;
    return s1 < s2;
}

/* Partial ops that do not commute (max with sum/avg) make the value depend on
 * the order of reduction. */
static hp_status check_partials(const hp_layout *l, const hp_mesh *m, const char *which) {
    int has_max = 0, has_lin = 0;
    for (int a = 0; a < l->ndim; a++) {
        if (l->p[a].kind != HP_PARTIAL) continue;
        if (l->p[a].op == HP_PARTIAL_MAX) has_max = 1;
        else has_lin = 1;
    }
    if (has_max && has_lin) {
        char ls[160];
        return hp_errorf("redistribute: %s layout '%s' mixes P(max) with P(sum)/P(avg) (the reduction order "
                         "would change the value)",
                         which, hp_layout_str(ls, sizeof ls, l, m));
    }
    return HP_OK;
}

hp_status hp_redist_plan(hp_redist *out, const hp_shape *global, const hp_layout *from, const hp_layout *to,
                         const hp_mesh *m) {
    memset(out, 0, sizeof *out);
    if (global->ndim < 0 || global->ndim > HP_MAX_DIMS)
        return hp_errorf("redistribute: tensor has %d dims (at most %d)", global->ndim, HP_MAX_DIMS);
    HP_TRY(hp_layout_check(from, m, global->ndim, "redistribute source"));
    HP_TRY(hp_layout_check(to, m, global->ndim, "redistribute target"));
    HP_TRY(check_partials(from, m, "source"));
    HP_TRY(check_partials(to, m, "target"));
    out->mesh = *m;
    out->global = *global;
    out->from = *from;
    out->to = *to;
    out->elem_bytes = 4;
    if (hp_layout_eq(from, to)) return HP_OK;

    space sp;
    space_init(&sp, global->ndim, from, to);
    int V = sp.nstates;
    double *dist = malloc((size_t)V * sizeof *dist);
    int *nst = malloc((size_t)V * sizeof *nst), *prev = malloc((size_t)V * sizeof *prev);
    char *done = calloc((size_t)V, 1);
    hp_status st = HP_OK;
    if (!dist || !nst || !prev || !done) {
        st = hp_errorf("redistribute: out of memory");
        goto end;
    }
    for (int s = 0; s < V; s++) {
        dist[s] = INFINITY;
        nst[s] = 1 << 30;
        prev[s] = -1;
    }
    int src = encode(&sp, from), dst = encode(&sp, to);
    dist[src] = 0;
    nst[src] = 0;
    for (;;) {
        int u = -1;
        for (int s = 0; s < V; s++)
            if (!done[s] && isfinite(dist[s]) && (u < 0 || better(dist[s], nst[s], dist[u], nst[u]))) u = s;
        if (u < 0 || u == dst) break;
        done[u] = 1;
        hp_layout lu;
        decode(&lu, &sp, u);
        for (int a = 0; a < sp.ndim; a++) {
            for (int k = 0; k < sp.nopt[a]; k++) {
                hp_redist_step step;
                if (!make_step(&step, &lu, a, sp.opt[a][k], global, m)) continue;
                int v = encode(&sp, &step.after);
                if (done[v]) continue;
                if (better(dist[u] + step.bytes, nst[u] + 1, dist[v], nst[v])) {
                    dist[v] = dist[u] + step.bytes;
                    nst[v] = nst[u] + 1;
                    prev[v] = u;
                }
            }
        }
    }
    if (!isfinite(dist[dst])) { /* cannot happen: every layout reaches all-Replicate and back */
        char a[160], b[160];
        st = hp_errorf("redistribute: no way from '%s' to '%s'", hp_layout_str(a, sizeof a, from, m),
                       hp_layout_str(b, sizeof b, to, m));
        goto end;
    }
    if (nst[dst] > HP_REDIST_MAX_STEPS) {
        st = hp_errorf("redistribute: plan needs %d steps (at most %d)", nst[dst], HP_REDIST_MAX_STEPS);
        goto end;
    }
    out->nsteps = nst[dst];
    for (int v = dst, i = nst[dst] - 1; v != src; v = prev[v], i--) {
        hp_layout lu, lv;
        decode(&lu, &sp, prev[v]);
        decode(&lv, &sp, v);
        int a = 0;
        while (a < sp.ndim && hp_placement_eq(lu.p[a], lv.p[a])) a++;
        HP_ASSERT(a < sp.ndim && i >= 0);
        int ok = make_step(&out->step[i], &lu, a, lv.p[a], global, m);
        HP_ASSERT(ok);
        out->bytes += out->step[i].bytes;
    }
end:
    free(dist);
    free(nst);
    free(prev);
    free(done);
    return st;
}

void hp_redist_set_elem_bytes(hp_redist *r, int elem_bytes) {
    double f = (double)elem_bytes / (r->elem_bytes > 0 ? r->elem_bytes : 4);
    r->bytes = 0;
    for (int i = 0; i < r->nsteps; i++) {
        r->step[i].bytes *= f;
        r->bytes += r->step[i].bytes;
    }
    r->elem_bytes = elem_bytes;
}

hp_status hp_redist_cost(double *bytes, const hp_shape *global, const hp_layout *from, const hp_layout *to,
                         const hp_mesh *m) {
    hp_redist r;
    *bytes = 0;
    HP_TRY(hp_redist_plan(&r, global, from, to, m));
    *bytes = r.bytes;
    return HP_OK;
}

const char *hp_rd_kind_name(hp_rd_kind k) {
    switch (k) {
    case HP_RD_SLICE: return "slice";
    case HP_RD_ALL_GATHER: return "all-gather";
    case HP_RD_REDUCE_SCATTER: return "reduce-scatter";
    case HP_RD_ALL_REDUCE: return "all-reduce";
    case HP_RD_ALL_TO_ALL: return "all-to-all";
    case HP_RD_TO_PARTIAL: return "to-partial";
    }
    return "?";
}

static const char *op_name(hp_partial_op op) {
    return op == HP_PARTIAL_SUM ? "sum" : op == HP_PARTIAL_AVG ? "avg" : "max";
}

static void bytes_str(char *buf, size_t n, double b) {
    if (b < 1e3) snprintf(buf, n, "%.0f B", b);
    else if (b < 1e6) snprintf(buf, n, "%.3g KB", b / 1e3);
    else if (b < 1e9) snprintf(buf, n, "%.3g MB", b / 1e6);
    else snprintf(buf, n, "%.3g GB", b / 1e9);
}

char *hp_redist_step_str(char *buf, size_t n, const hp_redist_step *s, const hp_mesh *m) {
    const char *ax = m && s->axis < m->ndim ? m->name[s->axis] : "?";
    const char *k = hp_rd_kind_name(s->kind);
    char b[32];
    bytes_str(b, sizeof b, s->bytes);
    switch (s->kind) {
    case HP_RD_SLICE: snprintf(buf, n, "%s(%s, dim %d)", k, ax, s->dim); break;
    case HP_RD_ALL_GATHER: snprintf(buf, n, "%s(%s, dim %d) %s", k, ax, s->dim, b); break;
    case HP_RD_REDUCE_SCATTER: snprintf(buf, n, "%s(%s, dim %d, %s) %s", k, ax, s->dim, op_name(s->op), b); break;
    case HP_RD_ALL_REDUCE: snprintf(buf, n, "%s(%s, %s) %s", k, ax, op_name(s->op), b); break;
    case HP_RD_ALL_TO_ALL: snprintf(buf, n, "%s(%s, dim %d -> %d) %s", k, ax, s->dim, s->dim_to, b); break;
    case HP_RD_TO_PARTIAL: snprintf(buf, n, "%s(%s, %s)", k, ax, op_name(s->op)); break;
    default: snprintf(buf, n, "?"); break;
    }
    return buf;
}

char *hp_redist_str(char *buf, size_t n, const hp_redist *r) {
    if (n) buf[0] = 0;
    if (r->nsteps == 0) {
        snprintf(buf, n, "copy");
        return buf;
    }
    size_t used = 0;
    for (int i = 0; i < r->nsteps && used < n; i++) {
        char s[128];
        int k = snprintf(buf + used, n - used, "%s%s", i ? "; " : "", hp_redist_step_str(s, sizeof s, &r->step[i], &r->mesh));
        if (k < 0) break;
        used += (size_t)k;
    }
    return buf;
}
