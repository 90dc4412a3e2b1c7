/* parallel/loss_chunk: the loss-chunk pass of hp_compile (--loss-chunk W).
 * Before anything else, on the model's forward graph: every cross-entropy
 * whose logits come from a bias-free linear (the LM head) and are read by
 * nothing else becomes one fused operator (ops/loss_fused) that runs the
 * head and the loss over W vocabulary columns at a time: the logits
 * [rows, Vp], their probabilities and their gradient are never stored (for
 * GPT-2 124M at B4 T256: 206 MB each), at the price of the head's forward
 * product once more in the backward. The per-position losses stay; the
 * logits value is left without a producer or readers. A weight the plan
 * cuts along the vocabulary (tensor parallel's vocabulary-parallel head) is
 * refused: the fused operator has no vocabulary-parallel form. */
#ifndef HP_PARALLEL_LOSS_CHUNK_H
#define HP_PARALLEL_LOSS_CHUNK_H

#include <stdint.h>

#include "core/graph.h"
#include "layout/plan.h"

/* g: a forward graph (not differentiated); chunk >= 1 columns; plan (may be
 * NULL) for the weight's layout. *nfused: how many heads were fused. */
hp_status hp_pass_loss_chunk(int *nfused, hp_graph *g, int64_t chunk, const hp_plan *plan);

#endif
