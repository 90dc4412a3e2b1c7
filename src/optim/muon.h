/* optim/muon: the elementwise parts of Muon around Newton-Schulz: the
 * momentum update that turns a gradient into the matrix to orthogonalise, the
 * update scale for a (rows x cols) matrix, and the decoupled-weight-decay
 * parameter update. A distributed Muon uses these unchanged on the rank that
 * owns a matrix. Elementwise work is split over the pool in blocks of 16
 * values; every value is computed the same way whatever the pool size. */
#ifndef HP_OPTIM_MUON_H
#define HP_OPTIM_MUON_H

#include "core/pool.h"
#include "core/status.h"

/* How momentum accumulates.
 *  HP_MUON_EMA (running average): M <- beta M + (1-beta) G;
 *      Nesterov U = (1-beta) G + beta M, else U = M.
 *  HP_MUON_SUM (sum form):        M <- beta M + G;
 *      Nesterov U = G + beta M, else U = M.
 * Both point the same way (they differ by the factor 1/(1-beta)), and
 * Newton-Schulz normalises U, so the step is nearly the same. */
typedef enum { HP_MUON_EMA = 0, HP_MUON_SUM = 1 } hp_muon_momentum;

/* Update scale s in W <- W (1 - lr wd) - lr s O.
 *  HP_MUON_SCALE_KELLER:    s = sqrt(max(1, rows/cols))
 *  HP_MUON_SCALE_MOONLIGHT: s = 0.2 sqrt(max(rows, cols)) (update RMS like AdamW's) */
typedef enum { HP_MUON_SCALE_KELLER = 0, HP_MUON_SCALE_MOONLIGHT = 1 } hp_muon_scale_mode;

/* Names: "ema" (alias "average"), "sum"; "keller", "moonlight". Errors name
 * the field (muon_momentum / muon_scale). */
hp_status hp_muon_momentum_parse(hp_muon_momentum *out, const char *name);
hp_status hp_muon_scale_parse(hp_muon_scale_mode *out, const char *name);
const char *hp_muon_momentum_name(hp_muon_momentum m);
const char *hp_muon_scale_name(hp_muon_scale_mode s);

/* The scale s for one rows x cols matrix (rows = output features). */
float hp_muon_scale(hp_muon_scale_mode mode, long rows, long cols);

/* u[n] = the matrix to orthogonalise, m[n] updated in place from grad[n]
 * (see hp_muon_momentum). u may alias grad (the gradient is then overwritten). */
void hp_muon_momentum_update(hp_pool *pool, float *u, float *m, const float *grad, long n,
                             float beta, hp_muon_momentum form, int nesterov);
/* The same with the gradient read as grad[i] * grad_scale (clipping fused in;
 * bit-identical to scaling the gradient first). */
void hp_muon_momentum_update_scaled(hp_pool *pool, float *u, float *m, const float *grad, long n,
                                    float beta, hp_muon_momentum form, int nesterov,
                                    float grad_scale);

/* param[n] = param (1 - lr wd) - lr scale o[n]. */
void hp_muon_apply(hp_pool *pool, float *param, const float *o, long n, float lr, float wd,
                   float scale);

#endif
