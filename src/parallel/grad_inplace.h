/* parallel/grad_inplace: the tied-gradient pass of hp_compile. A parameter
 * read twice (GPT-2's wte: the token table and the LM head) has its
 * gradient made of two parts: the head's, made first in the backward, and
 * the table's rows, added last (embedding_bwd_acc: dtable = dsofar + rows).
 * Left alone the head's part is a value of its own, as large as the
 * parameter, live from the head's backward to the embedding's — the whole
 * backward (154 MB for GPT-2 124M). This pass makes it a view of the
 * gradient's own storage, so the head writes the gradient in place and the
 * accumulation adds the rows there (its copy is skipped): one buffer
 * instead of two. Only where the part is read by the accumulation alone and
 * has the gradient's size and dtype. */
#ifndef HP_PARALLEL_GRAD_INPLACE_H
#define HP_PARALLEL_GRAD_INPLACE_H

#include "parallel/lower.h"

/* *n: how many gradient parts were placed in their gradient's storage. */
hp_status hp_pass_grad_inplace(int *n, hp_rank_graph *rg);

#endif
