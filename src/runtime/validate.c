#include "runtime/validate.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parallel/piece.h"
#include "parallel/rank.h"
#include "runtime/validate_parts.h"

struct hp_validator {
    const hp_graph *g;
    hp_dist *d;
    const hp_propagation *prop;
    const hp_mesh *mesh;
    int n; /* ranks (all hosted here; rank i is hp_dist_rank_at(d, i)) */
    double atol, rtol;
    int bf16; /* the program computes in bf16 (--dtype bf16) */
    hp_validate_hook hook;
    void *hook_user;
    hp_param_store ps; /* the reference's whole parameters */
    hp_pool *pool;
    hp_program *ref;
    int *first_use;       /* [g->nvals] the first global node consuming a value, -1 */
    int nlocal;           /* local values (the same on every rank) */
    int *sf_v;            /* [nlocal] the global value a local value stands for, -1 */
    hp_layout *sf_l;      /* [nlocal] the layout it holds that value in */
    unsigned char *seen;  /* [g->nnodes] global nodes checked this step */
    unsigned char *ran;   /* [g->nnodes] global nodes the reference ran this step */
    hp_validate_view *views; /* [n] */
    hp_tensor *t;            /* [n] the pieces of one value, per rank */
    uint64_t *sum;           /* [n] their checksums */
    double *buf;             /* scratch: assembled tensor and reduction terms */
    size_t cap;
    int stepped;
    hp_tensor *xin;          /* [n * maxxin] the views' extra inputs */
    int maxxin;
    const hp_tensor **xin_of; /* [n] rank r's row of xin */
    hp_tensor *ranges;       /* [n] the reduced gradient ranges of one unit of flat parts */
    hp_vparts parts;
};

/* ---- small helpers ---- */

static double elem_at(const hp_tensor *t, int64_t i) {
    switch (t->dtype) {
    case HP_F32: return ((const float *)t->data)[i];
    case HP_BF16: return hp_bf16_to_f32(((const uint16_t *)t->data)[i]);
    case HP_I32: return ((const int32_t *)t->data)[i];
    case HP_F64: return ((const double *)t->data)[i];
    }
    return 0;
}

static uint64_t checksum(const void *p, size_t n) {
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull; /* FNV-1a, 64 bit */
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

static hp_status reserve(hp_validator *v, size_t n) {
    if (n <= v->cap) return HP_OK;
    double *b = realloc(v->buf, n * sizeof(double));
    if (!b) return hp_errorf("validation: out of memory (%zu MB of scratch)", n * sizeof(double) >> 20);
    v->buf = b;
    v->cap = n;
    return HP_OK;
}

/* The flat index in `global` of element li of a piece (local shape, offset). */
static int64_t global_index(const hp_shape *global, const hp_shape *local, const int64_t *off, int64_t li) {
    int64_t c[HP_MAX_DIMS] = {0};
    for (int d = local->ndim - 1; d >= 0; d--) {
        c[d] = local->d[d] ? li % local->d[d] : 0;
        li = local->d[d] ? li / local->d[d] : 0;
    }
    int64_t gi = 0;
    for (int d = 0; d < global->ndim; d++) gi = gi * global->d[d] + c[d] + off[d];
    return gi;
}

/* "0,1,3": the ranks whose piece of value (shape, layout) holds element gi. */
static char *holders(char *buf, size_t n, const hp_validator *v, const hp_shape *shape, const hp_layout *l,
                     int64_t gi) {
    int64_t c[HP_MAX_DIMS] = {0};
    for (int d = shape->ndim - 1; d >= 0; d--) {
        c[d] = shape->d[d] ? gi % shape->d[d] : 0;
        gi = shape->d[d] ? gi / shape->d[d] : 0;
    }
    size_t at = 0;
    buf[0] = 0;
    for (int r = 0; r < v->n; r++) {
        hp_shape loc;
        int64_t off[HP_MAX_DIMS] = {0};
        hp_local_shape(&loc, off, shape, l, v->mesh, r);
        int in = 1;
        for (int d = 0; d < shape->ndim; d++) in &= c[d] >= off[d] && c[d] < off[d] + loc.d[d];
        if (!in || at + 12 >= n) continue;
        at += (size_t)snprintf(buf + at, n - at, "%s%d", at ? "," : "", r);
    }
    return buf;
}

/* "validation: <op>: '<tensor>' should be <layout> but <what>" */
static hp_status violation(const hp_validator *v, const char *op, int is_input, int gv, const hp_layout *l,
                           const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static hp_status violation(const hp_validator *v, const char *op, int is_input, int gv, const hp_layout *l,
                           const char *fmt, ...) {
    char what[512], lb[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return hp_errorf("validation: %s: %s'%s' should be %s%s but %s", op, is_input ? "input " : "", v->g->vals[gv].name,
                     is_input ? "consumed as " : "", hp_layout_str(lb, sizeof lb, l, v->mesh), what);
}

/* ---- the three checks of one value: t[r] is rank r's piece ---- */

static hp_status check_shapes(hp_validator *v, const char *op, int is_input, int gv, const hp_layout *l) {
    const hp_value *val = &v->g->vals[gv];
    for (int r = 0; r < v->n; r++) {
        hp_shape want;
        hp_local_shape(&want, NULL, &val->shape, l, v->mesh, r);
        char a[64], b[64];
        if (!hp_shape_eq(&want, &v->t[r].shape))
            return violation(v, op, is_input, gv, l, "rank %d holds local shape %s where the layout gives %s", r,
                             hp_shape_str(a, sizeof a, &v->t[r].shape), hp_shape_str(b, sizeof b, &want));
        if (v->t[r].dtype != val->dtype)
            return violation(v, op, is_input, gv, l, "rank %d holds %s where the tensor is %s", r,
                             hp_dtype_name(v->t[r].dtype), hp_dtype_name(val->dtype));
        if (!v->t[r].data && hp_shape_numel(&want) > 0)
            return violation(v, op, is_input, gv, l, "rank %d has no buffer for it", r);
    }
    return HP_OK;
}

static hp_status check_replicas(hp_validator *v, const char *op, int is_input, int gv, const hp_layout *l) {
    const hp_value *val = &v->g->vals[gv];
    size_t es = hp_dtype_size(val->dtype);
    for (int r = 0; r < v->n; r++)
        v->sum[r] = checksum(v->t[r].data, (size_t)hp_shape_numel(&v->t[r].shape) * es);
    for (int a = 0; a < v->mesh->ndim; a++) {
        if (l->p[a].kind != HP_REPLICATE || v->mesh->size[a] < 2) continue;
        for (int r = 0; r < v->n; r++) {
            int c[HP_MESH_MAX_DIMS];
            hp_mesh_coords(c, v->mesh, r);
            if (c[a] != 0) continue;
            for (int j = 1; j < v->mesh->size[a]; j++) {
                c[a] = j;
                int r2 = hp_mesh_rank(v->mesh, c);
                if (v->sum[r2] == v->sum[r]) continue;
                int64_t numel = hp_shape_numel(&v->t[r].shape), e = 0;
                const char *p = v->t[r].data, *q = v->t[r2].data;
                while (e < numel - 1 && !memcmp(p + (size_t)e * es, q + (size_t)e * es, es)) e++;
                hp_shape loc;
                int64_t off[HP_MAX_DIMS] = {0};
                hp_local_shape(&loc, off, &val->shape, l, v->mesh, r);
                return violation(v, op, is_input, gv, l, "ranks %d and %d differ at element %lld (%.7g vs %.7g)", r,
                                 r2, (long long)global_index(&val->shape, &loc, off, e), elem_at(&v->t[r], e),
                                 elem_at(&v->t[r2], e));
            }
        }
    }
    return HP_OK;
}

/* The piece of mesh coordinates c (Partial axes at 0) with its Partial terms
 * reduced in rank order, into work[level * ln ...]. */
static void reduce_terms(const hp_validator *v, double *work, int64_t ln, int level, int *c, const int *pax, int np,
                         const hp_layout *l) {
    double *out = work + (size_t)level * (size_t)ln;
    if (level == np) {
        const hp_tensor *t = &v->t[hp_mesh_rank(v->mesh, c)];
        for (int64_t e = 0; e < ln; e++) out[e] = elem_at(t, e);
        return;
    }
    int a = pax[level], k = v->mesh->size[a];
    hp_partial_op op = l->p[a].op;
    double *term = out + ln;
    for (int j = 0; j < k; j++) {
        c[a] = j;
        if (j == 0) {
            reduce_terms(v, work, ln, level + 1, c, pax, np, l);
            memcpy(out, term, sizeof(double) * (size_t)ln);
            continue;
        }
        reduce_terms(v, work, ln, level + 1, c, pax, np, l);
        for (int64_t e = 0; e < ln; e++)
            out[e] = op == HP_PARTIAL_MAX ? (term[e] > out[e] || isnan(term[e]) ? term[e] : out[e]) : out[e] + term[e];
    }
    c[a] = 0;
    if (op == HP_PARTIAL_AVG)
        for (int64_t e = 0; e < ln; e++) out[e] /= k;
}

/* The whole tensor from the ranks' pieces t[] by layout l, as doubles. */
static hp_status assemble(hp_validator *v, double **dst, const hp_shape *shape, const hp_layout *l) {
    int pax[HP_MESH_MAX_DIMS], np = 0;
    for (int a = 0; a < l->ndim; a++)
        if (l->p[a].kind == HP_PARTIAL) pax[np++] = a;
    int64_t numel = hp_shape_numel(shape);
    HP_TRY(reserve(v, (size_t)numel * (size_t)(np + 2)));
    *dst = v->buf;
    double *work = v->buf + numel;
    for (int r = 0; r < v->n; r++) {
        int c[HP_MESH_MAX_DIMS];
        hp_mesh_coords(c, v->mesh, r);
        int base = 1;
        for (int a = 0; a < l->ndim; a++) base &= l->p[a].kind == HP_SHARD || c[a] == 0;
        if (!base) continue;
        hp_shape loc;
        int64_t off[HP_MAX_DIMS] = {0};
        hp_local_shape(&loc, off, shape, l, v->mesh, r);
        int64_t ln = hp_shape_numel(&loc);
        if (ln == 0) continue;
        reduce_terms(v, work, ln, 0, c, pax, np, l);
        hp_piece_insert(*dst, work, sizeof(double), shape, &loc, off);
    }
    return HP_OK;
}

static const char *partial_verb(const hp_layout *l) {
    for (int a = 0; a < l->ndim; a++)
        if (l->p[a].kind == HP_PARTIAL)
            return l->p[a].op == HP_PARTIAL_SUM   ? "add up to"
                   : l->p[a].op == HP_PARTIAL_AVG ? "average to"
                                                  : "reduce (max) to";
    return NULL;
}

static hp_status check_values(hp_validator *v, const char *op, int gv, const hp_layout *l, const void *ref) {
    const hp_value *val = &v->g->vals[gv];
    double *got;
    HP_TRY(assemble(v, &got, &val->shape, l));
    hp_tensor rt = {val->dtype, val->shape, (void *)ref};
    int64_t numel = hp_shape_numel(&val->shape), worst = -1;
    double maxref = 0, maxdiff = 0;
    for (int64_t e = 0; e < numel; e++) {
        double a = got[e], b = elem_at(&rt, e);
        double d = isnan(a) && isnan(b) ? 0 : isnan(a) || isnan(b) ? INFINITY : fabs(a - b);
        if (!isnan(b)) maxref = fmax(maxref, fabs(b));
        if (d > maxdiff) maxdiff = d, worst = e;
    }
    /* bf16 programs: values are rounded to 8 significant bits by every rank
     * (a Partial term each, then their sum), and every value computed from
     * them inherits that: a few bf16 ulps of the largest value */
    double rtol = v->bf16 ? fmax(v->rtol, HP_VALIDATE_RTOL_BF16) : v->rtol;
    double tol = val->dtype == HP_I32 ? 0 : v->atol + rtol * maxref;
    if (worst < 0 || maxdiff <= tol) return HP_OK;
    char rk[256];
    holders(rk, sizeof rk, v, &val->shape, l, worst);
    double a = got[worst], b = elem_at(&rt, worst);
    const char *verb = partial_verb(l);
    if (verb)
        return violation(v, op, 0, gv, l,
                         "the Partial terms of ranks %s %s %.7g where one rank computes %.7g (element %lld; max |diff| "
                         "%.3g > tolerance %.3g)",
                         rk, verb, a, b, (long long)worst, maxdiff, tol);
    return violation(v, op, 0, gv, l,
                     "the pieces of ranks %s hold %.7g where one rank computes %.7g (element %lld; max |diff| %.3g > "
                     "tolerance %.3g)",
                     rk, a, b, (long long)worst, maxdiff, tol);
}

/* All three checks of global value gv in layout l (pieces in v->t). A value
 * whose rows the ranks hold in orders of their own (prop->own_order: a MoE
 * layer's dispatched or exchanged rows) has no piece of the global tensor to
 * compare: its shapes and replicas are checked, and what it becomes once the
 * rows are put back per token is compared downstream. */
static hp_status check_value(hp_validator *v, const char *op, int gv, const hp_layout *l, const void *ref,
                             hp_validate_report *rep) {
    HP_TRY(check_shapes(v, op, 0, gv, l));
    HP_TRY(check_replicas(v, op, 0, gv, l));
    if (!ref) return HP_OK;
    if (v->prop->own_order[gv]) {
        rep->nown++;
        return HP_OK;
    }
    rep->nvalues++;
    return check_values(v, op, gv, l, ref);
}

/* ---- creation ---- */

static hp_status check_structure(hp_validator *v) {
    const hp_dist_rank *r0 = hp_dist_rank_at(v->d, 0);
    for (int i = 1; i < v->n; i++) {
        const hp_dist_rank *r = hp_dist_rank_at(v->d, i);
        /* (the optimizer phase may differ: a rank's pieces of flat parts are its own) */
        int same = r->c.rg.g->nnodes == r0->c.rg.g->nnodes;
        for (int k = 0; same && k < r0->c.rg.g->nnodes; k++)
            same = r->c.rg.g->nodes[k].op == r0->c.rg.g->nodes[k].op && r->c.rg.node_of[k] == r0->c.rg.node_of[k] &&
                   (r0->c.rg.g->nodes[k].phase == HP_PHASE_OPT || r->c.rg.g->nodes[k].nxin == r0->c.rg.g->nodes[k].nxin);
        for (int ph = 0; same && ph < 2; ph++) {
            int ns = hp_program_num_steps(r0->prog, (hp_phase)ph);
            same = hp_program_num_steps(r->prog, (hp_phase)ph) == ns;
            for (int j = 0; same && j < ns; j++)
                same = hp_program_step_node(r->prog, (hp_phase)ph, j) - r->c.rg.g->nodes ==
                       hp_program_step_node(r0->prog, (hp_phase)ph, j) - r0->c.rg.g->nodes;
        }
        if (!same)
            return hp_errorf("validation: the programs of ranks 0 and %d differ in structure; lockstep checks need the "
                             "same local steps on every rank",
                             i);
    }
    return HP_OK;
}

/* What each local value stands for: the global value and its layout. */
static void stand_for(hp_validator *v) {
    const hp_dist_rank *r0 = hp_dist_rank_at(v->d, 0);
    const hp_graph *lg = r0->c.rg.g;
    for (int lv = 0; lv < lg->nvals; lv++) {
        v->sf_v[lv] = r0->c.rg.global_of[lv];
        if (v->sf_v[lv] >= 0) v->sf_l[lv] = v->prop->val[v->sf_v[lv]];
    }
    for (int i = 0; i < lg->nnodes; i++) {
        const hp_node *n = &lg->nodes[i];
        hp_coll_desc d;
        if (!hp_coll_describe(&d, lg, n) || d.check != HP_COLL_CHECK_VALUE || n->out[0] < 0) continue;
        int src = n->in[0], dst = n->out[0];
        if (v->sf_v[src] < 0 || n->a.i[0] < 0 || n->a.i[0] >= r0->c.rg.ctx.nplans) continue;
        v->sf_v[dst] = v->sf_v[src];
        v->sf_l[dst] = r0->c.rg.ctx.plans[n->a.i[0]].to;
    }
}

hp_status hp_validate_create(hp_validator **out, const hp_validate_config *cfg) {
    *out = NULL;
    hp_comm_world *w = hp_dist_world(cfg->d);
    int first = 0, count = 0;
    hp_comm_hosted_ranks(w, &first, &count);
    if (count != hp_comm_world_size(w) || hp_dist_nranks(cfg->d) != hp_mesh_size(hp_dist_mesh(cfg->d)))
        return hp_errorf("validation mode needs all ranks in one process (this process hosts %d of %d ranks); run "
                         "--validate without mpirun",
                         count, hp_comm_world_size(w));
    if (hp_dist_rank_at(cfg->d, 0)->c.rg.nglobal != cfg->g->nvals)
        return hp_errorf("validation: the graph is not the one the distributed program was compiled from");
    const hp_propagation *prop = hp_dist_propagation(cfg->d);
    if (prop->differs_node >= 0) {
        const hp_mesh *m = hp_dist_mesh(cfg->d);
        return hp_errorf("validation: %s cannot be checked against one rank: %s ('%s' of %d ranks)",
                         cfg->g->nodes[prop->differs_node].name, prop->differs_why, m->name[prop->differs_axis],
                         m->size[prop->differs_axis]);
    }
    hp_validator *v = calloc(1, sizeof *v);
    if (!v) return hp_errorf("validation: out of memory");
    v->g = cfg->g;
    v->d = cfg->d;
    v->prop = hp_dist_propagation(cfg->d);
    v->mesh = hp_dist_mesh(cfg->d);
    v->n = count;
    v->atol = cfg->atol > 0 ? cfg->atol : HP_VALIDATE_ATOL;
    v->rtol = cfg->rtol > 0 ? cfg->rtol : HP_VALIDATE_RTOL;
    for (int i = 0; i < v->g->nvals; i++) v->bf16 |= v->g->vals[i].dtype == HP_BF16;
    v->nlocal = hp_dist_rank_at(cfg->d, 0)->c.rg.g->nvals;
    v->first_use = malloc(sizeof(int) * (size_t)(v->g->nvals + 1));
    v->sf_v = malloc(sizeof(int) * (size_t)(v->nlocal + 1));
    v->sf_l = calloc((size_t)v->nlocal + 1, sizeof *v->sf_l);
    v->seen = calloc((size_t)v->g->nnodes + 1, 1);
    v->ran = calloc((size_t)v->g->nnodes + 1, 1);
    v->views = calloc((size_t)v->n, sizeof *v->views);
    v->t = calloc((size_t)v->n, sizeof *v->t);
    v->sum = calloc((size_t)v->n, sizeof *v->sum);
    hp_status st = HP_OK;
    if (!v->first_use || !v->sf_v || !v->sf_l || !v->seen || !v->ran || !v->views || !v->t || !v->sum)
        st = hp_errorf("validation: out of memory");
    if (!st) st = check_structure(v);
    const hp_graph *lg0 = hp_dist_rank_at(cfg->d, 0)->c.rg.g;
    for (int i = 0; !st && i < lg0->nnodes; i++)
        if (lg0->nodes[i].phase != HP_PHASE_OPT && lg0->nodes[i].nxin > v->maxxin) v->maxxin = lg0->nodes[i].nxin;
    if (!st) {
        v->xin = calloc((size_t)v->n * (size_t)(v->maxxin + 1), sizeof *v->xin);
        v->xin_of = calloc((size_t)v->n, sizeof *v->xin_of);
        v->ranges = calloc((size_t)v->n, sizeof *v->ranges);
        if (!v->xin || !v->xin_of || !v->ranges) st = hp_errorf("validation: out of memory");
        for (int r = 0; !st && r < v->n; r++) v->xin_of[r] = v->xin + (size_t)r * (size_t)(v->maxxin + 1);
    }
    if (!st) {
        for (int i = 0; i < v->g->nvals; i++) v->first_use[i] = -1;
        for (int i = v->g->nnodes - 1; i >= 0; i--)
            for (int k = 0; k < v->g->nodes[i].nin; k++) v->first_use[v->g->nodes[i].in[k]] = i;
        stand_for(v);
        st = hp_param_store_create(&v->ps, v->g);
    }
    if (!st) st = hp_pool_create(&v->pool, cfg->threads > 0 ? cfg->threads : 1);
    if (!st) st = hp_program_create(&v->ref, v->g, &v->ps, v->pool);
    if (!st) st = hp_vparts_init(&v->parts, v->d, v->g, v->ref, &v->ps, v->atol, v->rtol);
    if (st) {
        hp_validate_destroy(v);
        return hp_error_wrap(st, "validation: the 1-rank reference");
    }
    *out = v;
    return HP_OK;
}

void hp_validate_destroy(hp_validator *v) {
    if (!v) return;
    hp_program_destroy(v->ref);
    hp_pool_destroy(v->pool);
    hp_param_store_free(&v->ps);
    free(v->first_use), free(v->sf_v), free(v->sf_l), free(v->seen), free(v->ran);
    free(v->views), free(v->t), free(v->sum), free(v->buf);
    free(v->xin), free(v->xin_of), free(v->ranges);
    hp_vparts_free(&v->parts);
    free(v);
}

void hp_validate_set_hook(hp_validator *v, hp_validate_hook fn, void *user) {
    v->hook = fn;
    v->hook_user = user;
}

/* ---- the step ---- */

static const char *user_of(const hp_validator *v, int gv) {
    int n = v->first_use[gv];
    return n >= 0 ? v->g->nodes[n].name : "(unused)";
}

/* Parameters, inputs and constants as the ranks hold them: checked, then the
 * parameters and inputs gathered into the reference. */
static hp_status check_leaves(hp_validator *v) {
    const hp_graph *g = v->g;
    for (int gv = 0; gv < g->nvals; gv++) {
        const hp_value *val = &g->vals[gv];
        if (val->producer >= 0 || (val->kind != HP_V_PARAM && val->kind != HP_V_INPUT && val->kind != HP_V_CONST))
            continue;
        const hp_layout *l = &v->prop->val[gv];
        for (int r = 0; r < v->n; r++) {
            hp_dist_rank *R = hp_dist_rank_at(v->d, r);
            int lv = R->c.rg.map[gv];
            v->t[r] = (hp_tensor){R->c.rg.g->vals[lv].dtype, R->c.rg.g->vals[lv].shape, hp_program_data(R->prog, lv)};
        }
        HP_TRY(check_shapes(v, user_of(v, gv), 0, gv, l));
        HP_TRY(hp_vparts_leaf(&v->parts, v->t, gv)); /* stores cut to their supernode's parts: whole copies */
        HP_TRY(check_replicas(v, user_of(v, gv), 0, gv, l));
        if (val->kind == HP_V_CONST) continue;
        if (hp_layout_has_partial(l))
            return violation(v, user_of(v, gv), 0, gv, l, "a Partial parameter or input cannot be gathered");
        void *dst = hp_program_data(v->ref, gv);
        for (int r = 0; r < v->n; r++) {
            hp_shape loc;
            int64_t off[HP_MAX_DIMS] = {0};
            hp_local_shape(&loc, off, &val->shape, l, v->mesh, r);
            hp_piece_insert(dst, v->t[r].data, hp_dtype_size(val->dtype), &val->shape, &loc, off);
        }
    }
    return HP_OK;
}

typedef struct {
    hp_phase ph;
    int step;
} step_arg;

static hp_status run_one(hp_dist_rank *r, void *c_) {
    const step_arg *a = c_;
    return hp_program_run_range(r->prog, a->ph, a->step, a->step + 1);
}

static void fill_views(hp_validator *v, hp_phase ph, int j) {
    for (int r = 0; r < v->n; r++) {
        hp_dist_rank *R = hp_dist_rank_at(v->d, r);
        hp_validate_view *w = &v->views[r];
        memset(w, 0, sizeof *w);
        const hp_node *n = hp_program_step_node(R->prog, ph, j);
        const hp_graph *lg = R->c.rg.g;
        w->rank = R->rank;
        w->local = lg;
        w->node = n;
        w->global_node = R->c.rg.node_of[n - lg->nodes];
        for (int k = 0; k < n->nin; k++) {
            const hp_value *lv = &lg->vals[n->in[k]];
            w->in[k] = (hp_tensor){lv->dtype, lv->shape, hp_program_data(R->prog, n->in[k])};
        }
        for (int k = 0; k < n->nout; k++) {
            if (n->out[k] < 0) continue;
            const hp_value *lv = &lg->vals[n->out[k]];
            w->out[k] = (hp_tensor){lv->dtype, lv->shape, hp_program_data(R->prog, n->out[k])};
        }
        w->xin = v->xin + (size_t)r * (size_t)(v->maxxin + 1);
        for (int k = 0; k < n->nxin && k < v->maxxin; k++) {
            int x = lg->xin[n->xin_at + k];
            w->xin[k] = (hp_tensor){lg->vals[x].dtype, lg->vals[x].shape, hp_program_data(R->prog, x)};
        }
        if (v->hook) v->hook(v->hook_user, w);
    }
}

/* The inputs of local node n (global node gi): each in the layout, and the
 * local shape, that gi consumes it in. */
static hp_status check_inputs(hp_validator *v, const hp_node *n, int gi) {
    const hp_node *gn = &v->g->nodes[gi];
    for (int k = 0; k < n->nin; k++) {
        int lv = n->in[k], gv = v->sf_v[lv];
        if (gv < 0) continue;
        int match = -1, any = -1;
        for (int q = 0; q < gn->nin; q++) {
            if (gn->in[q] != gv) continue;
            if (any < 0) any = q;
            if (hp_layout_eq(&v->prop->need[gi][q], &v->sf_l[lv])) match = q;
        }
        if (any < 0) continue; /* an operator's own helper value */
        if (match < 0) {
            char lb[96];
            return violation(v, gn->name, 1, gv, &v->prop->need[gi][any], "the ranks feed it as %s",
                             hp_layout_str(lb, sizeof lb, &v->sf_l[lv], v->mesh));
        }
        for (int r = 0; r < v->n; r++) v->t[r] = v->views[r].in[k];
        HP_TRY(check_shapes(v, gn->name, 1, gv, &v->prop->need[gi][match]));
    }
    return HP_OK;
}

static hp_status check_step(hp_validator *v, hp_validate_report *rep) {
    const hp_node *n = v->views[0].node;
    int gi = v->views[0].global_node;
    if (gi >= 0) {
        HP_TRY(check_inputs(v, n, gi));
        const char *op = v->g->nodes[gi].name;
        for (int k = 0; k < n->nout; k++) {
            int lv = n->out[k];
            int gv = lv >= 0 ? v->sf_v[lv] : -1;
            if (gv < 0) continue;
            for (int r = 0; r < v->n; r++) v->t[r] = v->views[r].out[k];
            HP_TRY(check_value(v, op, gv, &v->sf_l[lv], hp_program_data(v->ref, gv), rep));
        }
        if (!v->seen[gi]) rep->nops++;
        v->seen[gi] = 1;
        return HP_OK;
    }
    hp_coll_desc d; /* a collective of the rank's own: what its descriptor says to compare */
    if (!hp_coll_describe(&d, hp_dist_rank_at(v->d, 0)->c.rg.g, n)) return HP_OK;
    if (d.check == HP_COLL_CHECK_PARAMS) {
        HP_TRY(hp_vparts_params(&v->parts, n->name, d.unit, v->xin_of));
    } else if (d.check == HP_COLL_CHECK_SHARD && hp_vparts_reduced(&v->parts, &d)) {
        for (int r = 0; r < v->n; r++) v->ranges[r] = v->views[r].in[d.check_in];
        HP_TRY(hp_vparts_ranges(&v->parts, n->name, d.unit, v->ranges));
    } else if (d.check == HP_COLL_CHECK_VALUE && n->out[0] >= 0 && v->sf_v[n->out[0]] >= 0) {
        int src = n->in[0], dst = n->out[0], gv = v->sf_v[dst];
        for (int r = 0; r < v->n; r++) v->t[r] = v->views[r].in[0];
        if (v->sf_v[src] >= 0) HP_TRY(check_shapes(v, n->name, 1, gv, &v->sf_l[src]));
        for (int r = 0; r < v->n; r++) v->t[r] = v->views[r].out[0];
        HP_TRY(check_value(v, n->name, gv, &v->sf_l[dst], hp_program_data(v->ref, gv), rep));
        rep->nredist++;
    }
    return HP_OK;
}

static hp_status run_phase(hp_validator *v, hp_phase ph, hp_validate_report *rep) {
    hp_dist_rank *r0 = hp_dist_rank_at(v->d, 0);
    int nsteps = hp_program_num_steps(r0->prog, ph), nref = hp_program_num_steps(v->ref, ph), cursor = 0;
    int loss_node = v->g->vals[v->g->loss].producer;
    for (int j = 0; j < nsteps; j++) {
        const hp_node *ln = hp_program_step_node(r0->prog, ph, j);
        int gi = r0->c.rg.node_of[ln - r0->c.rg.g->nodes];
        /* the reference catches up to (and runs) global node gi, once */
        while (gi >= 0 && !v->ran[gi] && cursor < nref) {
            int at = (int)(hp_program_step_node(v->ref, ph, cursor) - v->g->nodes);
            HP_TRY(hp_program_run_range(v->ref, ph, cursor, cursor + 1));
            v->ran[at] = 1;
            cursor++;
            if (at == loss_node) rep->ref_loss = ((const float *)hp_program_data(v->ref, v->g->loss))[0];
            if (at == gi) break;
        }
        step_arg a = {ph, j};
        HP_TRY(hp_dist_run(v->d, run_one, &a));
        fill_views(v, ph, j);
        HP_TRY(check_step(v, rep));
    }
    for (; cursor < nref; cursor++) {
        int at = (int)(hp_program_step_node(v->ref, ph, cursor) - v->g->nodes);
        HP_TRY(hp_program_run_range(v->ref, ph, cursor, cursor + 1));
        if (at == loss_node) rep->ref_loss = ((const float *)hp_program_data(v->ref, v->g->loss))[0];
    }
    return HP_OK;
}

hp_status hp_validate_step(hp_validator *v, hp_validate_report *rep) {
    hp_validate_report_free(rep);
    rep->worst_index = -1;
    v->stepped = 0;
    memset(v->seen, 0, (size_t)v->g->nnodes);
    memset(v->ran, 0, (size_t)v->g->nnodes);
    HP_TRY(check_leaves(v));
    HP_TRY(run_phase(v, HP_PHASE_FWD, rep));
    HP_TRY(run_phase(v, HP_PHASE_BWD, rep));
    for (int i = 0; i < v->g->nnodes; i++) rep->nunchecked += !v->seen[i];
    hp_dist_rank *r0 = hp_dist_rank_at(v->d, 0);
    rep->loss = ((const float *)hp_program_data(r0->prog, r0->c.rg.loss))[0];
    v->stepped = 1;
    return HP_OK;
}

hp_status hp_validate_gradients(hp_validator *v, hp_validate_report *rep) {
    if (!v->stepped) return hp_errorf("validation: the gradient check needs a checked step first");
    free(rep->grads);
    rep->grads = calloc((size_t)v->ps.n + 1, sizeof *rep->grads);
    if (!rep->grads) return hp_errorf("validation: out of memory");
    rep->ngrads = 0;
    rep->worst = 0;
    rep->worst_index = -1;
    const float *ref = hp_program_grads(v->ref);
    for (int i = 0; i < v->ps.n; i++) {
        int gv = hp_graph_find(v->g, v->ps.name[i]);
        const hp_layout *l = &v->prop->val[gv];
        int parts = 0;
        double parts_err = 0;
        HP_TRY(hp_vparts_grad_err(&parts_err, &parts, &v->parts, gv));
        if (parts) { /* held as flat parts: the ranks' reduced ranges hold the gradient */
            hp_validate_grad *e = &rep->grads[rep->ngrads++];
            snprintf(e->name, sizeof e->name, "%s", v->ps.name[i]);
            snprintf(e->layout, sizeof e->layout, "fsdp shards");
            e->rel_err = parts_err;
            if (rep->worst_index < 0 || e->rel_err > rep->worst) rep->worst = e->rel_err, rep->worst_index = i;
            continue;
        }
        for (int r = 0; r < v->n; r++) {
            hp_dist_rank *R = hp_dist_rank_at(v->d, r);
            int k = hp_param_store_find(&R->ps, v->ps.name[i]);
            if (k < 0) return hp_errorf("validation: rank %d has no parameter '%s'", r, v->ps.name[i]);
            v->t[r] = (hp_tensor){HP_F32, R->ps.shape[k], hp_program_grads(R->prog) + R->ps.offset[k]};
        }
        const char *op = v->g->vals[gv].grad >= 0 && v->g->vals[v->g->vals[gv].grad].producer >= 0
                             ? v->g->nodes[v->g->vals[v->g->vals[gv].grad].producer].name
                             : v->ps.name[i];
        HP_TRY(check_shapes(v, op, 0, gv, l));
        double *got;
        HP_TRY(assemble(v, &got, &v->ps.shape[i], l));
        const float *b = ref + v->ps.offset[i];
        double maxref = 0, maxdiff = 0;
        for (size_t e = 0; e < hp_param_numel(&v->ps, i); e++) {
            double d = fabs(got[e] - b[e]);
            maxdiff = isnan(d) ? INFINITY : fmax(maxdiff, d);
            maxref = fmax(maxref, fabs(b[e]));
        }
        hp_validate_grad *e = &rep->grads[rep->ngrads++];
        snprintf(e->name, sizeof e->name, "%s", v->ps.name[i]);
        hp_layout_str(e->layout, sizeof e->layout, l, v->mesh);
        e->rel_err = maxref > 0 ? maxdiff / maxref : maxdiff;
        if (rep->worst_index < 0 || e->rel_err > rep->worst) rep->worst = e->rel_err, rep->worst_index = i;
    }
    return HP_OK;
}

const float *hp_validate_ref_grad(const hp_validator *v, const char *name, int64_t *n) {
    int i = v->stepped ? hp_param_store_find(&v->ps, name) : -1;
    if (i < 0) return NULL;
    *n = (int64_t)hp_param_numel(&v->ps, i);
    return hp_program_grads(v->ref) + v->ps.offset[i];
}

const hp_param_store *hp_validate_ref_store(const hp_validator *v) { return &v->ps; }

void hp_validate_report_free(hp_validate_report *rep) {
    free(rep->updates);
    free(rep->grads);
    memset(rep, 0, sizeof *rep);
    rep->worst_index = -1;
}
