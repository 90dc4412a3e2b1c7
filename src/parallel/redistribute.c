/* parallel/redistribute: one rank's execution of a redistribution plan
 * (redistribute.h). Each step reads the local piece of its `before` layout and
 * writes the local piece of its `after` layout; intermediate pieces alternate
 * between two scratch areas. */
#include "parallel/redistribute.h"

#include <string.h>

/* A local piece seen around tensor dim d as [outer, len, inner]. */
typedef struct {
    int64_t outer, len, inner;
} span;

static span span_of(const hp_shape *s, int d) {
    span v = {1, s->d[d], 1};
    for (int i = 0; i < d; i++) v.outer *= s->d[i];
    for (int i = d + 1; i < s->ndim; i++) v.inner *= s->d[i];
    return v;
}

/* Elements are esz bytes (fp32 or bf16); pointers are bytes. */
static void copy_elems(char *dst, const char *src, int64_t n, size_t esz) {
    if (n > 0) memcpy(dst, src, (size_t)n * esz);
}

/* dst [outer, e-b, inner] = src [outer, v.len, inner][:, b:e, :] */
static void pack(char *dst, const char *src, span v, int64_t b, int64_t e, size_t esz) {
    int64_t w = (e - b) * v.inner;
    for (int64_t o = 0; o < v.outer; o++)
        copy_elems(dst + (size_t)(o * w) * esz, src + (size_t)((o * v.len + b) * v.inner) * esz, w, esz);
}

/* dst [outer, v.len, inner][:, b:e, :] = src [outer, e-b, inner] */
static void unpack(char *dst, const char *src, span v, int64_t b, int64_t e, size_t esz) {
    int64_t w = (e - b) * v.inner;
    for (int64_t o = 0; o < v.outer; o++)
        copy_elems(dst + (size_t)((o * v.len + b) * v.inner) * esz, src + (size_t)(o * w) * esz, w, esz);
}

/* counts[j] = elements of member j's chunk of span v (split along its len). */
static void chunk_counts(int64_t *counts, span v, int n) {
    for (int j = 0; j < n; j++) {
        int64_t b, e;
        hp_chunk(&b, &e, v.len, n, j);
        counts[j] = v.outer * (e - b) * v.inner;
    }
}

static int64_t align16(int64_t n) { return (n + 15) / 16 * 16; }

static int max_axis(const hp_mesh *m) {
    int k = 1;
    for (int a = 0; a < m->ndim; a++)
        if (m->size[a] > k) k = m->size[a];
    return k;
}

/* Rank 0 holds the largest piece of every layout (ceil-chunks put the
 * largest chunk first at every level of nesting). */
static int64_t max_numel(const hp_shape *g, const hp_layout *l, const hp_mesh *m) {
    hp_shape s;
    hp_local_shape(&s, NULL, g, l, m, 0);
    return hp_shape_numel(&s);
}

/* Scratch parts in floats: counts (2 int64 arrays), two intermediates, work. */
typedef struct {
    int64_t counts, inter, work;
} scratch_parts;

static scratch_parts parts_of(const hp_redist *p, const hp_mesh *m) {
    scratch_parts sp = {align16(2 * 2 * (int64_t)max_axis(m)), 0, 0};
    for (int i = 0; i < p->nsteps; i++) {
        const hp_redist_step *s = &p->step[i];
        int64_t nin = max_numel(&s->global, &s->before, m), nout = max_numel(&s->global, &s->after, m);
        int64_t n = m->size[s->axis], w = 0;
        if (i + 1 < p->nsteps && nout > sp.inter) sp.inter = nout;
        switch (s->kind) {
        case HP_RD_ALL_GATHER: w = nout; break;
        case HP_RD_REDUCE_SCATTER: w = nin + (s->op == HP_PARTIAL_MAX ? n * nout : 0); break;
        case HP_RD_ALL_REDUCE: w = s->op == HP_PARTIAL_MAX ? n * nin : 0; break;
        case HP_RD_ALL_TO_ALL: w = nin + nout; break;
        default: break;
        }
        if (w > sp.work) sp.work = w;
    }
    sp.inter = align16(sp.inter);
    sp.work = align16(sp.work);
    return sp;
}

size_t hp_redistribute_scratch(const hp_redist *plan, const hp_mesh *m) {
    scratch_parts sp = parts_of(plan, m);
    return (size_t)(sp.counts + 2 * sp.inter + sp.work);
}

static hp_comm_redop redop_of(hp_partial_op op) { return op == HP_PARTIAL_AVG ? HP_COMM_AVG : HP_COMM_SUM; }

/* out[k] = max over j of blocks[j * len + k] (fp32) */
static void max_blocks(float *out, const float *blocks, int n, int64_t len) {
    copy_elems((char *)out, (const char *)blocks, len, sizeof(float));
    for (int j = 1; j < n; j++)
        for (int64_t k = 0; k < len; k++) {
            float v = blocks[(int64_t)j * len + k];
            if (v > out[k]) out[k] = v;
        }
}

typedef struct {
    hp_comm_rank *r;
    hp_comm_group *g;
    int n, me; /* group size, own member index */
    int64_t *cnt, *cnt2; /* per-member counts */
    char *work;
    hp_dtype dt;
    size_t esz;
} step_ctx;

#define AT(p, i) ((p) + (size_t)(i) * c->esz)

static hp_status all_gather(const step_ctx *c, char *out, const char *in, const hp_shape *lout, int d) {
    span v = span_of(lout, d);
    chunk_counts(c->cnt, v, c->n);
    if (v.outer == 1) return hp_comm_all_gather(c->r, c->g, out, in, 0, c->cnt, c->dt);
    HP_TRY(hp_comm_all_gather(c->r, c->g, c->work, in, 0, c->cnt, c->dt));
    int64_t off = 0;
    for (int j = 0; j < c->n; j++) {
        int64_t b, e;
        hp_chunk(&b, &e, v.len, c->n, j);
        unpack(out, AT(c->work, off), v, b, e, c->esz);
        off += c->cnt[j];
    }
    return HP_OK;
}

/* Packs `in` into member-order chunks along span v (in place when already so). */
static const char *pack_chunks(const step_ctx *c, char *buf, const char *in, span v) {
    if (v.outer == 1) return in;
    int64_t off = 0;
    for (int j = 0; j < c->n; j++) {
        int64_t b, e;
        hp_chunk(&b, &e, v.len, c->n, j);
        pack(AT(buf, off), in, v, b, e, c->esz);
        off += c->cnt[j];
    }
    return buf;
}

static hp_status reduce_scatter(const step_ctx *c, char *out, const char *in, const hp_shape *lin, int d,
                                hp_partial_op op) {
    span v = span_of(lin, d);
    chunk_counts(c->cnt, v, c->n);
    int64_t nin = hp_shape_numel(lin);
    const char *send = pack_chunks(c, c->work, in, v);
    if (op != HP_PARTIAL_MAX) return hp_comm_reduce_scatter(c->r, c->g, out, send, 0, c->cnt, c->dt, redop_of(op));
    /* max: every member's term of my chunk comes to me, then a local max */
    int64_t mine = c->cnt[c->me];
    for (int j = 0; j < c->n; j++) c->cnt2[j] = mine;
    char *recv = AT(c->work, nin);
    HP_TRY(hp_comm_all_to_all(c->r, c->g, recv, send, 0, c->cnt, c->cnt2, c->dt));
    max_blocks((float *)(void *)out, (const float *)(void *)recv, c->n, mine);
    return HP_OK;
}

static hp_status all_reduce(const step_ctx *c, char *out, const char *in, int64_t nin, hp_partial_op op) {
    if (op != HP_PARTIAL_MAX) return hp_comm_all_reduce(c->r, c->g, out, in, nin, c->dt, redop_of(op));
    HP_TRY(hp_comm_all_gather(c->r, c->g, c->work, in, nin, NULL, c->dt));
    max_blocks((float *)(void *)out, (const float *)(void *)c->work, c->n, nin);
    return HP_OK;
}

/* Shard(d1) -> Shard(d2) on one axis. */
static hp_status all_to_all(const step_ctx *c, char *out, const char *in, const hp_shape *lin,
                            const hp_shape *lout, int d1, int d2) {
    span ve = span_of(lin, d2);  /* what I send: my piece split along d2 */
    span vd = span_of(lout, d1); /* what I get: member j's chunk of d1 */
    chunk_counts(c->cnt, ve, c->n);
    chunk_counts(c->cnt2, vd, c->n);
    int64_t nin = hp_shape_numel(lin);
    const char *send = pack_chunks(c, c->work, in, ve);
    char *recv = vd.outer == 1 ? out : AT(c->work, nin);
    HP_TRY(hp_comm_all_to_all(c->r, c->g, recv, send, 0, c->cnt, c->cnt2, c->dt));
    if (recv == out) return HP_OK;
    int64_t off = 0;
    for (int j = 0; j < c->n; j++) {
        int64_t b, e;
        hp_chunk(&b, &e, vd.len, c->n, j);
        unpack(out, AT(recv, off), vd, b, e, c->esz);
        off += c->cnt2[j];
    }
    return HP_OK;
}

static hp_status run_step(const step_ctx *c, const hp_redist_step *s, const hp_mesh *m, char *out,
                          const char *in, int rank) {
    hp_shape lin, lout;
    hp_local_shape(&lin, NULL, &s->global, &s->before, m, rank);
    hp_local_shape(&lout, NULL, &s->global, &s->after, m, rank);
    int64_t nin = hp_shape_numel(&lin);
    switch (s->kind) {
    case HP_RD_SLICE: {
        span v = span_of(&lin, s->dim);
        int64_t b, e;
        hp_chunk(&b, &e, v.len, c->n, c->me);
        pack(out, in, v, b, e, c->esz);
        return HP_OK;
    }
    case HP_RD_TO_PARTIAL:
        if (s->op == HP_PARTIAL_SUM && c->me != 0) {
            if (nin > 0) memset(out, 0, (size_t)nin * c->esz);
        } else {
            copy_elems(out, in, nin, c->esz);
        }
        return HP_OK;
    case HP_RD_ALL_GATHER: return all_gather(c, out, in, &lout, s->dim);
    case HP_RD_REDUCE_SCATTER: return reduce_scatter(c, out, in, &lin, s->dim, s->op);
    case HP_RD_ALL_REDUCE: return all_reduce(c, out, in, nin, s->op);
    case HP_RD_ALL_TO_ALL: return all_to_all(c, out, in, &lin, &lout, s->dim, s->dim_to);
    }
    return hp_errorf("redistribute: unknown step kind %d", (int)s->kind);
}

/* Mesh a (the comm's) runs plans made on mesh b: the same axes, each of b's sizes a's or 1 (an axis a plan was
 * made without: a pipeline's, along which nothing is laid out). */
static int same_mesh(const hp_mesh *a, const hp_mesh *b) {
    if (a->ndim != b->ndim) return 0;
    for (int i = 0; i < a->ndim; i++)
        if ((a->size[i] != b->size[i] && b->size[i] != 1) || strcmp(a->name[i], b->name[i])) return 0;
    return 1;
}

hp_status hp_redistribute(hp_comm_rank *r, const hp_mesh_comm *mc, const hp_redist *plan, float *dst,
                          const float *src, float *scratch, int rank) {
    return hp_redistribute_dt(r, mc, plan, dst, src, HP_F32, scratch, rank);
}

hp_status hp_redistribute_dt(hp_comm_rank *r, const hp_mesh_comm *mc, const hp_redist *plan, void *dst,
                             const void *src, hp_dtype dt, float *scratch, int rank) {
    if (dt != HP_F32 && dt != HP_BF16) return hp_errorf("redistribute: dtype %s is not f32 or bf16", hp_dtype_name(dt));
    size_t esz = hp_dtype_size(dt);
    for (int i = 0; i < plan->nsteps; i++)
        if (dt != HP_F32 && plan->step[i].op == HP_PARTIAL_MAX &&
            (plan->step[i].kind == HP_RD_ALL_REDUCE || plan->step[i].kind == HP_RD_REDUCE_SCATTER))
            return hp_errorf("redistribute: a Partial(max) reduction runs in fp32 only, not %s", hp_dtype_name(dt));
    const hp_mesh *m = hp_mesh_comm_mesh(mc);
    if (!same_mesh(m, &plan->mesh)) {
        char a[128], b[128];
        return hp_errorf("redistribute: plan is for mesh '%s' but the mesh comm has '%s'",
                         hp_mesh_str(a, sizeof a, &plan->mesh), hp_mesh_str(b, sizeof b, m));
    }
    if (hp_comm_rank_id(r) != rank)
        return hp_errorf("redistribute: rank argument %d but the comm handle is rank %d", rank, hp_comm_rank_id(r));
    if (plan->nsteps == 0) {
        hp_shape l;
        hp_local_shape(&l, NULL, &plan->global, &plan->from, m, rank);
        copy_elems(dst, src, hp_shape_numel(&l), esz);
        return HP_OK;
    }
    scratch_parts sp = parts_of(plan, m);
    int maxn = max_axis(m);
    int64_t *counts = (int64_t *)(void *)scratch;
    char *inter[2] = {(char *)(scratch + sp.counts), (char *)(scratch + sp.counts + sp.inter)};
    step_ctx c = {r, NULL, 0, 0, counts, counts + maxn, (char *)(scratch + sp.counts + 2 * sp.inter), dt, esz};
    int coord[HP_MESH_MAX_DIMS];
    hp_mesh_coords(coord, m, rank);
    const char *in = src;
    for (int i = 0; i < plan->nsteps; i++) {
        const hp_redist_step *s = &plan->step[i];
        char *out = i + 1 == plan->nsteps ? (char *)dst : inter[i % 2];
        c.g = hp_mesh_comm_group(mc, s->axis, rank);
        c.n = m->size[s->axis];
        c.me = coord[s->axis];
        hp_status st = run_step(&c, s, m, out, in, rank);
        if (st) {
            char d[128];
            return hp_error_wrap(st, "redistribute step %d (%s)", i + 1, hp_redist_step_str(d, sizeof d, s, m));
        }
        in = out;
    }
    return HP_OK;
}
