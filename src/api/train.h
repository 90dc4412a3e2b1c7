/* api/train: what an hp_train holds — the public trainer's state, shared by
 * api/train (create, run, step) and api/train_state (checkpoints and weights
 * of a loop of one's own). */
#ifndef HP_API_TRAIN_H
#define HP_API_TRAIN_H

#include "api/api.h"
#include "api/run_dir.h"
#include "io/ckpt.h"
#include "io/ckpt_lineage.h"
#include "io/data.h"
#include "optim/schedule.h"
#include "runtime/trainer.h"

struct hp_train {
    hp_train_config cfg; /* the strings point at the copies below */
    char *data, *val_data, *metrics, *ckpt_dir, *trace, *init_llmc, *init_hf;
    char *muon_momentum, *muon_scale, *muon_dist, *newton_schulz, *muon_params, *adamw_params;
    char **arg_keys, **arg_values; /* [cfg.ckpt_nargs] */
    const hp_model *m;
    hp_data *train, *val;
    hp_ckpt ck;
    int have_ck;
    hp_ckpt_lineage lineage; /* this run's: its id, and the runs it continues (io/ckpt_lineage) */
    char *ck_dir;
    long start_step, done;
    int ran, stepped;
    int loaded;          /* hp_train_load filled it (a loop of hp_train_step follows, not hp_train_run) */
    hp_lr_schedule lr;
    int32_t *tokens, *targets;
    hp_trainer *tr;
    hp_api_run *run;     /* the run directory, or NULL */
    hp_status run_err;   /* the first failed write of run.json during the loop */
    double run_refreshed; /* when run.json was last written (hp_now) */
};

/* "adamw" or "muon": the optimizer's name in checkpoints. */
const char *hp_api_train_optimizer(const hp_train *t);

#endif
