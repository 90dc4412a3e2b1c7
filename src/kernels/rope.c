/* kernels/rope: rotary position embedding on the q and k parts of a fused
 * qkv, forward (rotate by +angle) and backward (rotate by -angle). Angles are
 * computed in double, t * theta^(-2i/hs) for position t and pair i. Threads
 * own blocks of positions; results are bit-identical for any pool size. */
#include <math.h>
#include <string.h>

#include "kernels/kernels.h"

#define ROPE_MAX_PAIRS 512 /* hs <= 1024 */

typedef struct {
    float *out;       /* [B,T,3C] */
    const float *inp; /* [B,T,3C] */
    long B, T, C, NH;
    float theta;
    float sign; /* +1 forward, -1 backward */
} rope_ctx;

static void rope_task(void *c_, int tid, int nt) {
    rope_ctx *c = c_;
    long t0, t1, B = c->B, T = c->T, C = c->C, NH = c->NH, hs = C / NH, np = hs / 2;
    hp_pool_split(&t0, &t1, T, 1, tid, nt);
    if (t0 >= t1) return;
    double inv[ROPE_MAX_PAIRS];
    float cs[ROPE_MAX_PAIRS], sn[ROPE_MAX_PAIRS];
    for (long i = 0; i < np; i++) inv[i] = pow((double)c->theta, -2.0 * (double)i / (double)hs);
    for (long t = t0; t < t1; t++) {
        for (long i = 0; i < np; i++) {
            double a = (double)t * inv[i];
            cs[i] = (float)cos(a);
            sn[i] = c->sign * (float)sin(a);
        }
        for (long b = 0; b < B; b++) {
            const float *x = c->inp + (b * T + t) * 3 * C;
            float *o = c->out + (b * T + t) * 3 * C;
            for (long h = 0; h < 2 * NH; h++) { /* q heads then k heads */
                const float *xh = x + h * hs;
                float *oh = o + h * hs;
                for (long i = 0; i < np; i++) {
                    float x0 = xh[2 * i], x1 = xh[2 * i + 1];
                    oh[2 * i] = x0 * cs[i] - x1 * sn[i];
                    oh[2 * i + 1] = x0 * sn[i] + x1 * cs[i];
                }
            }
            if (o != x) memcpy(o + 2 * C, x + 2 * C, (size_t)C * sizeof(float));
        }
    }
}

static void rope_run(hp_pool *pool, float *out, const float *inp, long B, long T, long C, long NH,
                     float theta, float sign) {
    HP_ASSERT(NH > 0 && C % NH == 0 && (C / NH) % 2 == 0 && C / NH <= 2 * ROPE_MAX_PAIRS);
    rope_ctx c = {
        .out = out, .inp = inp, .B = B, .T = T, .C = C, .NH = NH, .theta = theta, .sign = sign};
    hp_pool_run(B * T * C < 8192 ? NULL : pool, rope_task, &c);
}

void hp_k_rope_fwd(hp_pool *pool, float *out, const float *inp, long B, long T, long C, long NH,
                   float theta) {
    rope_run(pool, out, inp, B, T, C, NH, theta, 1.0f);
}

void hp_k_rope_bwd(hp_pool *pool, float *dinp, const float *dout, long B, long T, long C, long NH,
                   float theta) {
    rope_run(pool, dinp, dout, B, T, C, NH, theta, -1.0f);
}
