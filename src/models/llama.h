/* models/llama: a Llama-style decoder written on the public model-building
 * calls alone (models/llama.c includes only <hyperpar/hyperpar.h> through
 * this header): token embeddings, L pre-norm blocks "h.<l>." — RMSNorm,
 * grouped-query attention (the query [1, C, C] and the keys and values
 * [2, Ckv, C] projected apart, the kv heads repeated to the query heads,
 * joined into attention's fused [B, T, 3, C], RoPE on the query and keys),
 * the output projection, RMSNorm, the SwiGLU MLP (gate and up [2, F, C],
 * down [C, F]) — a final RMSNorm and an untied head; no biases anywhere.
 * The vocabulary is padded to a multiple of 128.
 *
 * Presets: llama-tiny (L 4, C 64, 4 heads, 2 kv heads, F 192, V 256,
 * sequence 128: trains here), llama3-8b (L 32, C 4096, 32 heads, 8 kv, F
 * 14336, V 128256, sequence 8192, θ 500000), llama3-70b (L 80, C 8192, 64
 * heads, 8 kv, F 28672, the same vocabulary, sequence and θ).
 *
 * Mixture-of-Experts (hp_model_config.experts > 0): each block's MLP is
 * hp_moe — a router "moe.router.weight" [E, C], stacked experts
 * "moe.experts.gate_up.weight" [E, 2, Fe, C] and "moe.experts.down.weight"
 * [E, C, Fe], plus shared experts as one dense SwiGLU ("moe.shared.*") —
 * and every layer's balancing and z losses are added to the loss. */
#ifndef HP_MODELS_LLAMA_H
#define HP_MODELS_LLAMA_H

#include <hyperpar/hyperpar.h>

/* The preset's shape (an error naming the preset and the known ones): the dense ones, and the
 * Mixture-of-Experts ones (moe-tiny: 8 experts of 64, top-2, renormalised softmax, aux 0.01, z 0.001, trains
 * here (and one shared expert); moe-deepseek-v3: DeepSeek-V3's sizes with grouped-query attention in place of MLA, 256 experts of
 * 2048, top-8 by sigmoid, one shared; moe-500b: 128 experts of 3072, top-8, one shared, ~500B parameters). */
hp_status hp_llama_preset(hp_model_config *out, const char *name);
hp_status hp_moe_preset(hp_model_config *out, const char *name);
/* The forward graph for batches of B x T into g (its loss set); the shape is
 * checked first. */
hp_status hp_llama_build(hp_graph *g, const hp_model_config *c, int B, int T);
/* The parameters (the padded vocabulary included). */
int64_t hp_llama_num_params(const hp_model_config *c);

#endif
