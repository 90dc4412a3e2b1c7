/* tools/session: one single-process GPT-2 program for B x T, compiled by
 * hp_compile (differentiated, with the optimizer phase when given one) onto a
 * pool, with its parameters; llm.c import/export and checkpoint loading of
 * the weights. Used by bench, sample and export (training goes through
 * runtime/trainer). */
#ifndef HP_TOOLS_SESSION_H
#define HP_TOOLS_SESSION_H

#include "core/graph.h"
#include "core/pool.h"
#include "io/ckpt.h"
#include "io/json.h"
#include "models/gpt2.h"
#include "models/gpt2_config.h"
#include "optim/optimizer.h"
#include "parallel/compile.h"
#include "runtime/params.h"
#include "runtime/program.h"

typedef struct {
    hp_gpt2_config model;
    int B, T;
    hp_graph *g;     /* the model graph (forward) */
    hp_gpt2_io io;   /* its values (the same ids in the program's graph) */
    hp_compiled c;
    hp_param_store ps;
    hp_pool *pool;
    hp_program *prog;
} hp_session;

/* Builds and compiles the program on `threads` threads: with backward (and
 * the optimizer phase when oc is given, clipping at 1) when `train`, else
 * forward only with the logits kept after the step. */
hp_status hp_session_create(hp_session *s, const hp_gpt2_config *model, int B, int T, int threads, int train,
                            const hp_optim_config *oc);
void hp_session_destroy(hp_session *s);
/* This step's learning rate and step number (from 0) for the optimizer phase. */
void hp_session_set_step(hp_session *s, const hp_optim_config *oc, float lr, long step);

/* GPT-2 initialisation of the parameters from a seed. */
hp_status hp_session_init_params(hp_session *s, uint64_t seed);
/* Forward + backward on the inputs already in the program; returns the loss. */
float hp_session_loss(const hp_session *s);
int32_t *hp_session_tokens(const hp_session *s);
int32_t *hp_session_targets(const hp_session *s);


/* Loads the weights from an opened checkpoint. */
hp_status hp_session_load(hp_session *s, const hp_ckpt *ck);

/* llm.c checkpoint import/export of the session's weights. */
hp_status hp_session_import_llmc(hp_session *s, const char *path);
hp_status hp_session_export_llmc(const hp_session *s, const char *path);

#endif
