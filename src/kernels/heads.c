/* kernels/heads: the backward of repeating attention heads (grouped-query
 * attention's keys and values, ops/heads): each of a row's kv heads gets
 * the sum of the gradients of its rep copies, in copy order. fp32, and bf16
 * (summed in fp32, rounded once). Rows are split over the pool. */
#include "core/tensor.h"
#include "kernels/bf16.h"
#include "kernels/bf16_row.h"
#include "kernels/kernels.h"

typedef struct {
    void *dx;
    const void *dy;
    long rows, hkv, hs, rep;
} sh_ctx;

static void sum_task(void *c_, int tid, int nt) {
    sh_ctx *c = c_;
    long r0, r1, hs = c->hs, rep = c->rep, w = c->hkv * hs;
    hp_pool_split(&r0, &r1, c->rows, 1, tid, nt);
    for (long r = r0; r < r1; r++)
        for (long j = 0; j < c->hkv; j++) {
            float *d = (float *)c->dx + r * w + j * hs;
            const float *y = (const float *)c->dy + (r * c->hkv + j) * rep * hs;
            for (long e = 0; e < hs; e++) d[e] = y[e];
            for (long k = 1; k < rep; k++)
                for (long e = 0; e < hs; e++) d[e] += y[k * hs + e];
        }
}

void hp_k_sum_heads(hp_pool *pool, float *dx, const float *dy, long rows, long hkv, long hs, long rep) {
    sh_ctx c = {dx, dy, rows, hkv, hs, rep};
    hp_pool_run(rows * hkv * hs * rep < 8192 ? NULL : pool, sum_task, &c);
}

static void sum_task_bf16(void *c_, int tid, int nt) {
    sh_ctx *c = c_;
    long r0, r1, hs = c->hs, rep = c->rep, w = c->hkv * hs;
    hp_pool_split(&r0, &r1, c->rows, 1, tid, nt);
    for (long r = r0; r < r1; r++)
        for (long j = 0; j < c->hkv; j++) {
            uint16_t *d = (uint16_t *)c->dx + r * w + j * hs;
            const uint16_t *y = (const uint16_t *)c->dy + (r * c->hkv + j) * rep * hs;
            for (long e = 0; e < hs; e++) {
                float s = hp_kb_f(y[e]);
                for (long k = 1; k < rep; k++) s += hp_kb_f(y[k * hs + e]);
                d[e] = hp_f32_to_bf16(s);
            }
        }
}

void hp_kb_sum_heads(hp_pool *pool, uint16_t *dx, const uint16_t *dy, long rows, long hkv, long hs, long rep) {
    sh_ctx c = {dx, dy, rows, hkv, hs, rep};
    hp_pool_run(rows * hkv * hs * rep < 8192 ? NULL : pool, sum_task_bf16, &c);
}
