/* models/gpt2: the GPT-2 model (llm.c / PyTorch definition) written once with
 * global shapes, its initialisation, and the mapping of its parameters to the
 * llm.c checkpoint order. Parameter names: wte, wpe, h.<l>.ln1.{weight,bias},
 * h.<l>.attn.qkv.{weight,bias}, h.<l>.attn.proj.{weight,bias},
 * h.<l>.ln2.{weight,bias}, h.<l>.mlp.fc.{weight,bias}, h.<l>.mlp.proj.{weight,bias},
 * lnf.{weight,bias}. The LM head is tied to wte. The fused QKV weight is
 * [3, C, C] (bias [3, C]): the llm.c memory order, with q, k and v as separate
 * matrices so a plan can shard heads (dim 1) and Muon treats them apart.
 * The shape, the graph and the parameter count are in models/gpt2_model.h. */
#ifndef HP_MODELS_GPT2_H
#define HP_MODELS_GPT2_H

#include <stddef.h>
#include <stdint.h>

#include "core/graph.h"
#include "models/gpt2_model.h"

/* GPT-2 initialisation into the tensors of the parameter list (names as above,
 * in the model's order): N(0, 0.02), residual projections N(0, 0.02/sqrt(2L)),
 * biases 0, norm weights 1, padded wte rows 0, as gpt2.c states them where it
 * declares each parameter (hp_model_init of its graph). params[i] points at
 * tensor i of shape shapes[i]. */
hp_status hp_gpt2_init(float *const *params, const char (*names)[HP_NAME_LEN], const hp_shape *shapes,
                       int n, const hp_gpt2_config *c, uint64_t seed);

/* Copies between the named per-layer tensors and a flat buffer in llm.c order
 * (hp_gpt2_num_params floats). to_llmc: tensors -> flat; otherwise flat -> tensors. */
hp_status hp_gpt2_llmc_copy(float *flat, float *const *params, const char (*names)[HP_NAME_LEN],
                            const hp_shape *shapes, int n, const hp_gpt2_config *c, int to_llmc);

#endif
