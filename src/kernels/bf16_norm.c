/* kernels/bf16_norm: LayerNorm and RMSNorm in bf16. Each row is widened into
 * the thread's scratch and normalised by the fp32 kernel (one row, on this
 * thread), so the statistics are the fp32 kernel's; the weight gradients are
 * column sums over the widened rows in the fp32 kernels' order and precision
 * (double, row order, each column block owned by one thread). */
#include "kernels/bf16.h"
#include "kernels/bf16_row.h"
#include "kernels/kernels.h"

#define NORM_COLS 256
#define NORM_ROWS 5 /* scratch rows of C floats per thread */

typedef struct {
    uint16_t *out;               /* out / dinp [N,C] (bf16) */
    float *mean, *rstd, *dw, *db; /* [N], [N], [C], [C] */
    const uint16_t *inp, *dout;  /* [N,C] (bf16) */
    const float *w, *b;          /* [C] */
    const float *smean, *srstd;  /* saved [N] */
    float *scratch;              /* nthreads x NORM_ROWS x [C] */
    long N, C;
    float eps;
    int rms;
} nb_ctx;

size_t hp_kb_norm_scratch(long C, int nthreads) { return (size_t)nthreads * NORM_ROWS * (size_t)C; }

static void norm_fwd_task(void *c_, int tid, int nt) {
    nb_ctx *c = c_;
    long n0, n1, C = c->C;
    float *x = c->scratch + (long)tid * NORM_ROWS * C, *o = x + C;
    hp_pool_split(&n0, &n1, c->N, 1, tid, nt);
    for (long n = n0; n < n1; n++) {
        hp_kb_widen(x, c->inp + n * C, C);
        if (c->rms)
            hp_k_rmsnorm_fwd(NULL, o, &c->rstd[n], x, c->w, 1, C, c->eps);
        else
            hp_k_layernorm_fwd(NULL, o, &c->mean[n], &c->rstd[n], x, c->w, c->b, 1, C, c->eps);
        hp_kb_narrow(c->out + n * C, o, C);
    }
}

/* dinp for the thread's rows, then dw (and db) for its block of columns. */
static void norm_bwd_task(void *c_, int tid, int nt) {
    nb_ctx *c = c_;
    long n0, n1, N = c->N, C = c->C;
    float *x = c->scratch + (long)tid * NORM_ROWS * C, *g = x + C, *d = g + C, *tw = d + C, *tb = tw + C;
    hp_pool_split(&n0, &n1, N, 1, tid, nt);
    for (long n = n0; n < n1; n++) {
        hp_kb_widen(x, c->inp + n * C, C);
        hp_kb_widen(g, c->dout + n * C, C);
        if (c->rms)
            hp_k_rmsnorm_bwd(NULL, d, tw, g, x, c->w, &c->srstd[n], NULL, 1, C);
        else
            hp_k_layernorm_bwd(NULL, d, tw, tb, g, x, c->w, &c->smean[n], &c->srstd[n], NULL, 1, C);
        hp_kb_narrow(c->out + n * C, d, C);
    }
    long c0, c1;
    hp_pool_split(&c0, &c1, C, 16, tid, nt);
    for (long j0 = c0; j0 < c1; j0 += NORM_COLS) {
        long wd = c1 - j0 < NORM_COLS ? c1 - j0 : NORM_COLS;
        double aw[NORM_COLS] = {0}, ab[NORM_COLS] = {0};
        for (long n = 0; n < N; n++) {
            const uint16_t *xr = c->inp + n * C + j0, *gr = c->dout + n * C + j0;
            float s = c->srstd[n];
            if (c->rms) {
                for (long j = 0; j < wd; j++) aw[j] += (double)(hp_kb_f(gr[j]) * (hp_kb_f(xr[j]) * s));
            } else {
                float m = c->smean[n];
                for (long j = 0; j < wd; j++) {
                    float gj = hp_kb_f(gr[j]);
                    aw[j] += (double)(gj * ((hp_kb_f(xr[j]) - m) * s));
                    ab[j] += gj;
                }
            }
        }
        for (long j = 0; j < wd; j++) {
            c->dw[j0 + j] = (float)aw[j];
            if (!c->rms) c->db[j0 + j] = (float)ab[j];
        }
    }
}

void hp_kb_layernorm_fwd(hp_pool *pool, uint16_t *out, float *mean, float *rstd,
                         const uint16_t *inp, const float *w, const float *b, float *scratch,
                         long N, long C, float eps) {
    nb_ctx c = {.out = out, .mean = mean, .rstd = rstd, .inp = inp, .w = w, .b = b,
                .scratch = scratch, .N = N, .C = C, .eps = eps};
    hp_pool_run(N * C < 8192 ? NULL : pool, norm_fwd_task, &c);
}

void hp_kb_layernorm_bwd(hp_pool *pool, uint16_t *dinp, float *dw, float *db,
                         const uint16_t *dout, const uint16_t *inp, const float *w,
                         const float *mean, const float *rstd, float *scratch, long N, long C) {
    nb_ctx c = {.out = dinp, .dw = dw, .db = db, .dout = dout, .inp = inp, .w = w, .smean = mean,
                .srstd = rstd, .scratch = scratch, .N = N, .C = C};
    hp_pool_run(N * C < 8192 ? NULL : pool, norm_bwd_task, &c);
}

void hp_kb_rmsnorm_fwd(hp_pool *pool, uint16_t *out, float *rstd, const uint16_t *inp,
                       const float *w, float *scratch, long N, long C, float eps) {
    nb_ctx c = {.out = out, .rstd = rstd, .inp = inp, .w = w, .scratch = scratch, .N = N, .C = C,
                .eps = eps, .rms = 1};
    hp_pool_run(N * C < 8192 ? NULL : pool, norm_fwd_task, &c);
}

void hp_kb_rmsnorm_bwd(hp_pool *pool, uint16_t *dinp, float *dw, const uint16_t *dout,
                       const uint16_t *inp, const float *w, const float *rstd, float *scratch,
                       long N, long C) {
    nb_ctx c = {.out = dinp, .dw = dw, .dout = dout, .inp = inp, .w = w, .srstd = rstd,
                .scratch = scratch, .N = N, .C = C, .rms = 1};
    hp_pool_run(N * C < 8192 ? NULL : pool, norm_bwd_task, &c);
}
