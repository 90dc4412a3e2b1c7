/* kernels/onednn: hp_gemm over oneDNN's C API (matmul primitive, user-managed
 * scratchpad, memory objects created at prepare time and re-pointed per run).
 * A product is split into row blocks of C (and of op(A)), one per thread of
 * the rank's pool; each block is a single-threaded primitive of its own
 * (strided views of A and C), run by its pool thread at one OpenMP thread.
 * So oneDNN never starts an OpenMP team: libgomp's workers would spin after
 * each product while the pool's own workers need the same cores (measured:
 * 2.5-4x slower steps on a loaded 2-core machine with OMP_WAIT_POLICY
 * active). Each C element is computed by one primitive over the whole K.
 * oneDNN 2.6 takes its brgemm kernels (AMX tiles where the CPU has them)
 * only for dense operands, and a block of a product with A transposed (the
 * weight gradient, dW = dY^T X) is a strided view, which runs its jit gemm
 * (AMX tiles too where present, but measured slower than brgemm on packed
 * blocks for these products). Where oneDNN's ISA has AMX (or hp_gemm_ctx_set_pack says
 * so) such a block is packed first: its columns of the stored A are
 * transposed into a dense [rows, K] buffer of its pool thread (one per
 * thread in the context, sized at prepare time), and the block's brgemm
 * primitive reads that; its blocks are then at most PACK_ROWS rows (more
 * blocks than threads, dealt round-robin), so a pack buffer stays
 * PACK_ROWS x K. On AVX512-BF16 without AMX the jit gemm on the strided view
 * measured 5-15% faster than packing, so there it is left as it is. (Column
 * blocks for the backward-data products were tried: oneDNN runs its jit gemm
 * on such strided views; alone it was up to 1.8x faster (the LM head), but in
 * GPT-2 124M's bf16 step the blocks' products got slower and the resident
 * memory grew by 250 MB, the jit gemm's own packing buffers outside the
 * scratchpad.) */
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "kernels/gemm.h"
#include "kernels/gemm_portable.h"

#define MAX_PARTS 128
#define PART_MIN_ROWS 16
#define GRAIN_PARTS 16
#define PACK_ROWS 512

typedef struct {
    long N, IC, OC;
    int product, backend;
} gemm_pick;

struct hp_gemm_ctx {
    hp_pool *pool;
    dnnl_engine_t engine;
    dnnl_stream_t stream[MAX_PARTS]; /* one per pool thread */
    int nthreads, nstreams;
    long creations;
    gemm_pick picks[64]; /* hp_gemm_f32_pick's measured choices (gemm_choose.c) */
    int npicks;
    hp_gemm_pack pack_mode;
    void *pack[MAX_PARTS]; /* per pool thread: the packed block of a transposed A (grown at prepare only) */
    size_t pack_bytes[MAX_PARTS];
};

int hp_gemm_ctx_pick_get(const hp_gemm_ctx *ctx, hp_linear_product p, long N, long IC, long OC) {
    for (int i = 0; i < ctx->npicks; i++)
        if (ctx->picks[i].N == N && ctx->picks[i].IC == IC && ctx->picks[i].OC == OC && ctx->picks[i].product == (int)p)
            return ctx->picks[i].backend;
    return -1;
}

void hp_gemm_ctx_pick_put(hp_gemm_ctx *ctx, hp_linear_product p, long N, long IC, long OC, hp_gemm_backend b) {
    if (ctx->npicks < 64)
        ctx->picks[ctx->npicks++] = (gemm_pick){N, IC, OC, (int)p, (int)b};
}

/* One row block [m0, m0 + m) of C, as a primitive of its own. */
typedef struct {
    dnnl_primitive_t prim;
    dnnl_primitive_t pack;      /* packed blocks: oneDNN's reorder of the strided view into the dense block */
    dnnl_memory_t pack_src, pack_dst, pack_scratch;
    void *pack_scratch_buf;
    dnnl_memory_t a, b, c, bias, scratch;
    void *scratch_buf;
    long m0, m;
    dnnl_status_t rc; /* of the last run */
} gemm_part;

struct hp_gemm {
    hp_gemm_ctx *ctx;
    hp_gemm_desc d;
    int packed; /* A transposed, its blocks packed dense before each run */
    gemm_part part[MAX_PARTS];
    int nparts;
    float *portable; /* the fallback's widened buffers (NULL: oneDNN runs it) */
    char impl[64];
    hp_isa isa;
};

#define DNNL_TRY(call, ...)                                                                        \
    do {                                                                                           \
        dnnl_status_t s_ = (call);                                                                 \
        if (s_ != dnnl_success) {                                                                  \
            st = hp_error_wrap(hp_errorf("oneDNN: %s returned %s", #call, dnnl_status2str(s_)),   \
                               __VA_ARGS__);                                                       \
            goto fail;                                                                             \
        }                                                                                          \
    } while (0)

/* Runs the caller's thread at n OpenMP threads; returns the previous count. */
static int threads_push(int n) {
    int old = omp_get_max_threads();
    omp_set_num_threads(n);
    return old;
}

hp_status hp_gemm_ctx_create(hp_gemm_ctx **out, hp_pool *pool) {
    *out = NULL;
    hp_gemm_ctx *c = calloc(1, sizeof *c);
    if (!c) return hp_errorf("gemm context: out of memory");
    hp_status st = HP_OK;
    c->pool = pool;
    c->nthreads = hp_pool_size(pool);
    if (c->nthreads > MAX_PARTS) c->nthreads = MAX_PARTS;
    DNNL_TRY(dnnl_engine_create(&c->engine, dnnl_cpu, 0), "gemm context: no oneDNN CPU engine");
    for (; c->nstreams < c->nthreads; c->nstreams++)
        DNNL_TRY(dnnl_stream_create(&c->stream[c->nstreams], c->engine, dnnl_stream_default_flags),
                 "gemm context: no oneDNN stream");
    *out = c;
    return HP_OK;
fail:
    hp_gemm_ctx_destroy(c);
    return st;
}

void hp_gemm_ctx_destroy(hp_gemm_ctx *c) {
    if (!c) return;
    for (int i = 0; i < c->nstreams; i++) dnnl_stream_destroy(c->stream[i]);
    for (int i = 0; i < MAX_PARTS; i++) free(c->pack[i]);
    if (c->engine) dnnl_engine_destroy(c->engine);
    free(c);
}

int hp_gemm_ctx_threads(const hp_gemm_ctx *c) { return c->nthreads; }
hp_pool *hp_gemm_ctx_pool(const hp_gemm_ctx *c) { return c->pool; }
long hp_gemm_ctx_creations(const hp_gemm_ctx *c) { return c->creations; }
void hp_gemm_ctx_set_pack(hp_gemm_ctx *c, hp_gemm_pack mode) { c->pack_mode = mode; }

/* Whether transposed-A products are packed: where oneDNN runs AMX, or as set. */
int hp_gemm_auto_packs(void) {
    dnnl_cpu_isa_t e = dnnl_get_effective_cpu_isa();
    return (e & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx;
}

static int packs(const hp_gemm_ctx *c) {
    if (c->pack_mode != HP_GEMM_PACK_AUTO) return c->pack_mode == HP_GEMM_PACK_ALWAYS;
    return hp_gemm_auto_packs();
}

int hp_gemm_packed(const hp_gemm *g) { return g->packed && !g->portable; }

static dnnl_data_type_t dt(hp_dtype t) { return t == HP_BF16 ? dnnl_bf16 : dnnl_f32; }

/* A [rows, cols] view, row-major with leading dimension ld, or stored
 * transposed ([cols, ld] rows of ld elements, the view's rows its columns). */
static dnnl_status_t md2(dnnl_memory_desc_t *md, long rows, long cols, int trans, long ld, hp_dtype t) {
    dnnl_dims_t dims = {rows, cols};
    dnnl_dims_t strides = {ld, 1};
    if (trans) strides[0] = 1, strides[1] = ld;
    return dnnl_memory_desc_init_by_strides(md, 2, dims, dt(t), strides);
}

static hp_isa impl_isa(const char *impl, hp_dtype in) {
    if (strstr(impl, "amx")) return HP_ISA_AMX;
    if (strstr(impl, "bf16")) return HP_ISA_AVX512_BF16;
    if (strstr(impl, "avx512")) return HP_ISA_AVX512;
    if (strstr(impl, "avx2")) return HP_ISA_AVX2;
    if (strstr(impl, "jit")) { /* oneDNN's jit gemm: the widest ISA it allows itself */
        dnnl_cpu_isa_t e = dnnl_get_effective_cpu_isa();
        /* bf16 jit gemm: AMX tiles where oneDNN may use them (measured: 7x its speed
         * under ONEDNN_MAX_CPU_ISA=AVX512_CORE_BF16), else the bf16 dot products */
        if (in == HP_BF16 && (e & dnnl_cpu_isa_avx512_core_amx) == dnnl_cpu_isa_avx512_core_amx) return HP_ISA_AMX;
        if (in == HP_BF16 && (e & dnnl_cpu_isa_avx512_core_bf16) == dnnl_cpu_isa_avx512_core_bf16)
            return HP_ISA_AVX512_BF16;
        if ((e & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core) return HP_ISA_AVX512;
        if ((e & dnnl_cpu_isa_avx2) == dnnl_cpu_isa_avx2) return HP_ISA_AVX2;
    }
    return HP_ISA_PORTABLE;
}

static int dtype_ok(hp_dtype t) { return t == HP_F32 || t == HP_BF16; }

/* The user-managed scratchpad pd asks for, if any: a buffer of its own
 * (*buf, freed with the part) and the memory object over it (*mem). */
static hp_status make_scratch(dnnl_memory_t *mem, void **buf, const_dnnl_primitive_desc_t pd, dnnl_engine_t engine) {
    const dnnl_memory_desc_t *md = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t size = md ? dnnl_memory_desc_get_size(md) : 0;
    if (!size) return HP_OK;
    *buf = aligned_alloc(64, (size + 63) / 64 * 64);
    if (!*buf) return hp_errorf("gemm: out of memory for a %zu-byte scratchpad", size);
    dnnl_status_t s = dnnl_memory_create(mem, md, engine, *buf);
    if (s != dnnl_success) return hp_errorf("gemm: scratchpad memory: oneDNN returned %s", dnnl_status2str(s));
    return HP_OK;
}

/* The primitive of part p (rows [m0, m0 + m) of C) at one OpenMP thread. */
static hp_status prepare_part(hp_gemm *g, gemm_part *p) {
    const hp_gemm_desc *d = &g->d;
    hp_gemm_ctx *ctx = g->ctx;
    hp_status st = HP_OK;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_memory_desc_t amd, bmd, cmd, biasmd;
    /* a transposed A: a strided view, or packed dense per block before the run (see the top) */
    int view = d->trans_a && !g->packed;
    DNNL_TRY(md2(&amd, p->m, d->K, view, view ? d->M : d->K, d->a), "gemm %ldx%ldx%ld: A", d->M, d->N, d->K);
    DNNL_TRY(md2(&bmd, d->K, d->N, d->trans_b, d->trans_b ? d->K : d->N, d->b), "gemm %ldx%ldx%ld: B", d->M, d->N,
             d->K);
    DNNL_TRY(md2(&cmd, p->m, d->N, 0, d->N, d->c), "gemm %ldx%ldx%ld: C", d->M, d->N, d->K);
    DNNL_TRY(md2(&biasmd, 1, d->N, 0, d->N, HP_F32), "gemm %ldx%ldx%ld: bias", d->M, d->N, d->K);
    dnnl_matmul_desc_t mmd;
    DNNL_TRY(dnnl_matmul_desc_init(&mmd, &amd, &bmd, d->bias ? &biasmd : NULL, &cmd),
             "gemm %ldx%ldx%ld: matmul desc", d->M, d->N, d->K);
    DNNL_TRY(dnnl_primitive_attr_create(&attr), "gemm: attr");
    DNNL_TRY(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user), "gemm: attr");
    if (d->accumulate) {
        DNNL_TRY(dnnl_post_ops_create(&po), "gemm: post-ops");
        DNNL_TRY(dnnl_post_ops_append_sum(po, 1.0f), "gemm: post-ops");
        DNNL_TRY(dnnl_primitive_attr_set_post_ops(attr, po), "gemm: post-ops");
    }
    dnnl_status_t ps = dnnl_primitive_desc_create(&pd, &mmd, attr, ctx->engine, NULL);
    if (ps == dnnl_unimplemented) {
        st = hp_errorf("gemm %ldx%ldx%ld (%s x %s -> %s): no oneDNN matmul for it", d->M, d->N, d->K,
                       hp_dtype_name(d->a), hp_dtype_name(d->b), hp_dtype_name(d->c));
        goto fail;
    }
    DNNL_TRY(ps, "gemm %ldx%ldx%ld: primitive descriptor", d->M, d->N, d->K);
    const char *impl = "?";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    if (p == &g->part[0]) {
        snprintf(g->impl, sizeof g->impl, "%s", impl);
        g->isa = impl_isa(g->impl, d->a);
    }
    if ((st = make_scratch(&p->scratch, &p->scratch_buf, pd, ctx->engine))) goto fail;
    DNNL_TRY(dnnl_memory_create(&p->a, &amd, ctx->engine, DNNL_MEMORY_NONE), "gemm: memory A");
    DNNL_TRY(dnnl_memory_create(&p->b, &bmd, ctx->engine, DNNL_MEMORY_NONE), "gemm: memory B");
    DNNL_TRY(dnnl_memory_create(&p->c, &cmd, ctx->engine, DNNL_MEMORY_NONE), "gemm: memory C");
    if (d->bias)
        DNNL_TRY(dnnl_memory_create(&p->bias, &biasmd, ctx->engine, DNNL_MEMORY_NONE), "gemm: memory bias");
    DNNL_TRY(dnnl_primitive_create(&p->prim, pd), "gemm %ldx%ldx%ld: primitive", d->M, d->N, d->K);
    ctx->creations++;
    if (g->packed) {
        /* the block's columns of the stored A, transposed into the dense [m, K] block */
        dnnl_memory_desc_t vmd;
        DNNL_TRY(md2(&vmd, p->m, d->K, 1, d->M, d->a), "gemm %ldx%ldx%ld: pack view", d->M, d->N, d->K);
        DNNL_TRY(dnnl_primitive_attr_destroy(attr), "gemm: attr");
        attr = NULL;
        DNNL_TRY(dnnl_primitive_attr_create(&attr), "gemm: attr");
        DNNL_TRY(dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user), "gemm: attr");
        dnnl_primitive_desc_destroy(pd);
        pd = NULL;
        DNNL_TRY(dnnl_reorder_primitive_desc_create(&pd, &vmd, ctx->engine, &amd, ctx->engine, attr),
                 "gemm %ldx%ldx%ld: pack reorder", d->M, d->N, d->K);
        if ((st = make_scratch(&p->pack_scratch, &p->pack_scratch_buf, pd, ctx->engine))) goto fail;
        DNNL_TRY(dnnl_memory_create(&p->pack_src, &vmd, ctx->engine, DNNL_MEMORY_NONE), "gemm: memory pack");
        DNNL_TRY(dnnl_memory_create(&p->pack_dst, &amd, ctx->engine, DNNL_MEMORY_NONE), "gemm: memory pack");
        DNNL_TRY(dnnl_primitive_create(&p->pack, pd), "gemm %ldx%ldx%ld: pack reorder", d->M, d->N, d->K);
        ctx->creations++;
    }
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (po) dnnl_post_ops_destroy(po);
    return st;
}

/* Every pool thread's pack buffer holds g's largest block ([m, K] of A's dtype). */
static hp_status grow_packs(hp_gemm_ctx *ctx, const hp_gemm *g) {
    size_t need = 0;
    for (int i = 0; i < g->nparts; i++) {
        size_t b = (size_t)g->part[i].m * (size_t)g->d.K * hp_dtype_size(g->d.a);
        if (b > need) need = b;
    }
    need = (need + 63) / 64 * 64;
    for (int t = 0; t < ctx->nthreads; t++) {
        if (ctx->pack_bytes[t] >= need) continue;
        void *p = aligned_alloc(64, need);
        if (!p) return hp_errorf("gemm %ldx%ldx%ld: out of memory for a %zu-byte pack buffer", g->d.M, g->d.N, g->d.K, need);
        free(ctx->pack[t]);
        ctx->pack[t] = p;
        ctx->pack_bytes[t] = need;
    }
    return HP_OK;
}

hp_status hp_gemm_prepare(hp_gemm **out, hp_gemm_ctx *ctx, const hp_gemm_desc *d) {
    *out = NULL;
    if (d->M < 1 || d->N < 1 || d->K < 1 || !dtype_ok(d->a) || d->b != d->a || !dtype_ok(d->c))
        return hp_errorf("gemm %ldx%ldx%ld: shape must be positive and dtypes fp32/bf16 with a == b",
                         d->M, d->N, d->K);
    hp_gemm *g = calloc(1, sizeof *g);
    if (!g) return hp_errorf("gemm: out of memory");
    g->ctx = ctx;
    g->d = *d;
    if (d->serial && (d->trans_a || d->bias || d->accumulate)) {
        free(g);
        return hp_errorf("gemm %ldx%ldx%ld: a serial product takes no transposed A, bias or accumulation", d->M, d->N,
                         d->K);
    }
    g->packed = d->trans_a && packs(ctx);
    hp_status st = HP_OK;
    int old = threads_push(1);
    /* row blocks: one per pool thread, at least PART_MIN_ROWS rows each; with a
     * pool grain (deterministic mode) blocks of at least the grain, at most
     * GRAIN_PARTS, whatever the thread count, dealt to the threads */
    long grain = hp_pool_grain(ctx->pool), parts;
    if (d->serial) /* every pool thread a primitive of the whole product */
        parts = ctx->nthreads;
    else if (grain > 0) {
        parts = d->M / grain;
        if (parts > GRAIN_PARTS) parts = GRAIN_PARTS;
    } else {
        parts = d->M / PART_MIN_ROWS;
        if (parts > ctx->nthreads) parts = ctx->nthreads;
    }
    if (g->packed && grain <= 0 && (d->M + parts - 1) / parts > PACK_ROWS) /* bounded pack buffers */
        parts = (d->M + PACK_ROWS - 1) / PACK_ROWS;
    if (parts > MAX_PARTS) parts = MAX_PARTS;
    if (parts < 1) parts = 1;
    for (long i = 0; i < parts; i++) {
        gemm_part *p = &g->part[i];
        p->m0 = d->serial ? 0 : d->M * i / parts;
        p->m = d->serial ? d->M : d->M * (i + 1) / parts - p->m0;
    }
    g->nparts = (int)parts;
    int portable = d->a == HP_BF16 && (hp_kernels_portable() || d->portable);
    if (!portable) {
        st = prepare_part(g, &g->part[0]);
        for (int i = 1; !st && i < g->nparts; i++) st = prepare_part(g, &g->part[i]);
        /* oneDNN 2.6 implements bf16 matmul from avx512_core only: elsewhere the fallback */
        portable = st && d->a == HP_BF16 && !g->part[0].prim && strstr(hp_status_msg(st), "no oneDNN matmul");
        if (portable) {
            hp_status_free(st);
            st = HP_OK;
        }
    }
    if (!st && portable && d->serial) { /* no fallback: the caller keeps its own path */
        omp_set_num_threads(old);
        hp_gemm_free(g);
        return HP_OK;
    }
    if (!st && !portable && g->packed) /* the pack buffers of the threads that run its blocks */
        st = grow_packs(ctx, g);
    if (!st && portable) {
        for (int i = 0; i < g->nparts; i++) g->part[i] = (gemm_part){0};
        g->nparts = 0;
        g->portable = malloc(hp_gemm_portable_floats(d) * sizeof(float) + 64);
        if (!g->portable)
            st = hp_errorf("gemm %ldx%ldx%ld: out of memory for the portable path", d->M, d->N, d->K);
        snprintf(g->impl, sizeof g->impl, "portable: widened fp32 + OpenBLAS%s",
                 hp_kernels_portable() || d->portable ? " (forced)" : "");
        g->isa = HP_ISA_PORTABLE;
    }
    omp_set_num_threads(old);
    if (st) {
        hp_gemm_free(g);
        return st;
    }
    *out = g;
    return HP_OK;
}

void hp_gemm_free(hp_gemm *g) {
    if (!g) return;
    for (int k = 0; k < MAX_PARTS; k++) {
        gemm_part *p = &g->part[k];
        if (p->prim) dnnl_primitive_destroy(p->prim);
        if (p->pack) dnnl_primitive_destroy(p->pack);
        dnnl_memory_t *m[] = {&p->a, &p->b, &p->c, &p->bias, &p->scratch, &p->pack_src, &p->pack_dst, &p->pack_scratch};
        for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
            if (*m[i]) dnnl_memory_destroy(*m[i]);
        free(p->scratch_buf);
        free(p->pack_scratch_buf);
    }
    free(g->portable);
    free(g);
}

typedef struct {
    hp_gemm *g;
    char *c;
    const char *a;
    const void *b;
    const float *bias;
} run_ctx;

/* Part k on pool thread tid's stream. */
static void run_part(run_ctx *r, int k, int tid) {
    hp_gemm *g = r->g;
    gemm_part *p = &g->part[k];
    const hp_gemm_desc *d = &g->d;
    size_t ea = hp_dtype_size(d->a), ec = hp_dtype_size(d->c);
    /* op(A)'s rows m0..: rows of A, or columns of A stored transposed (packed dense first) */
    const char *a = r->a + (size_t)p->m0 * (d->trans_a ? ea : (size_t)d->K * ea);
    int old = threads_push(1);
    dnnl_status_t s = dnnl_success;
    dnnl_stream_t stream = g->ctx->stream[tid];
    if (g->packed) { /* oneDNN's reorder transposes the block's columns into the thread's pack buffer */
        s = dnnl_memory_set_data_handle(p->pack_src, (void *)a);
        if (s == dnnl_success) s = dnnl_memory_set_data_handle(p->pack_dst, g->ctx->pack[tid]);
        dnnl_exec_arg_t rargs[3] = {{DNNL_ARG_FROM, p->pack_src}, {DNNL_ARG_TO, p->pack_dst},
                                    {DNNL_ARG_SCRATCHPAD, p->pack_scratch}};
        if (s == dnnl_success) s = dnnl_primitive_execute(p->pack, stream, p->pack_scratch ? 3 : 2, rargs);
        a = g->ctx->pack[tid];
    }
    char *c = r->c + (size_t)p->m0 * (size_t)d->N * ec;
    dnnl_exec_arg_t args[5];
    int n = 0;
    if (s == dnnl_success) s = dnnl_memory_set_data_handle(p->a, (void *)a);
    if (s == dnnl_success) s = dnnl_memory_set_data_handle(p->b, (void *)r->b);
    if (s == dnnl_success) s = dnnl_memory_set_data_handle(p->c, c);
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, p->a};
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, p->b};
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DST, p->c};
    if (d->bias) {
        if (s == dnnl_success) s = dnnl_memory_set_data_handle(p->bias, (void *)r->bias);
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, p->bias};
    }
    if (p->scratch) args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, p->scratch};
    if (s == dnnl_success) s = dnnl_primitive_execute(p->prim, stream, n, args);
    if (s == dnnl_success) s = dnnl_stream_wait(stream);
    p->rc = s;
    omp_set_num_threads(old);
}

/* Pool thread tid runs parts tid, tid + nt, ... */
static void part_task(void *c_, int tid, int nt) {
    run_ctx *r = c_;
    for (int k = tid; k < r->g->nparts; k += nt) run_part(r, k, tid);
}

hp_status hp_gemm_run(hp_gemm *g, void *c, const void *a, const void *b, const float *bias) {
    if (g->portable) {
        hp_gemm_portable_run(g->ctx->pool, g->portable, &g->d, c, a, b, bias);
        return HP_OK;
    }
    run_ctx r = {g, c, a, b, bias};
    if (g->nparts == 1)
        run_part(&r, 0, 0); /* on the calling thread */
    else
        hp_pool_run(g->ctx->pool, part_task, &r);
    for (int i = 0; i < g->nparts; i++)
        if (g->part[i].rc != dnnl_success)
            return hp_errorf("gemm %ldx%ldx%ld: oneDNN execute returned %s (rows %ld..%ld)", g->d.M, g->d.N, g->d.K,
                             dnnl_status2str(g->part[i].rc), g->part[i].m0, g->part[i].m0 + g->part[i].m);
    return HP_OK;
}

hp_status hp_gemm_run_serial(hp_gemm *g, int tid, void *c, const void *a, const void *b) {
    HP_ASSERT(g->d.serial && tid >= 0 && tid < g->nparts);
    run_ctx r = {g, c, a, b, NULL};
    run_part(&r, tid, tid);
    if (g->part[tid].rc != dnnl_success)
        return hp_errorf("gemm %ldx%ldx%ld: oneDNN execute returned %s (serial, thread %d)", g->d.M, g->d.N, g->d.K,
                         dnnl_status2str(g->part[tid].rc), tid);
    return HP_OK;
}

int hp_gemm_parts(const hp_gemm *g) { return g->portable ? 0 : g->nparts; }

const hp_gemm_desc *hp_gemm_get_desc(const hp_gemm *g) { return &g->d; }
const char *hp_gemm_impl(const hp_gemm *g) { return g->impl; }
hp_isa hp_gemm_isa(const hp_gemm *g) { return g->isa; }
