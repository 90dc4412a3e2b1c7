/* kernels/moe: the Mixture-of-Experts layer's own kernels (ops/moe), fp32.
 * Routing: each token's scores (softmax or sigmoid of its router logits),
 * its top k experts (the higher score first, ties to the lower expert id),
 * their weights (renormalised over the k when asked), and the per-expert
 * sums the load-balancing loss needs; then, with a capacity, each expert's
 * routed slots beyond it dropped, the lowest scores first (ties: the later
 * token), so the result is a function of the scores alone. Dispatch and
 * combine move rows by index lists. Rows are split over the pool where the
 * work is per row; sums over tokens run in token order in double, so every
 * result is the same bits for any pool size. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/kernels.h"

typedef struct {
    const float *logits; /* [N, E] */
    float *probs;        /* [N, E] */
    float *weights;      /* [N, k] */
    int32_t *index;      /* [N, k] */
    float *lse;          /* [N] */
    long N, E, k;
    int sigmoid, renorm;
} route_ctx;

static void route_task(void *c_, int tid, int nt) {
    route_ctx *c = c_;
    long n0, n1, E = c->E, k = c->k;
    hp_pool_split(&n0, &n1, c->N, 1, tid, nt);
    for (long n = n0; n < n1; n++) {
        const float *x = c->logits + n * E;
        float *p = c->probs + n * E, m = x[0];
        for (long e = 1; e < E; e++) m = x[e] > m ? x[e] : m;
        double s = 0;
        for (long e = 0; e < E; e++) s += exp((double)(x[e] - m));
        c->lse[n] = (float)((double)m + log(s));
        for (long e = 0; e < E; e++)
            p[e] = c->sigmoid ? (float)(1.0 / (1.0 + exp(-(double)x[e]))) : (float)(exp((double)(x[e] - m)) / s);
        int32_t *ix = c->index + n * k;
        float *w = c->weights + n * k;
        for (long j = 0; j < k; j++) { /* the j-th best: the highest score not taken, ties to the lower id */
            long best = -1;
            for (long e = 0; e < E; e++) {
                int taken = 0;
                for (long i = 0; i < j && !taken; i++) taken = ix[i] == e;
                if (!taken && (best < 0 || p[e] > p[best])) best = e;
            }
            ix[j] = (int32_t)best, w[j] = p[best];
        }
        if (c->renorm) {
            double t = 0;
            for (long j = 0; j < k; j++) t += w[j];
            for (long j = 0; j < k; j++) w[j] = t > 0 ? (float)(w[j] / t) : 0.0f;
        }
    }
}

typedef struct {
    long token, slot;
    float score;
} routed;

/* within one expert: the higher score first, then the earlier token */
static int by_score(const void *a_, const void *b_) {
    const routed *a = a_, *b = b_;
    if (a->score != b->score) return a->score > b->score ? -1 : 1;
    return a->token < b->token ? -1 : a->token > b->token;
}

size_t hp_k_moe_route_scratch(long N, long E, long k) {
    return (size_t)((N * E + N + 1) / 2 * 2) + (sizeof(routed) * (size_t)(N * k) + sizeof(float) - 1) / sizeof(float);
}

void hp_k_moe_route(hp_pool *pool, float *weights, int32_t *index, float *scores, float *psum, float *count,
                    float *zsum, float *scratch, const float *logits, long N, long E, long k, int sigmoid, int renorm,
                    long capacity, float zscale) {
    float *probs = scratch, *lse = scratch + N * E;
    routed *r = (routed *)(void *)(scratch + (N * E + N + 1) / 2 * 2); /* 8-byte aligned (the scratch is) */
    route_ctx c = {logits, probs, weights, index, lse, N, E, k, sigmoid, renorm};
    hp_pool_run(N * E < 4096 ? NULL : pool, route_task, &c);
    double z = 0;
    for (long n = 0; n < N; n++) z += (double)lse[n] * (double)lse[n];
    zsum[0] = (float)(z * (double)zscale);
    for (long e = 0; e < E; e++) {
        double s = 0;
        for (long n = 0; n < N; n++) s += probs[n * E + e];
        psum[e] = (float)s, count[e] = 0;
    }
    for (long i = 0; i < N * k; i++) count[index[i]] += 1.0f; /* routed, before any drop */
    if (scores) /* each slot's score (what a capacity ranks by) */
        for (long i = 0; i < N * k; i++) scores[i] = probs[(i / k) * E + index[i]];
    if (capacity <= 0) return;
    for (long e = 0; e < E; e++) {
        long nr = 0;
        for (long n = 0; n < N; n++)
            for (long j = 0; j < k; j++)
                if (index[n * k + j] == e) r[nr++] = (routed){n, j, probs[n * E + e]};
        if (nr <= capacity) continue;
        qsort(r, (size_t)nr, sizeof *r, by_score);
        for (long i = capacity; i < nr; i++) index[r[i].token * k + r[i].slot] = -1, weights[r[i].token * k + r[i].slot] = 0;
    }
}

void hp_k_moe_route_bwd(hp_pool *pool, float *dlogits, const float *dweights, const float *dpsum, float dz,
                        const float *logits, const int32_t *index, long N, long E, long k, int sigmoid, int renorm) {
    (void)pool;
    for (long n = 0; n < N; n++) {
        const float *x = logits + n * E, *dw = dweights ? dweights + n * k : NULL;
        float *p = dlogits + n * E; /* the row's scores first, then its gradient over them */
        {
            float m = x[0];
            for (long e = 1; e < E; e++) m = x[e] > m ? x[e] : m;
            double s = 0;
            for (long e = 0; e < E; e++) s += exp((double)(x[e] - m));
            for (long e = 0; e < E; e++)
                p[e] = sigmoid ? (float)(1.0 / (1.0 + exp(-(double)x[e]))) : (float)(exp((double)(x[e] - m)) / s);
        }
        const int32_t *ix = index + n * k;
        float d[HP_MOE_MAX_EXPERTS];
        for (long e = 0; e < E; e++) d[e] = dpsum ? dpsum[e] : 0.0f; /* psum_e = sum_n p[n, e] */
        if (dw) {
            /* the kept slots' weights: w_j = p[e_j] (/ S, S the sum over the top k, dropped slots included) */
            double S = 0, dot = 0;
            int top[HP_MOE_MAX_TOPK];
            long nt = 0;
            if (renorm) { /* recover the top k (dropped slots carry -1 in index: find them again) */
                for (long j = 0; j < k; j++) {
                    long best = -1;
                    for (long e = 0; e < E; e++) {
                        int taken = 0;
                        for (long i = 0; i < nt && !taken; i++) taken = top[i] == e;
                        if (!taken && (best < 0 || p[e] > p[best])) best = e;
                    }
                    top[nt++] = (int)best;
                    S += p[best];
                }
                for (long j = 0; j < k; j++)
                    if (ix[j] >= 0) dot += (double)dw[j] * (double)p[ix[j]] / S;
                for (long j = 0; j < nt; j++) d[top[j]] += (float)(-dot / S);
                for (long j = 0; j < k; j++)
                    if (ix[j] >= 0) d[ix[j]] += (float)((double)dw[j] / S);
            } else {
                for (long j = 0; j < k; j++)
                    if (ix[j] >= 0) d[ix[j]] += dw[j];
            }
        }
        /* through the scores: softmax's Jacobian, or sigmoid's */
        if (sigmoid) {
            for (long e = 0; e < E; e++) d[e] *= p[e] * (1.0f - p[e]);
        } else {
            double dot = 0;
            for (long e = 0; e < E; e++) dot += (double)d[e] * (double)p[e];
            for (long e = 0; e < E; e++) d[e] = p[e] * (float)((double)d[e] - dot);
        }
        float *out = dlogits + n * E;
        if (dz != 0) { /* z-loss: d(lse^2) = 2 lse softmax(x) */
            float m = x[0];
            for (long e = 1; e < E; e++) m = x[e] > m ? x[e] : m;
            double s = 0;
            for (long e = 0; e < E; e++) s += exp((double)(x[e] - m));
            double l = (double)m + log(s);
            for (long e = 0; e < E; e++) d[e] += (float)((double)dz * 2.0 * l * exp((double)(x[e] - m)) / s);
        }
        memcpy(out, d, sizeof(float) * (size_t)E);
    }
}

void hp_k_moe_dispatch(float *xp, int32_t *eid, int32_t *rowof, const float *x, const int32_t *index, long N,
                       long C, long E, long k) {
    long R = N * k, used = 0;
    if (E > R) { /* more experts than slots: expert by expert */
        for (long e = 0; e < E; e++)
            for (long i = 0; i < R; i++)
                if (index[i] == e) {
                    memcpy(xp + used * C, x + (i / k) * C, sizeof(float) * (size_t)C);
                    eid[used] = (int32_t)e, rowof[i] = (int32_t)used, used++;
                }
        for (long i = 0; i < R; i++)
            if (index[i] < 0 || index[i] >= E) rowof[i] = -1;
        for (long r = used; r < R; r++) {
            memset(xp + r * C, 0, sizeof(float) * (size_t)C);
            eid[r] = -1;
        }
        return;
    }
    /* a counting sort: eid[e] first counts expert e's slots, then holds its next free row */
    for (long r = 0; r < R; r++) eid[r] = 0;
    for (long i = 0; i < R; i++)
        if (index[i] >= 0 && index[i] < E) eid[index[i]]++;
    for (long e = 0; e < E; e++) {
        long c = eid[e];
        eid[e] = (int32_t)used, used += c;
    }
    for (long i = 0; i < R; i++) {
        int32_t e = index[i];
        if (e < 0 || e >= E) {
            rowof[i] = -1;
            continue;
        }
        rowof[i] = eid[e]++; /* eid[e] now: the next free row of expert e */
    }
    for (long i = 0; i < R; i++)
        if (rowof[i] >= 0) {
            long r = rowof[i];
            memcpy(xp + r * C, x + (i / k) * C, sizeof(float) * (size_t)C);
        }
    for (long i = 0; i < R; i++)
        if (rowof[i] >= 0) eid[rowof[i]] = index[i];
    for (long r = used; r < R; r++) {
        memset(xp + r * C, 0, sizeof(float) * (size_t)C);
        eid[r] = -1;
    }
}

void hp_k_moe_dispatch_bwd(float *dx, const float *dxp, const int32_t *rowof, long N, long C, long k) {
    for (long n = 0; n < N; n++) {
        float *d = dx + n * C;
        memset(d, 0, sizeof(float) * (size_t)C);
        for (long j = 0; j < k; j++) {
            int32_t r = rowof[n * k + j];
            if (r < 0) continue;
            const float *g = dxp + (long)r * C;
            for (long c = 0; c < C; c++) d[c] += g[c];
        }
    }
}

void hp_k_moe_combine(float *y, const float *yp, const float *weights, const int32_t *rowof, long N, long C, long k) {
    for (long n = 0; n < N; n++) {
        float *o = y + n * C;
        memset(o, 0, sizeof(float) * (size_t)C);
        for (long j = 0; j < k; j++) {
            int32_t r = rowof[n * k + j];
            if (r < 0) continue;
            const float *v = yp + (long)r * C;
            float w = weights[n * k + j];
            for (long c = 0; c < C; c++) o[c] += w * v[c];
        }
    }
}

void hp_k_moe_combine_bwd(float *dyp, float *dweights, const float *dy, const float *yp, const float *weights,
                          const int32_t *rowof, long N, long C, long k, long R) {
    if (dyp) memset(dyp, 0, sizeof(float) * (size_t)(R * C));
    for (long n = 0; n < N; n++) {
        const float *g = dy + n * C;
        for (long j = 0; j < k; j++) {
            int32_t r = rowof[n * k + j];
            if (dweights) dweights[n * k + j] = 0;
            if (r < 0) continue;
            const float *v = yp + (long)r * C;
            if (dweights) {
                double s = 0;
                for (long c = 0; c < C; c++) s += (double)g[c] * (double)v[c];
                dweights[n * k + j] = (float)s;
            }
            if (dyp) {
                float *o = dyp + (long)r * C, w = weights[n * k + j];
                for (long c = 0; c < C; c++) o[c] = w * g[c];
            }
        }
    }
}
