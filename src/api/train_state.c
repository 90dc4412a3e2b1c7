/* api/train_state: what a program running its own loop of hp_train_step
 * needs besides the step — checkpoints saved and loaded between steps
 * (runtime/trainer's writer and reader, the layout hp_train_run writes), and
 * the parameters listed, read and written whole by name whatever the plan
 * (runtime/dist_weights). */
#include <stdlib.h>
#include <string.h>

#include "api/ckpt_state.h"
#include "api/train.h"
#include "runtime/dist_weights.h"

static const hp_graph *global(const hp_train *t) { return hp_dist_global(hp_trainer_dist(t->tr)); }

/* The value of the i-th parameter in graph order, or -1. */
static int param_value(const hp_train *t, int i) {
    const hp_graph *g = global(t);
    for (int v = 0, k = 0; v < g->nvals; v++)
        if (g->vals[v].kind == HP_V_PARAM && k++ == i) return v;
    return -1;
}

hp_status hp_train_save(hp_train *t, const char *ckpt_dir) {
    if (!t) return hp_errorf("hp_train_save: the trainer is NULL");
    const char *dir = ckpt_dir && ckpt_dir[0] ? ckpt_dir : t->cfg.ckpt_dir;
    if (!dir || !dir[0]) return hp_errorf("hp_train_save: no directory given, and hp_train_config.ckpt_dir is not set");
    return hp_trainer_save(t->tr, dir, t->done);
}

hp_status hp_train_load(hp_train *t, const char *ckpt) {
    if (!t) return hp_errorf("hp_train_load: the trainer is NULL");
    if (!ckpt || !ckpt[0]) return hp_errorf("hp_train_load: no checkpoint given");
    if (t->ran)
        return hp_errorf("hp_train_load: the trainer already ran hp_train_run (a run resumes through "
                         "hp_train_config.resume)");
    hp_ckpt ck;
    char *dir = NULL;
    long step = 0;
    hp_status st = hp_api_ckpt_open(&ck, &dir, ckpt, 1);
    int opened = !st;
    /* the model, batch and optimizer must be the run's; the training stream continues where it was */
    if (!st) st = hp_api_ckpt_resume(&step, &ck, dir, t->m, hp_api_train_optimizer(t), t->cfg.steps, t->train);
    hp_ckpt_lineage parent;
    if (!st) {
        st = hp_ckpt_lineage_from_json(&parent, ck.state);
        if (st) st = hp_error_wrap(st, "%s/state.json", dir);
    }
    if (!st) st = hp_trainer_load(t->tr, &ck, step);
    /* every process learns of a failure in any (a file one process could not read) */
    st = hp_trainer_agree(t->tr, st, "to load the checkpoint");
    if (!st) { /* this run's checkpoints continue the loaded one's lineage from its step */
        char run[HP_LINEAGE_ID];
        memcpy(run, t->lineage.run, sizeof run);
        hp_ckpt_lineage_child(&t->lineage, &parent, step, run);
        t->done = step;
        t->loaded = 1;
    }
    if (opened) hp_ckpt_close(&ck);
    free(dir);
    return st;
}

int hp_train_param_count(const hp_train *t) {
    const hp_graph *g = global(t);
    int n = 0;
    for (int v = 0; v < g->nvals; v++) n += g->vals[v].kind == HP_V_PARAM;
    return n;
}

const char *hp_train_param_name(const hp_train *t, int i) {
    int v = param_value(t, i);
    return v < 0 ? NULL : global(t)->vals[v].name;
}

int hp_train_param_shape(const hp_train *t, int i, int64_t *dims) {
    int v = param_value(t, i);
    if (v < 0) return -1;
    const hp_shape *s = &global(t)->vals[v].shape;
    for (int d = 0; d < s->ndim && d < HP_PLAN_MAX_DIMS; d++) dims[d] = s->d[d];
    return s->ndim;
}

hp_status hp_train_get_weight(hp_train *t, const char *name, float *out, size_t n) {
    if (!t || !out) return hp_errorf("hp_train_get_weight: the trainer or the output is NULL");
    hp_dist_ckpt *c;
    hp_status st = hp_trainer_ckpt(&c, t->tr);
    if (!st) st = hp_dist_weight_get(hp_trainer_dist(t->tr), c, out, name, (int64_t)n);
    return st ? hp_error_wrap(st, "hp_train_get_weight") : HP_OK;
}

hp_status hp_train_set_weight(hp_train *t, const char *name, const float *in, size_t n) {
    if (!t || !in) return hp_errorf("hp_train_set_weight: the trainer or the input is NULL");
    hp_dist_ckpt *c;
    hp_status st = hp_trainer_ckpt(&c, t->tr);
    if (!st) st = hp_dist_weight_set(hp_trainer_dist(t->tr), c, name, in, (int64_t)n);
    return st ? hp_error_wrap(st, "hp_train_set_weight") : HP_OK;
}
