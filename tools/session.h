/* tools/session: one single-process model run: the GPT-2 graph for B x T,
 * differentiated, compiled onto a pool, its parameters and (optionally) an
 * optimizer; and the checkpoint glue that saves and restores all of it. Used
 * by train, bench, sample and export. */
#ifndef HP_TOOLS_SESSION_H
#define HP_TOOLS_SESSION_H

#include "core/graph.h"
#include "core/pool.h"
#include "io/ckpt.h"
#include "io/json.h"
#include "models/gpt2.h"
#include "optim/optimizer.h"
#include "runtime/params.h"
#include "runtime/program.h"

typedef struct {
    hp_gpt2_config model;
    int B, T;
    hp_graph *g;
    hp_gpt2_io io;
    hp_param_store ps;
    hp_pool *pool;
    hp_program *prog;
    hp_optimizer *opt;
    /* forward-only graph and program (evaluation, sampling), sharing ps */
    hp_graph *eval_g;
    hp_gpt2_io eval_io;
    hp_program *eval_prog;
} hp_session;

/* Builds graph + program on `threads` threads: with backward when `train`,
 * else forward only with the logits kept after the step. */
hp_status hp_session_create(hp_session *s, const hp_gpt2_config *model, int B, int T, int threads, int train);
/* Adds a forward-only program for eval_B x eval_T (logits kept). */
hp_status hp_session_add_eval(hp_session *s, int eval_B, int eval_T);
hp_status hp_session_add_optimizer(hp_session *s, const hp_optim_config *cfg);
void hp_session_destroy(hp_session *s);

/* GPT-2 initialisation of the parameters from a seed. */
hp_status hp_session_init_params(hp_session *s, uint64_t seed);
/* Forward + backward on the inputs already in the program; returns the loss. */
float hp_session_loss(const hp_session *s);
int32_t *hp_session_tokens(const hp_session *s);
int32_t *hp_session_targets(const hp_session *s);

/* The model shape as a JSON object and back (checkpoint state). */
void hp_gpt2_config_to_json(hp_jw *w, const hp_gpt2_config *c);
hp_status hp_gpt2_config_from_json(hp_gpt2_config *c, const hp_json *obj);

/* Weights (and optimizer state when the session has one) into a checkpoint
 * directory, with the caller's extra state (JSON object text). */
hp_status hp_session_save(const hp_session *s, const char *dir, const char *state_json);
/* Loads weights (and optimizer state when with_optim) from an opened checkpoint. */
hp_status hp_session_load(hp_session *s, const hp_ckpt *ck, int with_optim);
/* Reads a checkpoint's model shape (state.json "model") without loading it. */
hp_status hp_ckpt_model_config(hp_gpt2_config *c, const hp_ckpt *ck, const char *dir);

/* llm.c checkpoint import/export of the session's weights. */
hp_status hp_session_import_llmc(hp_session *s, const char *path);
hp_status hp_session_export_llmc(const hp_session *s, const char *path);
/* Reads an llm.c file's model shape. */
hp_status hp_llmc_model_config(hp_gpt2_config *c, const char *path);

#endif
