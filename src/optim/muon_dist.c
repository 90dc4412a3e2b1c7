/* optim/muon_dist: distributed Muon's local operators (see the header). */
#include "optim/muon_dist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "optim/clip.h"
#include "optim/muon.h"

#define MUON_CHUNK_FLOATS (1L << 22) /* as muon_update's default */

static size_t round8(size_t n) { return (n + 7) / 8 * 8; }
static size_t head16(size_t n) { return (n + 15) / 16 * 16; }

static float clip_scale(const hp_tensor *sumsq, float max_norm) {
    return hp_clip_scale(sqrt(*(const double *)sumsq->data), max_norm);
}

static int skipped(const hp_tensor *sumsq) { return !isfinite(*(const double *)sumsq->data); }

/* ---- muon_pack ---- */

/* count matrices [r, c] of src written transposed ([c, r] each) into dst */
static void transpose_blocks(float *dst, const float *src, int64_t count, int64_t r, int64_t c) {
    for (int64_t m = 0; m < count; m++, src += r * c, dst += r * c)
        for (int64_t i = 0; i < r; i++)
            for (int64_t j = 0; j < c; j++) dst[j * r + i] = src[i * c + j];
}

long hp_muon_pack_blob(hp_graph *g, const hp_muon_pack_cfg *c, const int64_t *tr) {
    size_t h = head16(sizeof *c), ns = (size_t)(c->nsend > 0 ? c->nsend : 0);
    size_t bytes = h + sizeof(int64_t) * 3 * (ns ? ns : 1);
    char *b = calloc(1, bytes);
    if (!b) {
        hp_graph_fail(g, hp_errorf("muon_pack: out of memory"));
        return -1;
    }
    memcpy(b, c, sizeof *c);
    if (tr && ns) memcpy(b + h, tr, sizeof(int64_t) * 3 * ns);
    long at = hp_graph_blob(g, b, bytes);
    free(b);
    return at;
}

static const int64_t *pack_tr(const hp_muon_pack_cfg *c) {
    return (const int64_t *)(const void *)((const char *)c + head16(sizeof *c));
}

static size_t pack_scratch(const hp_graph *g, const hp_node *n, int nt) {
    (void)nt;
    const hp_muon_pack_cfg *c = hp_graph_blob_at(g, (long)n->a.i[0]);
    const int64_t *tr = pack_tr(c);
    size_t most = 1;
    for (int k = 0; k < n->nxin / 2; k++) {
        size_t e = (size_t)hp_val_numel(g, g->xin[n->xin_at + 2 * k]);
        if ((k >= c->nsend || tr[3 * k] > 0) && e > most) most = e;
    }
    return round8(most);
}

static void pack_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    const hp_muon_pack_cfg *c = hp_graph_blob_at(k->graph, (long)n->a.i[0]);
    if (skipped(&in[0])) return;
    const int64_t *tr = pack_tr(c);
    float scale = clip_scale(&in[0], c->max_norm), *u = out[0].data;
    for (int q = 0; q < n->nxin / 2; q++) {
        const hp_tensor *x = &in[3 + 2 * q];
        long e = (long)hp_shape_numel(&x[0].shape);
        int t = q < c->nsend && tr[3 * q] > 0;
        float *dst = q < c->nsend && !t ? u : k->scratch;
        hp_muon_momentum_update_scaled(k->pool, dst, x[1].data, x[0].data, e, c->beta, (hp_muon_momentum)c->momentum,
                                       c->nesterov, scale);
        if (t) transpose_blocks(u, dst, tr[3 * q], tr[3 * q + 1], tr[3 * q + 2]);
        if (q < c->nsend) u += e;
    }
}

const hp_opdef hp_op_muon_pack = {.name = "muon_pack", .nout = 1, .run = pack_run, .scratch = pack_scratch};

/* ---- muon_orth ---- */

typedef struct {
    const hp_muon_orth_cfg *c;
    const int64_t *items, *len, *start;
} orth_view;

static orth_view orth_of(const hp_graph *g, const hp_node *n) {
    const char *b = hp_graph_blob_at(g, (long)n->a.i[0]);
    orth_view v;
    v.c = (const hp_muon_orth_cfg *)(const void *)b;
    v.items = (const int64_t *)(const void *)(b + head16(sizeof *v.c));
    v.len = v.items + HP_MUON_ITEM * (size_t)v.c->nitems;
    v.start = v.len + (size_t)v.c->members * (size_t)v.c->nitems;
    return v;
}

long hp_muon_orth_blob(hp_graph *g, const hp_muon_orth_cfg *c, const int64_t *items, const int64_t *len,
                       const int64_t *start) {
    size_t h = head16(sizeof *c), ni = (size_t)c->nitems, tab = (size_t)c->members * ni;
    size_t bytes = h + sizeof(int64_t) * (HP_MUON_ITEM * ni + 2 * tab);
    char *b = calloc(1, bytes);
    if (!b) {
        hp_graph_fail(g, hp_errorf("muon_orth: out of memory"));
        return -1;
    }
    memcpy(b, c, sizeof *c);
    memcpy(b + h, items, sizeof(int64_t) * HP_MUON_ITEM * ni);
    memcpy(b + h + sizeof(int64_t) * HP_MUON_ITEM * ni, len, sizeof(int64_t) * tab);
    memcpy(b + h + sizeof(int64_t) * (HP_MUON_ITEM * ni + tab), start, sizeof(int64_t) * tab);
    long at = hp_graph_blob(g, b, bytes);
    free(b);
    return at;
}

static long item_numel(const int64_t *it) { return (long)(it[0] * it[1] * it[2]); }

static const int64_t *item_at(const orth_view *v, int j) { return &v->items[HP_MUON_ITEM * (size_t)j]; }

/* The run of items of one shape from item j (a team's item: itself alone): its end (*e) and its matrices. */
static long run_of(int *e, const orth_view *v, int j) {
    const int64_t *it = item_at(v, j);
    long mats = 0;
    for (*e = j; *e < v->c->nitems && item_at(v, *e)[0] == it[0] && item_at(v, *e)[1] == it[1] &&
                 (*e == j || (it[4] < 0 && item_at(v, *e)[4] < 0));
         (*e)++)
        mats += (long)item_at(v, *e)[2];
    return mats;
}

/* matrices per batch of a run of `mats` matrices of one shape (as the
 * single-device update: at most chunk_floats, at most the run) */
static long chunk_of(const hp_muon_orth_cfg *c, const int64_t *it, long mats) {
    long cap = c->chunk_floats > 0 ? c->chunk_floats : MUON_CHUNK_FLOATS, ch = cap / (long)(it[0] * it[1]);
    if (ch > mats) ch = mats;
    return ch < 1 ? 1 : ch;
}

static size_t orth_scratch(const hp_graph *g, const hp_node *n, int nt) {
    (void)nt;
    orth_view v = orth_of(g, n);
    size_t w = 0, ns = 0;
    for (int j = 0; j < v.c->nitems; j++) w += (size_t)item_numel(item_at(&v, j));
    for (int j = 0, e = 0; j < v.c->nitems; j = e) {
        const int64_t *it = item_at(&v, j);
        long ch = chunk_of(v.c, it, run_of(&e, &v, j));
        size_t s = it[4] >= 0 ? 2 * (size_t)hp_ns_blocks((long)it[0], (long)it[1]) /* a team's: the norm's partials */
                              : hp_newton_schulz_batched_scratch(ch, (long)it[0], (long)it[1]);
        if (s > ns) ns = s;
    }
    return round8(w) + ns;
}

/* Moves the members' pieces between the packed layout and the items (to_items: packed -> items). A
 * piece of an item of nblk blocks is nblk equal runs, one per matrix, each at its start plus the
 * matrix's offset (a tensor-parallel cut of a stack: one block of rows of every matrix). */
static void permute(float *items, float *packed, const orth_view *v, int to_items) {
    size_t at = 0;
    for (int i = 0; i < v->c->members; i++) {
        size_t base = 0;
        for (int j = 0; j < v->c->nitems; j++) {
            const int64_t *itm = item_at(v, j);
            size_t e = (size_t)v->len[(size_t)i * (size_t)v->c->nitems + (size_t)j];
            size_t nb = (size_t)itm[3], per = e / nb, stride = (size_t)(itm[0] * itm[1]);
            float *it = items + base + (size_t)v->start[(size_t)i * (size_t)v->c->nitems + (size_t)j];
            for (size_t b = 0; e && b < nb; b++) {
                if (to_items) memcpy(it + b * stride, packed + at + b * per, per * sizeof(float));
                else memcpy(packed + at + b * per, it + b * stride, per * sizeof(float));
            }
            at += e;
            base += (size_t)item_numel(itm);
        }
    }
}

static void orth_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    if (skipped(&in[0])) return;
    orth_view v = orth_of(k->graph, n);
    size_t w = 0;
    for (int j = 0; j < v.c->nitems; j++) w += (size_t)item_numel(item_at(&v, j));
    float *mats = k->scratch, *ns = k->scratch + round8(w);
    permute(mats, in[1].data, &v, 1);
    /* runs of one shape, batched in chunks (items hold whole stacks of matrices of their shape); a team's item:
     * its first iterate out (front), or its last in (the team's iterates: in[2]) */
    float *at = mats;
    for (int j = 0, e = 0; j < v.c->nitems; j = e) {
        const int64_t *it = item_at(&v, j);
        long mats_n = run_of(&e, &v, j), per = (long)(it[0] * it[1]), ch = chunk_of(v.c, it, mats_n);
        for (long a = 0; it[4] >= 0 && a < mats_n; a++) { /* a team's, matrix by matrix */
            if (v.c->front)
                hp_ns_prepare(k->pool, (float *)out[0].data + it[4] + a * per, at + a * per, ns, (long)it[0], (long)it[1],
                              &v.c->ns);
            else
                hp_ns_store(k->pool, at + a * per, (float *)in[2].data + it[4] + a * per, (long)it[0], (long)it[1]);
        }
        for (long a = 0; it[4] < 0 && !v.c->front && a < mats_n; a += ch) {
            long cnt = mats_n - a < ch ? mats_n - a : ch;
            hp_newton_schulz_batched(k->pool, at + a * per, at + a * per, ns, cnt, (long)it[0], (long)it[1], &v.c->ns);
        }
        at += mats_n * per;
    }
    if (!v.c->front) permute(mats, out[0].data, &v, 0);
}

const hp_opdef hp_op_muon_orth = {.name = "muon_orth", .nout = 1, .run = orth_run, .scratch = orth_scratch};

/* ---- muon_spread ---- */

static void spread_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    const int64_t *c = hp_graph_blob_at(k->graph, (long)n->a.i[0]);
    const float *src = in[0].data;
    float *dst = out[0].data;
    for (int64_t q = 0; q < c[0]; q++) {
        const int64_t *e = &c[1 + 5 * q];
        if (e[2] > 0) transpose_blocks(dst, src + e[0], e[2], e[3], e[4]);
        else if (e[2] == 0) memcpy(dst, src + e[0], sizeof(float) * (size_t)e[1]);
        dst += e[1];
    }
}

const hp_opdef hp_op_muon_spread = {.name = "muon_spread", .nout = 1, .run = spread_run};

/* ---- muon_apply ---- */

static size_t apply_tr_at(int npieces) { return head16(head16(sizeof(hp_muon_apply_cfg)) + sizeof(float) * (size_t)(npieces ? npieces : 1)); }

long hp_muon_apply_blob(hp_graph *g, float wd, const float *scale, const int64_t *tr, int npieces) {
    hp_muon_apply_cfg c = {wd, npieces};
    size_t h = head16(sizeof c), t = apply_tr_at(npieces), bytes = t + sizeof(int64_t) * 3 * (size_t)(npieces ? npieces : 1);
    char *b = calloc(1, bytes);
    if (!b) {
        hp_graph_fail(g, hp_errorf("muon_apply: out of memory"));
        return -1;
    }
    memcpy(b, &c, sizeof c);
    if (npieces) memcpy(b + h, scale, sizeof(float) * (size_t)npieces);
    if (npieces && tr) memcpy(b + t, tr, sizeof(int64_t) * 3 * (size_t)npieces);
    long at = hp_graph_blob(g, b, bytes);
    free(b);
    return at;
}

static size_t apply_scratch(const hp_graph *g, const hp_node *n, int nt) {
    (void)nt;
    const char *b = hp_graph_blob_at(g, (long)n->a.i[0]);
    const int64_t *tr = (const int64_t *)(const void *)(b + apply_tr_at(n->nxin));
    size_t most = 1;
    for (int q = 0; q < n->nxin; q++) {
        size_t e = (size_t)hp_val_numel(g, g->xin[n->xin_at + q]);
        if (tr[3 * q] > 0 && e > most) most = e;
    }
    return round8(most);
}

static void apply_run(const hp_kctx *k, const hp_node *n, const hp_tensor *in, hp_tensor *out) {
    (void)out;
    if (skipped(&in[0])) return;
    const char *b = hp_graph_blob_at(k->graph, (long)n->a.i[0]);
    const hp_muon_apply_cfg *c = (const hp_muon_apply_cfg *)(const void *)b;
    const float *scale = (const float *)(const void *)(b + head16(sizeof *c));
    const int64_t *tr = (const int64_t *)(const void *)(b + apply_tr_at(n->nxin));
    float lr = ((const float *)in[1].data)[1];
    const float *o = in[3].data;
    for (int q = 0; q < n->nxin; q++) {
        const hp_tensor *p = &in[4 + q];
        long e = (long)hp_shape_numel(&p->shape);
        const float *src = o;
        if (tr[3 * q] > 0) { /* the update came transposed ([c, r] per matrix): back to the piece's [r, c] */
            transpose_blocks(k->scratch, o, tr[3 * q], tr[3 * q + 2], tr[3 * q + 1]);
            src = k->scratch;
        }
        hp_muon_apply(k->pool, p->data, src, e, lr, c->wd, scale[q]);
        o += e;
    }
}

const hp_opdef hp_op_muon_apply = {.name = "muon_apply", .run = apply_run, .scratch = apply_scratch};
