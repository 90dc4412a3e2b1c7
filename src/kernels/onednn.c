/* kernels/onednn: hp_gemm over oneDNN's C API (matmul primitive, user-managed
 * scratchpad, memory objects created at prepare time and re-pointed per run). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <oneapi/dnnl/dnnl.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include "kernels/gemm.h"
#include "kernels/gemm_portable.h"

struct hp_gemm_ctx {
    hp_pool *pool;
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    int nthreads;
    long creations;
};

struct hp_gemm {
    hp_gemm_ctx *ctx;
    hp_gemm_desc d;
    dnnl_primitive_t prim;
    dnnl_memory_t a, b, c, bias, scratch;
    void *scratch_buf;
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
    DNNL_TRY(dnnl_engine_create(&c->engine, dnnl_cpu, 0), "gemm context: no oneDNN CPU engine");
    DNNL_TRY(dnnl_stream_create(&c->stream, c->engine, dnnl_stream_default_flags),
             "gemm context: no oneDNN stream");
    *out = c;
    return HP_OK;
fail:
    hp_gemm_ctx_destroy(c);
    return st;
}

void hp_gemm_ctx_destroy(hp_gemm_ctx *c) {
    if (!c) return;
    if (c->stream) dnnl_stream_destroy(c->stream);
    if (c->engine) dnnl_engine_destroy(c->engine);
    free(c);
}

int hp_gemm_ctx_threads(const hp_gemm_ctx *c) { return c->nthreads; }
hp_pool *hp_gemm_ctx_pool(const hp_gemm_ctx *c) { return c->pool; }
long hp_gemm_ctx_creations(const hp_gemm_ctx *c) { return c->creations; }

static dnnl_data_type_t dt(hp_dtype t) { return t == HP_BF16 ? dnnl_bf16 : dnnl_f32; }

/* A [rows, cols] matrix, row-major, or stored transposed ([cols, rows]). */
static dnnl_status_t md2(dnnl_memory_desc_t *md, long rows, long cols, int trans, hp_dtype t) {
    dnnl_dims_t dims = {rows, cols};
    dnnl_dims_t strides = {cols, 1};
    if (trans) strides[0] = 1, strides[1] = rows;
    return dnnl_memory_desc_init_by_strides(md, 2, dims, dt(t), strides);
}

static hp_isa impl_isa(const char *impl) {
    if (strstr(impl, "amx")) return HP_ISA_AMX;
    if (strstr(impl, "bf16")) return HP_ISA_AVX512_BF16;
    if (strstr(impl, "avx512")) return HP_ISA_AVX512;
    if (strstr(impl, "avx2")) return HP_ISA_AVX2;
    if (strstr(impl, "jit")) { /* oneDNN's jit gemm: the widest ISA it allows itself */
        dnnl_cpu_isa_t e = dnnl_get_effective_cpu_isa();
        if ((e & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core) return HP_ISA_AVX512;
        if ((e & dnnl_cpu_isa_avx2) == dnnl_cpu_isa_avx2) return HP_ISA_AVX2;
    }
    return HP_ISA_PORTABLE;
}

static int dtype_ok(hp_dtype t) { return t == HP_F32 || t == HP_BF16; }

hp_status hp_gemm_prepare(hp_gemm **out, hp_gemm_ctx *ctx, const hp_gemm_desc *d) {
    *out = NULL;
    if (d->M < 1 || d->N < 1 || d->K < 1 || !dtype_ok(d->a) || d->b != d->a || !dtype_ok(d->c))
        return hp_errorf("gemm %ldx%ldx%ld: shape must be positive and dtypes fp32/bf16 with a == b",
                         d->M, d->N, d->K);
    hp_gemm *g = calloc(1, sizeof *g);
    if (!g) return hp_errorf("gemm: out of memory");
    g->ctx = ctx;
    g->d = *d;
    hp_status st = HP_OK;
    dnnl_primitive_attr_t attr = NULL;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_desc_t pd = NULL;
    int old = threads_push(ctx->nthreads);
    dnnl_memory_desc_t amd, bmd, cmd, biasmd;
    DNNL_TRY(md2(&amd, d->M, d->K, d->trans_a, d->a), "gemm %ldx%ldx%ld: A", d->M, d->N, d->K);
    DNNL_TRY(md2(&bmd, d->K, d->N, d->trans_b, d->b), "gemm %ldx%ldx%ld: B", d->M, d->N, d->K);
    DNNL_TRY(md2(&cmd, d->M, d->N, 0, d->c), "gemm %ldx%ldx%ld: C", d->M, d->N, d->K);
    DNNL_TRY(md2(&biasmd, 1, d->N, 0, HP_F32), "gemm %ldx%ldx%ld: bias", d->M, d->N, d->K);
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
    dnnl_status_t ps = dnnl_unimplemented;
    if (!(d->a == HP_BF16 && hp_kernels_portable()))
        ps = dnnl_primitive_desc_create(&pd, &mmd, attr, ctx->engine, NULL);
    if (ps == dnnl_unimplemented && d->a == HP_BF16) {
        g->portable = malloc(hp_gemm_portable_floats(d) * sizeof(float) + 64);
        if (!g->portable) {
            st = hp_errorf("gemm %ldx%ldx%ld: out of memory for the portable path", d->M, d->N, d->K);
            goto fail;
        }
        snprintf(g->impl, sizeof g->impl, "portable: widened fp32 + OpenBLAS%s",
                 hp_kernels_portable() ? " (forced)" : "");
        g->isa = HP_ISA_PORTABLE;
        dnnl_primitive_attr_destroy(attr);
        if (po) dnnl_post_ops_destroy(po);
        omp_set_num_threads(old);
        *out = g;
        return HP_OK;
    }
    DNNL_TRY(ps, "gemm %ldx%ldx%ld (%s x %s -> %s): no oneDNN matmul for it", d->M, d->N, d->K,
             hp_dtype_name(d->a), hp_dtype_name(d->b), hp_dtype_name(d->c));
    const char *impl = "?";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    snprintf(g->impl, sizeof g->impl, "%s", impl);
    g->isa = impl_isa(g->impl);
    const dnnl_memory_desc_t *spmd = dnnl_primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
    size_t spsize = spmd ? dnnl_memory_desc_get_size(spmd) : 0;
    if (spsize) {
        g->scratch_buf = aligned_alloc(64, (spsize + 63) / 64 * 64);
        if (!g->scratch_buf) {
            st = hp_errorf("gemm: out of memory for a %zu-byte scratchpad", spsize);
            goto fail;
        }
        DNNL_TRY(dnnl_memory_create(&g->scratch, spmd, ctx->engine, g->scratch_buf), "gemm: scratchpad");
    }
    DNNL_TRY(dnnl_memory_create(&g->a, &amd, ctx->engine, DNNL_MEMORY_NONE), "gemm: memory A");
    DNNL_TRY(dnnl_memory_create(&g->b, &bmd, ctx->engine, DNNL_MEMORY_NONE), "gemm: memory B");
    DNNL_TRY(dnnl_memory_create(&g->c, &cmd, ctx->engine, DNNL_MEMORY_NONE), "gemm: memory C");
    if (d->bias)
        DNNL_TRY(dnnl_memory_create(&g->bias, &biasmd, ctx->engine, DNNL_MEMORY_NONE), "gemm: memory bias");
    DNNL_TRY(dnnl_primitive_create(&g->prim, pd), "gemm %ldx%ldx%ld: primitive", d->M, d->N, d->K);
    ctx->creations++;
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_attr_destroy(attr);
    if (po) dnnl_post_ops_destroy(po);
    omp_set_num_threads(old);
    *out = g;
    return HP_OK;
fail:
    if (pd) dnnl_primitive_desc_destroy(pd);
    if (attr) dnnl_primitive_attr_destroy(attr);
    if (po) dnnl_post_ops_destroy(po);
    omp_set_num_threads(old);
    hp_gemm_free(g);
    return st;
}

void hp_gemm_free(hp_gemm *g) {
    if (!g) return;
    if (g->prim) dnnl_primitive_destroy(g->prim);
    dnnl_memory_t *m[] = {&g->a, &g->b, &g->c, &g->bias, &g->scratch};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (*m[i]) dnnl_memory_destroy(*m[i]);
    free(g->scratch_buf);
    free(g->portable);
    free(g);
}

hp_status hp_gemm_run(hp_gemm *g, void *c, const void *a, const void *b, const float *bias) {
    if (g->portable) {
        hp_gemm_portable_run(g->ctx->pool, g->portable, &g->d, c, a, b, bias);
        return HP_OK;
    }
    hp_status st = HP_OK;
    int old = threads_push(g->ctx->nthreads);
    dnnl_exec_arg_t args[5];
    int n = 0;
    DNNL_TRY(dnnl_memory_set_data_handle(g->a, (void *)a), "gemm: A");
    DNNL_TRY(dnnl_memory_set_data_handle(g->b, (void *)b), "gemm: B");
    DNNL_TRY(dnnl_memory_set_data_handle(g->c, c), "gemm: C");
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SRC, g->a};
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_WEIGHTS, g->b};
    args[n++] = (dnnl_exec_arg_t){DNNL_ARG_DST, g->c};
    if (g->d.bias) {
        DNNL_TRY(dnnl_memory_set_data_handle(g->bias, (void *)bias), "gemm: bias");
        args[n++] = (dnnl_exec_arg_t){DNNL_ARG_BIAS, g->bias};
    }
    if (g->scratch) args[n++] = (dnnl_exec_arg_t){DNNL_ARG_SCRATCHPAD, g->scratch};
    DNNL_TRY(dnnl_primitive_execute(g->prim, g->ctx->stream, n, args), "gemm %ldx%ldx%ld: execute",
             g->d.M, g->d.N, g->d.K);
    DNNL_TRY(dnnl_stream_wait(g->ctx->stream), "gemm: stream wait");
fail:
    omp_set_num_threads(old);
    return st;
}

const hp_gemm_desc *hp_gemm_get_desc(const hp_gemm *g) { return &g->d; }
const char *hp_gemm_impl(const hp_gemm *g) { return g->impl; }
hp_isa hp_gemm_isa(const hp_gemm *g) { return g->isa; }
