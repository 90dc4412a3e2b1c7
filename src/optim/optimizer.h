/* optim/optimizer: the single-process optimizer object. It routes every
 * parameter to AdamW or Muon (optim/route.h), allocates all optimizer state
 * once (fp32, zeroed), and steps all parameters from their gradients. It also
 * clips gradients by their global norm, lists its state tensors by name for
 * checkpoints, and describes its routing in text.
 *
 * Learning rates: cfg.lr is AdamW's peak lr and cfg.muon_lr Muon's. The
 * trainer schedules cfg.lr (hp_lr_at) and passes the result to
 * hp_optimizer_step; Muon then uses lr * muon_lr / cfg.lr, i.e. the same
 * schedule shape scaled to its own peak. So `--optimizer muon --lr 0.02`
 * maps naturally to muon_lr = 0.02 with AdamW's lr left at its default.
 * hp_optimizer_step2 takes both learning rates explicitly.
 *
 * Muon matrices are grouped by (rows, cols) and orthogonalised with the
 * batched Newton-Schulz in chunks; results are bit-identical to doing them
 * one by one. A step allocates nothing. Results are bit-identical from run to
 * run; AdamW, momentum and Newton-Schulz results do not depend on the pool
 * size. */
#ifndef HP_OPTIM_OPTIMIZER_H
#define HP_OPTIM_OPTIMIZER_H

#include <stddef.h>

#include "core/pool.h"
#include "core/status.h"
#include "core/tensor.h"
#include "optim/muon.h"
#include "optim/newton_schulz.h"
#include "optim/route.h"

typedef struct {
    hp_opt_kind kind; /* HP_OPT_ADAMW: everything AdamW; HP_OPT_MUON: see route.h */
    /* AdamW */
    float lr;           /* peak lr, > 0 when any parameter uses Muon */
    float beta1, beta2; /* in [0, 1) */
    float eps;          /* > 0 */
    float weight_decay; /* >= 0, decoupled */
    int decay_vectors;  /* 1: weight decay on every AdamW tensor (PyTorch);
                           0: only on tensors of 2 or more dims (llm.c) */
    /* Muon */
    float muon_lr;           /* peak lr of Muon parameters */
    float muon_beta;         /* momentum, in [0, 1) */
    float muon_weight_decay; /* >= 0: W <- W (1 - lr wd) - lr s O */
    hp_muon_momentum muon_momentum;
    int muon_nesterov;
    hp_muon_scale_mode muon_scale;
    hp_ns_config ns;
    long muon_batch_floats;   /* Muon orthogonalises up to this many floats of
                                 same-shape matrices per batch (at least one
                                 matrix); 0 = 4M. Memory only: results are the same. */
    const char *muon_params;  /* comma-separated globs, or NULL */
    const char *adamw_params; /* comma-separated globs, or NULL */
} hp_optim_config;

/* Defaults: adamw; lr 3e-4, betas 0.9/0.999, eps 1e-8, wd 0, decay_vectors 1;
 * muon_lr 0.02, muon_beta 0.95, muon wd 0, ema momentum with Nesterov, keller
 * scale, quintic Newton-Schulz; no overrides. */
void hp_optim_config_default(hp_optim_config *cfg);
/* Checks every field; errors name it. */
hp_status hp_optim_config_check(const hp_optim_config *cfg);

typedef struct hp_optimizer hp_optimizer;

/* Validates cfg and params (unique non-empty names, non-NULL buffers, positive
 * dims), routes, and allocates all state. params[] and the names are copied;
 * param and grad buffers are borrowed and must outlive the optimizer. The pool
 * is borrowed too (NULL = run on the caller). */
hp_status hp_optimizer_create(hp_optimizer **out, const hp_optim_config *cfg,
                              const hp_opt_param *params, int nparams, hp_pool *pool);
void hp_optimizer_destroy(hp_optimizer *o);

/* One step of every parameter from its gradient; lr is this step's AdamW lr
 * (Muon: lr * muon_lr / cfg.lr). Increments the step counter first; AdamW's
 * bias correction uses the new count. */
void hp_optimizer_step(hp_optimizer *o, float lr);
void hp_optimizer_step2(hp_optimizer *o, float adamw_lr, float muon_lr);

/* Global-norm clipping of all gradients (optim/clip.h); max_norm <= 0: off.
 * Returns the norm before clipping. The scaling itself is fused into the next
 * step (AdamW and Muon read grad * scale, the same floats a separate scaling
 * pass would store, so results are bit-identical to scaling first): the
 * gradient buffers are not rewritten. */
float hp_optimizer_clip_grads(hp_optimizer *o, float max_norm);
/* Multiplies every gradient by s in the next step only (fused, as above);
 * for trainers that compute the norm themselves (distributed). */
void hp_optimizer_set_grad_scale(hp_optimizer *o, float s);

/* Completed steps (0 for a fresh optimizer); set it when resuming. */
long hp_optimizer_get_step(const hp_optimizer *o);
void hp_optimizer_set_step(hp_optimizer *o, long step);

int hp_optimizer_param_count(const hp_optimizer *o);
/* The optimizer that updates parameter i (in the order given to create). */
hp_opt_kind hp_optimizer_param_kind(const hp_optimizer *o, int i);

/* State tensors, for checkpoints: per parameter in order, AdamW gives
 * "adamw.m.<name>" and "adamw.v.<name>", Muon gives "muon.m.<name>", each of
 * the parameter's shape. data points into the optimizer (read or write it). */
int hp_optimizer_state_count(const hp_optimizer *o);
void hp_optimizer_state_get(const hp_optimizer *o, int k, const char **name, float **data,
                            hp_shape *shape);

/* A text table of the routing (a summary line, then one line per parameter)
 * into buf[n] (always NUL-terminated when n > 0). Returns the full length, as
 * snprintf does. */
size_t hp_optimizer_describe(const hp_optimizer *o, char *buf, size_t n);

#endif
