/* optim/phase: the optimizer phase's nodes and their kernels (see the header). */
#include "optim/phase.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "optim/adamw.h"
#include "optim/clip.h"
#include "optim/muon.h"
#include "optim/newton_schulz.h"
#include "optim/sumsq_exact.h"

/* Default cfg.muon_batch_floats (as the optimizer object). */
#define MUON_CHUNK_FLOATS (1L << 22)

typedef struct {
    float max_norm, beta1, beta2, eps, wd;
    int decay_vectors;
} adamw_cfg;

typedef struct {
    float max_norm, beta, wd, scale;
    int momentum, nesterov;
    long rows, cols, chunk, nmats;
    hp_ns_config ns;
} muon_cfg;

static size_t round8(size_t n) { return (n + 7) / 8 * 8; }

/* ---- grad_sumsq: in[0] weights f32 [n], in[1 + k] gradient k; out[0] f64 [1] ---- */

static long blocks_of(long n) { return (n + HP_CLIP_BLOCK - 1) / HP_CLIP_BLOCK; }

static size_t sumsq_scratch(const hp_graph *g, const hp_node *n, int nt) {
    (void)nt;
    size_t blocks = 0;
    for (int k = 0; k < n->nxin; k++) blocks += (size_t)blocks_of((long)hp_val_numel(g, g->xin[n->xin_at + k]));
    /* doubles of block sums, grad pointers, sizes (8 bytes each), in floats */
    return 2 * (blocks + 2 * (size_t)n->nxin) + 2;
}

static void sumsq_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    int cnt = n->nxin;
    long blocks = 0;
    for (int i = 0; i < cnt; i++) blocks += blocks_of((long)hp_shape_numel(&in[1 + i].shape));
    double *partials = (double *)(void *)k->scratch;
    const float **grads = (const float **)(void *)(partials + blocks);
    long *sizes = (long *)(void *)(grads + cnt);
    for (int i = 0; i < cnt; i++) {
        grads[i] = in[1 + i].data;
        sizes[i] = (long)hp_shape_numel(&in[1 + i].shape);
    }
    *(double *)out[0].data =
        hp_grad_sumsq_weighted(k->pool, grads, (const float *)in[0].data, partials, sizes, cnt);
}

/* Elements of the node's extra inputs from index `first` on, every `every`-th (a tensor group's first member). */
static double xin_numel(const hp_graph *g, const hp_node *n, int first, int every) {
    double e = 0;
    for (int k = first; k < n->nxin; k += every) e += (double)hp_val_numel(g, g->xin[n->xin_at + k]);
    return e;
}

/* a weighted square and a sum per gradient element; each element read once */
static double sumsq_flops(const hp_graph *g, const hp_node *n) { return 3.0 * xin_numel(g, n, 0, 1); }
static double sumsq_bytes(const hp_graph *g, const hp_node *n) { return 4.0 * xin_numel(g, n, 0, 1); }

const hp_opdef hp_op_grad_sumsq = {.name = "grad_sumsq", .nout = 1, .run = sumsq_run, .scratch = sumsq_scratch,
                                   .flops = sumsq_flops, .bytes = sumsq_bytes};

/* ---- adamw_update: in[0] sumsq f64, in[1] lr f32 [2], in[2] step i32 [1],
 * then (param, grad, m, v) per tensor ---- */

static size_t adamw_scratch(const hp_graph *g, const hp_node *n, int nt) {
    (void)g, (void)nt;
    return (sizeof(hp_adamw_tensor) * (size_t)(n->nxin / 4 + 1) + 3) / 4;
}

static void adamw_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)out;
    const adamw_cfg *c = hp_graph_blob_at(k->graph, (long)n->a.i[0]);
    const unsigned char *decays = hp_graph_blob_at(k->graph, (long)n->a.i[1]); /* per tensor: weight decay on */
    int cnt = n->nxin / 4;
    hp_adamw_tensor *t = (hp_adamw_tensor *)(void *)k->scratch;
    long total = 0;
    for (int i = 0; i < cnt; i++) {
        const hp_tensor *x = &in[3 + 4 * i];
        long numel = (long)hp_shape_numel(&x[0].shape);
        float wd = decays[i] ? c->wd : 0.0f;
        t[i] = (hp_adamw_tensor){x[0].data, x[2].data, x[3].data, x[1].data, numel, wd};
        total += numel;
    }
    double ss = *(const double *)in[0].data;
    if (!isfinite(ss)) return; /* a non-finite gradient: the step is skipped (the trainer reports it) */
    float scale = hp_clip_scale(sqrt(ss), c->max_norm);
    const float *lr = in[1].data;
    long step = *(const int32_t *)in[2].data;
    hp_adamw_hparams hp = {c->beta1, c->beta2, c->eps};
    hp_adamw_update_many_scaled(k->pool, t, cnt, total, lr[0], &hp, step, scale);
}

/* per parameter: the moments' two updates, their bias corrections, the square root, the step and the decay
 * (about 14 operations); param, grad, m, v read and param, m, v written (7 floats) */
static double adamw_flops(const hp_graph *g, const hp_node *n) { return 14.0 * xin_numel(g, n, 0, 4); }
static double adamw_bytes(const hp_graph *g, const hp_node *n) { return 28.0 * xin_numel(g, n, 0, 4); }

const hp_opdef hp_op_adamw_update = {.name = "adamw_update", .nout = 0, .run = adamw_run, .scratch = adamw_scratch,
                                     .flops = adamw_flops, .bytes = adamw_bytes};

/* ---- muon_update: in[0..2] as adamw, then (param, grad, m) per tensor, every
 * tensor a matrix or a stack of rows x cols matrices (any number of leading dims) ---- */

static size_t muon_scratch(const hp_graph *g, const hp_node *n, int nt) {
    (void)nt;
    const muon_cfg *c = hp_graph_blob_at(g, (long)n->a.i[0]);
    size_t u = (size_t)(c->chunk * c->rows * c->cols);
    return round8(u) + hp_newton_schulz_batched_scratch(c->chunk, c->rows, c->cols);
}

/* a stack's matrices (every dim but the last two; optim/route.h) */
static long mats_of(const hp_shape *s) { return (long)hp_optim_stack_count(s); }

static void muon_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)out;
    const muon_cfg *c = hp_graph_blob_at(k->graph, (long)n->a.i[0]);
    long per = c->rows * c->cols;
    float *u = k->scratch, *ns = k->scratch + round8((size_t)(c->chunk * per));
    if (!isfinite(*(const double *)in[0].data)) return; /* skipped, as AdamW's */
    float scale = hp_clip_scale(sqrt(*(const double *)in[0].data), c->max_norm);
    float lr = ((const float *)in[1].data)[1];
    int pi = 0;  /* tensor of the next matrix */
    long pj = 0; /* its matrix index */
    for (long a = 0; a < c->nmats; a += c->chunk) {
        long cnt = c->nmats - a < c->chunk ? c->nmats - a : c->chunk;
        int qi = pi;
        long qj = pj;
        for (long q = 0; q < cnt; q++) {
            const hp_tensor *x = &in[3 + 3 * qi];
            hp_muon_momentum_update_scaled(k->pool, u + q * per, (float *)x[2].data + qj * per,
                                           (const float *)x[1].data + qj * per, per, c->beta,
                                           (hp_muon_momentum)c->momentum, c->nesterov, scale);
            if (++qj == mats_of(&x[0].shape)) qi++, qj = 0;
        }
        hp_newton_schulz_batched(k->pool, u, u, ns, cnt, c->rows, c->cols, &c->ns);
        for (long q = 0; q < cnt; q++) {
            const hp_tensor *x = &in[3 + 3 * pi];
            hp_muon_apply(k->pool, (float *)x[0].data + pj * per, u + q * per, per, lr, c->wd, c->scale);
            if (++pj == mats_of(&x[0].shape)) pi++, pj = 0;
        }
    }
}

/* Newton-Schulz on an r x c iterate (r <= c) per step: X X^T (2 r^2 c), A A (2 r^3), B X (2 r^2 c) and the
 * combinations; the momentum and the update about 8 operations an element. Bytes: param, grad, m read, param
 * and m written, the iterate's buffers once a step. */
static double muon_flops(const hp_graph *g, const hp_node *n) {
    const muon_cfg *c = hp_graph_blob_at(g, (long)n->a.i[0]);
    double r = (double)(c->rows < c->cols ? c->rows : c->cols), q = (double)(c->rows < c->cols ? c->cols : c->rows);
    double per_mat = c->ns.steps * (4.0 * r * r * q + 2.0 * r * r * r + 3.0 * r * q) + 8.0 * r * q;
    return per_mat * (double)c->nmats;
}
static double muon_bytes(const hp_graph *g, const hp_node *n) {
    const muon_cfg *c = hp_graph_blob_at(g, (long)n->a.i[0]);
    double e = (double)c->rows * (double)c->cols * (double)c->nmats;
    return 4.0 * e * (5.0 + 3.0 * c->ns.steps);
}

const hp_opdef hp_op_muon_update = {.name = "muon_update", .nout = 0, .run = muon_run, .scratch = muon_scratch,
                                    .flops = muon_flops, .bytes = muon_bytes};

/* ---- emitting ---- */

hp_status hp_optim_phase_norm(hp_optim_phase_io *io, hp_graph *g, const hp_optim_phase_param *params, int n,
                              int exact) {
    memset(io, 0, sizeof *io);
    io->lr = hp_graph_value(g, HP_V_INPUT, HP_F32, hp_shape1(2), "opt.lr");
    io->step = hp_graph_value(g, HP_V_INPUT, HP_I32, hp_shape1(1), "opt.step");
    io->sumsq_local =
        hp_graph_value(g, HP_V_ACT, HP_F64, hp_shape1(exact ? HP_SUMSQ_EXACT_WORDS : 1), "opt.sumsq.local");
    float *w = malloc(sizeof(float) * (size_t)(n ? n : 1));
    int *grads = malloc(sizeof(int) * (size_t)(n ? n : 1));
    if (!w || !grads) {
        free(w), free(grads);
        return hp_errorf("optimizer phase: out of memory");
    }
    for (int k = 0; k < n; k++) {
        w[k] = 1.0f / (float)params[k].replicas;
        grads[k] = params[k].grad;
        if (exact && hp_sumsq_exact_shift(w[k]) < 0) {
            int r = params[k].replicas;
            free(w), free(grads);
            return hp_errorf("optimizer phase: the exact gradient norm (deterministic mode) needs a power-of-two "
                             "replica count, gradient '%s' has %d", g->vals[params[k].grad].name, r);
        }
    }
    int wv = hp_graph_const(g, "opt.clip_weights", HP_F32, hp_shape1(n ? n : 1), w);
    if (wv >= 0)
        hp_graph_node_list(g, exact ? &hp_op_grad_sumsq_exact : &hp_op_grad_sumsq, &wv, 1, grads, n, &io->sumsq_local,
                           1, NULL, HP_PHASE_OPT);
    free(w), free(grads);
    if (io->sumsq_local >= 0) g->vals[io->sumsq_local].persistent = 1; /* read after the step (the norm) */
    io->sumsq = io->sumsq_local;
    return hp_graph_error(g);
}

void hp_optim_phase_lrs(float *out, const hp_optim_config *cfg, float lr) {
    double ratio = cfg->lr > 0.0f ? (double)cfg->muon_lr / (double)cfg->lr : 0.0;
    out[0] = lr;
    out[1] = (float)((double)lr * ratio);
}

static int owner_of(const hp_optim_phase_param *p) { return p->owner >= 0 ? p->owner : p->param; }

int hp_optim_state_value(hp_graph *g, const hp_optim_phase_param *p, const char *prefix) {
    int own = owner_of(p);
    char nm[HP_NAME_LEN];
    snprintf(nm, sizeof nm, "%s%.*s", prefix, (int)(HP_NAME_LEN - 1 - strlen(prefix)), g->vals[own].name);
    int v = hp_graph_value(g, HP_V_STATE, HP_F32, g->vals[p->param].shape, nm);
    if (v >= 0) {
        g->vals[v].state_of = own;
        g->vals[v].no_grad = 1;
    }
    return v;
}

static int by_muon_group(const void *x, const void *y) {
    const long *a = x, *b = y; /* (-size, rows, order) */
    for (int k = 0; k < 3; k++)
        if (a[k] != b[k]) return a[k] < b[k] ? -1 : 1;
    return 0;
}

static hp_status emit_muon(hp_optim_phase_io *io, hp_graph *g, const hp_optim_config *cfg, float max_norm,
                           const hp_optim_phase_param *params, const hp_opt_kind *kinds, int n) {
    long *keys = malloc(sizeof(long) * 3 * (size_t)(n ? n : 1));
    int *xin = malloc(sizeof(int) * 3 * (size_t)(n ? n : 1));
    if (!keys || !xin) {
        free(keys), free(xin);
        return hp_errorf("optimizer phase: out of memory");
    }
    int nm = 0;
    for (int k = 0; k < n; k++) {
        if (kinds[k] != HP_OPT_MUON) continue;
        const hp_shape *s = &g->vals[params[k].param].shape;
        long rows = s->d[s->ndim - 2], cols = s->d[s->ndim - 1];
        keys[3 * nm] = -rows * cols;
        keys[3 * nm + 1] = rows;
        keys[3 * nm + 2] = k;
        nm++;
    }
    qsort(keys, (size_t)nm, 3 * sizeof(long), by_muon_group);
    for (int a = 0; a < nm && !hp_graph_status(g);) {
        const hp_shape *s0 = &g->vals[params[keys[3 * a + 2]].param].shape;
        muon_cfg c;
        memset(&c, 0, sizeof c);
        c.rows = s0->d[s0->ndim - 2];
        c.cols = s0->d[s0->ndim - 1];
        int b = a, nx = 0;
        for (; b < nm; b++) {
            int k = (int)keys[3 * b + 2];
            const hp_shape *s = &g->vals[params[k].param].shape;
            if (s->d[s->ndim - 2] != c.rows || s->d[s->ndim - 1] != c.cols) break;
            c.nmats += mats_of(s);
            xin[nx++] = params[k].param;
            xin[nx++] = params[k].grad;
            xin[nx++] = hp_optim_state_value(g, &params[k], "muon.m.");
            io->nstates++;
        }
        long cap = cfg->muon_batch_floats > 0 ? cfg->muon_batch_floats : MUON_CHUNK_FLOATS;
        c.chunk = cap / (c.rows * c.cols);
        if (c.chunk < 1) c.chunk = 1;
        if (c.chunk > c.nmats) c.chunk = c.nmats;
        c.max_norm = max_norm;
        c.beta = cfg->muon_beta;
        c.wd = cfg->muon_weight_decay;
        c.scale = hp_muon_scale(cfg->muon_scale, c.rows, c.cols);
        c.momentum = cfg->muon_momentum;
        c.nesterov = cfg->muon_nesterov;
        c.ns = cfg->ns;
        hp_attrs at;
        memset(&at, 0, sizeof at);
        at.i[0] = hp_graph_blob(g, &c, sizeof c);
        int in[3] = {io->sumsq, io->lr, io->step};
        int node = hp_graph_node_list(g, &hp_op_muon_update, in, 3, xin, nx, NULL, 0, &at, HP_PHASE_OPT);
        if (node >= 0)
            snprintf(g->nodes[node].name, HP_NAME_LEN, "muon_update[%ldx%ld]x%ld", c.rows, c.cols, c.nmats);
        io->nmuon_groups++;
        a = b;
    }
    free(keys), free(xin);
    return hp_graph_error(g);
}

/* text += s (a growing malloc'd string; on failure *text is freed and NULL). */
static void append(char **text, size_t *len, const char *s) {
    if (!*text) return;
    size_t n = strlen(s);
    char *t = realloc(*text, *len + n + 1);
    if (!t) {
        free(*text);
        *text = NULL;
        return;
    }
    memcpy(t + *len, s, n + 1);
    *text = t, *len += n;
}

/* name with every run of digits between dots as '*': "h.3.attn.qkv.weight" -> "h.*.attn.qkv.weight". */
static void pattern_of(char *out, size_t cap, const char *name) {
    size_t o = 0;
    for (const char *c = name; *c && o + 2 < cap;) {
        int start = c == name || c[-1] == '.';
        const char *d = c;
        while (*d >= '0' && *d <= '9') d++;
        if (start && d > c && (*d == '.' || !*d)) {
            out[o++] = '*', c = d;
        } else {
            out[o++] = *c++;
        }
    }
    out[o] = 0;
}

/* The refusal of Muon on sharded matrices: one error naming every one of
 * names[0..n) (deduplicated: FSDP and TP give a parameter several pieces)
 * and an --adamw-params value of patterns that covers them all. */
static hp_status refuse_muon(const char *const *names, int n) {
    size_t nl = 0, pl = 0;
    char *list = calloc(1, 1), *pats = calloc(1, 1);
    int count = 0;
    for (int k = 0; k < n; k++) {
        int seen = 0;
        for (int j = 0; j < k && !seen; j++) seen = !strcmp(names[j], names[k]);
        if (seen) continue;
        append(&list, &nl, count++ ? ", " : "");
        append(&list, &nl, names[k]);
        char pat[HP_NAME_LEN + 2], quoted[HP_NAME_LEN + 4];
        pattern_of(pat, sizeof pat, names[k]);
        snprintf(quoted, sizeof quoted, ",%s,", pat);
        char *have = pats ? malloc(pl + 3) : NULL;
        if (have) snprintf(have, pl + 3, ",%s,", pats);
        if (have && !strstr(have, quoted)) {
            append(&pats, &pl, pl ? "," : "");
            append(&pats, &pl, pat);
        }
        free(have);
    }
    hp_status st = HP_OK;
    if (count && (!list || !pats))
        st = hp_errorf("optimizer: distributed Muon does not handle matrices cut along two mesh axes (rows and columns, or two tensor-parallel cuts) yet; use --optimizer adamw");
    else if (count)
        st = hp_errorf("optimizer: distributed Muon does not handle matrices cut along two mesh axes (rows and columns, or two tensor-parallel cuts) yet: %d matri%s cut "
                       "(%s); use --optimizer adamw, or keep them on AdamW with --adamw-params '%s'",
                       count, count == 1 ? "x is" : "ces are", list, pats);
    free(list);
    free(pats);
    return st;
}

hp_status hp_optim_check_sharded_muon(const hp_graph *g, const hp_optim_config *cfg, const int *params,
                                      const int *sharded, int n) {
    hp_opt_param *op = calloc((size_t)(n ? n : 1), sizeof *op);
    hp_opt_kind *kinds = calloc((size_t)(n ? n : 1), sizeof *kinds);
    const char **bad = calloc((size_t)(n ? n : 1), sizeof *bad);
    hp_status st = op && kinds && bad ? HP_OK : hp_errorf("optimizer phase: out of memory");
    for (int k = 0; !st && k < n; k++) {
        const hp_value *v = &g->vals[params[k]];
        op[k] = (hp_opt_param){v->name, NULL, NULL, v->shape, hp_optim_hidden_matrix(v->name, &v->shape)};
    }
    if (!st) st = hp_optim_route(kinds, cfg->kind, cfg->muon_params, cfg->adamw_params, op, n);
    int nbad = 0;
    for (int k = 0; !st && k < n; k++)
        if (kinds[k] == HP_OPT_MUON && sharded[k]) bad[nbad++] = g->vals[params[k]].name;
    if (!st) st = refuse_muon(bad, nbad);
    free(op), free(kinds), free(bad);
    return st;
}

/* The same over one rank's pieces (a safety net behind the pass's check of the whole model). */
static hp_status refuse_sharded_muon(const hp_graph *g, const hp_optim_phase_param *params, const hp_opt_kind *kinds,
                                     int n) {
    const char **bad = calloc((size_t)(n ? n : 1), sizeof *bad);
    if (!bad) return hp_errorf("optimizer phase: out of memory");
    int nbad = 0;
    for (int k = 0; k < n; k++)
        if (kinds[k] == HP_OPT_MUON && params[k].sharded && !params[k].whole_mats) bad[nbad++] = g->vals[owner_of(&params[k])].name;
    hp_status st = refuse_muon(bad, nbad);
    free(bad);
    return st;
}

hp_status hp_optim_phase_updates(hp_optim_phase_io *io, hp_graph *g, const hp_optim_config *cfg, float max_norm,
                                 const hp_optim_phase_param *params, int n) {
    HP_TRY(hp_optim_config_check(cfg));
    hp_opt_param *op = calloc((size_t)(n ? n : 1), sizeof *op);
    hp_opt_kind *kinds = calloc((size_t)(n ? n : 1), sizeof *kinds);
    int *xin = malloc(sizeof(int) * 4 * (size_t)(n ? n : 1));
    hp_status st = op && kinds && xin ? HP_OK : hp_errorf("optimizer phase: out of memory");
    float dummy = 0;
    for (int k = 0; !st && k < n; k++) {
        const hp_value *p = &g->vals[owner_of(&params[k])];
        op[k] = (hp_opt_param){p->name, &dummy, &dummy, p->shape, hp_optim_hidden_matrix(p->name, &p->shape)};
    }
    if (!st) st = hp_optim_route_part(kinds, cfg->kind, cfg->muon_params, cfg->adamw_params, op, n);
    int nmuon = 0;
    for (int k = 0; !st && k < n; k++) nmuon += kinds[k] == HP_OPT_MUON;
    if (!st) st = refuse_sharded_muon(g, params, kinds, n);
    if (!st && nmuon > 0 && !(cfg->lr > 0.0f))
        st = hp_errorf("lr: must be > 0 when Muon is used (Muon's lr follows the schedule of lr, scaled by muon_lr "
                       "/ lr), got %g",
                       (double)cfg->lr);
    int nx = 0;
    unsigned char *decays = malloc((size_t)(n ? n : 1));
    if (!decays && !st) st = hp_errorf("optimizer phase: out of memory");
    for (int k = 0; !st && k < n; k++) {
        if (kinds[k] != HP_OPT_ADAMW) continue;
        decays[nx / 4] = cfg->decay_vectors || g->vals[owner_of(&params[k])].shape.ndim >= 2;
        xin[nx++] = params[k].param;
        xin[nx++] = params[k].grad;
        xin[nx++] = hp_optim_state_value(g, &params[k], "adamw.m.");
        xin[nx++] = hp_optim_state_value(g, &params[k], "adamw.v.");
        io->nadamw++;
        io->nstates += 2;
    }
    if (!st && nx > 0) {
        adamw_cfg c = {max_norm, cfg->beta1, cfg->beta2, cfg->eps, cfg->weight_decay, cfg->decay_vectors};
        hp_attrs at;
        memset(&at, 0, sizeof at);
        at.i[0] = hp_graph_blob(g, &c, sizeof c);
        at.i[1] = hp_graph_blob(g, decays, (size_t)(nx / 4));
        int in[3] = {io->sumsq, io->lr, io->step};
        int node = hp_graph_node_list(g, &hp_op_adamw_update, in, 3, xin, nx, NULL, 0, &at, HP_PHASE_OPT);
        if (node >= 0) snprintf(g->nodes[node].name, HP_NAME_LEN, "adamw_update[%d tensors]", io->nadamw);
        st = hp_graph_error(g);
    }
    if (!st) st = emit_muon(io, g, cfg, max_norm, params, kinds, n);
    free(op), free(kinds), free(xin), free(decays);
    return st;
}
