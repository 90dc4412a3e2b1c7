/* models/pangu: PanGu-α (Zeng et al. 2021) written on the public
 * model-building calls alone (models/pangu.c includes only
 * <hyperpar/hyperpar.h> through this header): a GPT-style pre-LN decoder —
 * word and learned position embeddings, L - 1 blocks "h.<l>." (LayerNorm,
 * fused QKV attention, LayerNorm, 4C GELU MLP, residuals), a final LayerNorm
 * — then the top query layer "q.": its attention's query is the learned
 * top-query embedding indexed by position (q.top_query [maxT, C] broadcast
 * over the batch, projected by q.attn.q [1, C, C]) while its keys and
 * values come from the LayerNorm'd last hidden states (q.attn.kv [2, C, C]);
 * attention output projection and MLP with residuals as a block; the head is
 * tied to the word embedding (wte), the loss the mean cross-entropy. The
 * vocabulary is padded to a multiple of 128 (wte [Vp, C]).
 *
 * Presets (the paper's shapes; vocabulary 40,000, sequence 1,024):
 *   pangu-2.6b  L 32, C 2560, NH 32;   pangu-13b  L 40, C 5120, NH 40;
 *   pangu-200b  L 64, C 16384, NH 128; pangu-tiny L 4, C 64, NH 4, V 256,
 *   sequence 128 (trains here). */
#ifndef HP_MODELS_PANGU_H
#define HP_MODELS_PANGU_H

#include <hyperpar/hyperpar.h>

/* The preset's shape (an error naming the preset and the known ones). */
hp_status hp_pangu_preset(hp_model_config *out, const char *name);
/* PanGu-α's forward graph for batches of B x T into g (its loss set);
 * shapes are checked first (L >= 2: the query layer is the last). */
hp_status hp_pangu_build(hp_graph *g, const hp_model_config *c, int B, int T);
/* llm.c-style count of the parameters (the padded vocabulary included). */
int64_t hp_pangu_num_params(const hp_model_config *c);

#endif
