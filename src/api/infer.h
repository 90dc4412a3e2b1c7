/* api/infer: the single-process GPT-2 program behind hp_infer and the
 * training-step benchmark — built by hp_compile (forward only with the
 * logits kept, or differentiated with the optimizer phase) onto its own pool,
 * with its parameter store; weights from a checkpoint or GPT-2's
 * initialisation. Shared by infer.c and bench_train.c. */
#ifndef HP_API_INFER_H
#define HP_API_INFER_H

#include "api/api.h"
#include "core/pool.h"
#include "io/ckpt.h"
#include "optim/optimizer.h"
#include "parallel/compile.h"
#include "runtime/params.h"
#include "runtime/program.h"

typedef struct {
    hp_gpt2_config model;
    int B, T;
    hp_graph *g;   /* the model graph (forward) */
    hp_gpt2_io io; /* its values (the same ids in the program's graph) */
    hp_compiled c;
    hp_param_store ps;
    hp_pool *pool;
    hp_program *prog;
} hp_api_engine;

/* train: with backward and the optimizer phase oc (clipping at 1); else the
 * forward only, the logits kept after it. dtype: the compute dtype (HP_F32,
 * or HP_BF16 for training: parallel/precision). */
hp_status hp_api_engine_create(hp_api_engine *e, const hp_gpt2_config *model, int B, int T, int threads, int train,
                               const hp_optim_config *oc, hp_dtype dtype);
void hp_api_engine_destroy(hp_api_engine *e);
/* GPT-2 initialisation of the parameters of ps from a seed. */
hp_status hp_api_init_params(hp_param_store *ps, const hp_gpt2_config *model, uint64_t seed);
/* The weights from an opened checkpoint. */
hp_status hp_api_engine_load(hp_api_engine *e, const hp_ckpt *ck);
/* api/infer_finite: an error unless every parameter of ps (a whole store) is
 * finite, as `train` checks the weights it starts from: "WHAT: parameter
 * 'wte' holds a non-finite value (nan at element 100)". */
hp_status hp_api_params_finite(const hp_param_store *ps, const char *what);

#endif
