/* models/gpt2: the GPT-2 model (llm.c / PyTorch definition) written once with
 * global shapes, its initialisation, and the mapping of its parameters to the
 * llm.c checkpoint order. Parameter names: wte, wpe, h.<l>.ln1.{weight,bias},
 * h.<l>.attn.qkv.{weight,bias}, h.<l>.attn.proj.{weight,bias},
 * h.<l>.ln2.{weight,bias}, h.<l>.mlp.fc.{weight,bias}, h.<l>.mlp.proj.{weight,bias},
 * lnf.{weight,bias}. The LM head is tied to wte. The fused QKV weight is
 * [3, C, C] (bias [3, C]): the llm.c memory order, with q, k and v as separate
 * matrices so a plan can shard heads (dim 1) and Muon treats them apart. */
#ifndef HP_MODELS_GPT2_H
#define HP_MODELS_GPT2_H

#include <stddef.h>
#include <stdint.h>

#include "core/graph.h"

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

/* GPT-2 initialisation into the tensors of the parameter list (names as above):
 * N(0, 0.02), residual projections N(0, 0.02/sqrt(2L)), biases 0, norm
 * weights 1, padded wte rows 0. params[i] points at tensor i of shape shapes[i]. */
hp_status hp_gpt2_init(float *const *params, const char (*names)[HP_NAME_LEN], const hp_shape *shapes,
                       int n, const hp_gpt2_config *c, uint64_t seed);

/* Copies between the named per-layer tensors and a flat buffer in llm.c order
 * (hp_gpt2_num_params floats). to_llmc: tensors -> flat; otherwise flat -> tensors. */
hp_status hp_gpt2_llmc_copy(float *flat, float *const *params, const char (*names)[HP_NAME_LEN],
                            const hp_shape *shapes, int n, const hp_gpt2_config *c, int to_llmc);

#endif
