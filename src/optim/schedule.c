#include "optim/schedule.h"

#include <math.h>
#include <string.h>

hp_status hp_lr_kind_parse(hp_lr_schedule *out, const char *name) {
    if (name && !strcmp(name, "constant")) {
        out->kind = HP_LR_CONSTANT;
    } else if (name && !strcmp(name, "cosine")) {
        out->kind = HP_LR_COSINE;
    } else if (name && !strcmp(name, "linear")) {
        out->kind = HP_LR_LINEAR;
    } else {
        return hp_errorf("lr_schedule: unknown schedule '%s' (expected constant, cosine or linear)",
                         name ? name : "(null)");
    }
    return HP_OK;
}

const char *hp_lr_kind_name(hp_lr_kind k) {
    switch (k) {
    case HP_LR_CONSTANT: return "constant";
    case HP_LR_COSINE: return "cosine";
    case HP_LR_LINEAR: return "linear";
    }
    return "?";
}

hp_status hp_lr_schedule_check(const hp_lr_schedule *s) {
    if (!(s->lr >= 0.0f) || !isfinite(s->lr))
        return hp_errorf("lr: must be a number >= 0, got %g", (double)s->lr);
    if (s->warmup_steps < 0)
        return hp_errorf("warmup_steps: must be >= 0, got %ld", s->warmup_steps);
    if (!(s->min_lr_frac >= 0.0f && s->min_lr_frac <= 1.0f))
        return hp_errorf("min_lr_frac: must be in [0, 1], got %g", (double)s->min_lr_frac);
    return HP_OK;
}

float hp_lr_at(const hp_lr_schedule *s, long step, long total_steps) {
    double lr = s->lr;
    if (s->kind == HP_LR_CONSTANT) return s->lr;
    long w = s->warmup_steps;
    if (step < w) return (float)(lr * (double)(step + 1) / (double)w);
    double d = total_steps > w ? (double)(step - w) / (double)(total_steps - w) : 1.0;
    if (d < 0.0) d = 0.0;
    if (d > 1.0) d = 1.0;
    double lo = lr * s->min_lr_frac;
    double coeff = s->kind == HP_LR_COSINE ? 0.5 * (1.0 + cos(M_PI * d)) : 1.0 - d;
    return (float)(lo + coeff * (lr - lo));
}
