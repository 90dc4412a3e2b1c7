/* optim/optimizer: the optimizer's settings (hp_optim_config: AdamW's and
 * Muon's hyperparameters, the routing overrides), their defaults and their
 * check. The optimizer itself is the optimizer phase's nodes
 * (optim/phase*.c, placed by parallel/optim_phase): every parameter routed to
 * AdamW or Muon (optim/route.h), Muon's matrices grouped by shape and
 * orthogonalised in batches of up to muon_batch_floats.
 *
 * Learning rates: lr is AdamW's peak lr and muon_lr Muon's; the trainer
 * schedules lr (hp_lr_at) and Muon uses lr * muon_lr / cfg.lr
 * (hp_optim_phase_lrs), the same schedule shape scaled to its own peak. */
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
    int muon_dist;            /* distributed Muon's strategy (parallel/muon_plan.h hp_muon_dist): 0 the
                                 layout-driven owners; the others are the competing strategies */
    int muon_waves;           /* distributed Muon's exchange waves per group (parallel/muon_dist): wave w + 1's
                                 gather and wave w - 1's return overlap wave w's Newton–Schulz; 1: none, 0: 2 */
    float muon_balance;       /* the layout rule's bound on max/mean Newton–Schulz FLOPs per rank above which
                                 matrices are iterated in teams of row blocks (parallel/muon_plan.h); 0: never */
    const char *muon_params;  /* comma-separated globs, or NULL */
    const char *adamw_params; /* comma-separated globs, or NULL */
} hp_optim_config;

/* Defaults: adamw; lr 3e-4, betas 0.9/0.999, eps 1e-8, wd 0, decay_vectors 1;
 * muon_lr 0.02, muon_beta 0.95, muon wd 0, ema momentum with Nesterov, keller
 * scale, quintic Newton-Schulz; no overrides. */
void hp_optim_config_default(hp_optim_config *cfg);
/* Checks every field; errors name it. */
hp_status hp_optim_config_check(const hp_optim_config *cfg);

#endif
