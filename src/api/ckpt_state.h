/* api/ckpt_state: the state.json of checkpoints written through the API —
 * "format", "step", "model" (GPT-2 shape, as `hyperpar train` writes it, so
 * `hyperpar export` reads both), "data" (the training stream's position),
 * "batch", "seq" and "optimizer", or instead the caller's "args" object (the
 * form `hyperpar train` writes), and the run's lineage (io/ckpt_lineage) — and reading it back on resume, where the
 * model, batch shape and optimizer must match the run's. */
#ifndef HP_API_CKPT_STATE_H
#define HP_API_CKPT_STATE_H

#include "api/api.h"
#include "io/ckpt.h"
#include "io/ckpt_lineage.h"
#include "io/data.h"
#include "models/gpt2_config.h"

/* *out: the JSON text (malloc'd). nargs > 0: "args" from keys/values [nargs]
 * in place of batch, seq and optimizer. */
hp_status hp_api_state_json(char **out, long step, const hp_model *m, const hp_data_state *ds, const char *optimizer,
                            int nargs, const char *const *keys, const char *const *values,
                            const hp_ckpt_lineage *lineage);
/* The checkpoint directory of `path`: itself when it holds state.json, else
 * the run dir's checkpoint hp_ckpt_find picks: the one 'latest' names, or
 * the newest complete step_* when 'latest' is missing or dangling (*dir
 * malloc'd). Changes nothing on disk. */
hp_status hp_api_ckpt_dir(char **dir, const char *path);
/* hp_api_ckpt_dir, then the checkpoint opened (*dir malloc'd; NULL on error)
 * and its state.json validated field by field (format, step, model, data,
 * args, batch, seq, optimizer: a one-line error naming the file and the
 * field). with_optim 0: optim.safetensors is not needed (inference and
 * export read only the weights; ck->optim stays NULL). Its model shape:
 * hp_ckpt_model_config (models/gpt2_config). */
hp_status hp_api_ckpt_open(hp_ckpt *ck, char **dir, const char *path, int with_optim);
/* An error naming `what` (a GPT-2-only reader: inference, llm.c export) when
 * the opened checkpoint's model was written with the model-building API. */
hp_status hp_api_ckpt_gpt2(const hp_ckpt *ck, const char *dir, const char *what);
/* The largest step a checkpoint may record. */
#define HP_API_MAX_STEP ((int64_t)1 << 40)
/* Checks an opened checkpoint against the run (model, batch, seq,
 * optimizer, a step not past the run's `steps`), reads its step and sets the
 * training stream's position. */
hp_status hp_api_ckpt_resume(long *step, const hp_ckpt *ck, const char *dir, const hp_model *m, const char *optimizer,
                             long steps, hp_data *train);

#endif
