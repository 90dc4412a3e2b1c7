/* parallel/moe_chunk: the MoE-chunks pass of hp_compile (--moe-chunks K).
 * On the forward graph, before expert parallelism: each MoE layer's tokens
 * are cut into K chunks, each its own dispatch, experts and combine (the
 * router stays one node over every token, so the balancing and z losses and
 * a router's capacity are the whole batch's). Under expert parallelism each
 * chunk then has its own exchanges, and the overlap pass can run one
 * chunk's experts while another chunk's rows travel.
 *
 * The rebuilt layer, in this order: the K dispatches (chunk c: rows
 * [c N / K, (c + 1) N / K) of the rank's tokens), then for each chunk its
 * experts (the nodes between the dispatch and the combine: the grouped
 * GEMMs, the activation, casts), then the K combines (each leaves the other
 * chunks' tokens 0) summed into the layer's output. A token's output is
 * its own experts' rows as before; what changes is the order in which the
 * experts' weight gradients are summed (per chunk, then over the chunks).
 * A layer whose expert rows are read by anything else is refused, as is a
 * token count the chunks do not divide (at the rank's shapes). The values
 * of the uncut layer are left without a producer or readers. */
#ifndef HP_PARALLEL_MOE_CHUNK_H
#define HP_PARALLEL_MOE_CHUNK_H

#include "core/graph.h"

/* g: a forward graph (not differentiated); chunks >= 1 (1: nothing to do).
 * *nlayers: how many MoE layers were cut. */
hp_status hp_pass_moe_chunk(int *nlayers, hp_graph *g, int chunks);

#endif
