/* optim/schedule: learning-rate schedules, as llm.c defines them. Steps count
 * from 0; total_steps is the number of optimizer steps in the run.
 *  constant: lr at every step (no warmup).
 *  cosine:   steps < warmup: lr (step+1)/warmup; then cosine from lr down to
 *            min_lr_frac lr: min + 0.5 (1 + cos(pi d)) (lr - min),
 *            d = (step - warmup) / (total_steps - warmup), clamped to [0, 1]
 *            (d = 1 when total_steps <= warmup).
 *  linear:   the same warmup; then min + (1 - d) (lr - min). */
#ifndef HP_OPTIM_SCHEDULE_H
#define HP_OPTIM_SCHEDULE_H

#include "core/status.h"

typedef enum { HP_LR_CONSTANT = 0, HP_LR_COSINE = 1, HP_LR_LINEAR = 2 } hp_lr_kind;

typedef struct {
    hp_lr_kind kind;
    float lr;          /* peak learning rate */
    long warmup_steps; /* >= 0 */
    float min_lr_frac; /* final lr = min_lr_frac * lr, in [0, 1] */
} hp_lr_schedule;

/* Sets out->kind from "constant", "cosine" or "linear"; other fields untouched.
 * An unknown name is an error naming the field `lr_schedule`. */
hp_status hp_lr_kind_parse(hp_lr_schedule *out, const char *name);
const char *hp_lr_kind_name(hp_lr_kind k);
/* Checks lr >= 0, warmup_steps >= 0, min_lr_frac in [0, 1]; errors name the field. */
hp_status hp_lr_schedule_check(const hp_lr_schedule *s);

float hp_lr_at(const hp_lr_schedule *s, long step, long total_steps);

#endif
