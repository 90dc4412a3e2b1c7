/* models/gpt2_model: GPT-2's shape, the ids of its inputs and outputs, and
 * its forward graph (models/gpt2.c), over the public header alone: the
 * parameter names are models/gpt2.h's. */
#ifndef HP_MODELS_GPT2_MODEL_H
#define HP_MODELS_GPT2_MODEL_H

#include <hyperpar/hyperpar.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int L, NH, C, V, Vp, maxT;
} hp_gpt2_config;

/* The ids of the values a trainer feeds and reads. */
typedef struct {
    int tokens;  /* input [B,T] i32 */
    int targets; /* input [B,T] i32 */
    int loss;    /* scalar mean loss */
    int losses;  /* per-position losses [B*T] */
    int logits;  /* [B,T,Vp] */
} hp_gpt2_io;

/* The largest shapes accepted (checked before anything is built, so every
 * size product of the model fits int64_t): */
#define HP_GPT2_MAX_LAYERS 1024
#define HP_GPT2_MAX_HEADS 1024
#define HP_GPT2_MAX_CHANNELS 65536
#define HP_GPT2_MAX_VOCAB (1 << 24)
#define HP_GPT2_MAX_SEQ (1 << 20)
#define HP_GPT2_MAX_PARAMS ((int64_t)1 << 40)

/* Fills Vp (V rounded up to 128) when 0, and checks the shape against the
 * limits above. */
hp_status hp_gpt2_config_check(hp_gpt2_config *c);
/* Builds the forward graph for batches of B x T tokens into g. */
hp_status hp_gpt2_build(hp_graph *g, hp_gpt2_io *io, const hp_gpt2_config *c, int B, int T);
size_t hp_gpt2_num_params(const hp_gpt2_config *c); /* llm.c count (padded wte included) */

#endif
