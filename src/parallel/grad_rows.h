/* parallel/grad_rows: the rows pass of hp_compile — a parameter gradient
 * summed from a dense part and rows (an operator with hp_opdef.grad_rows: a
 * tied embedding's table gets the LM head's dense weight gradient first in
 * the backward and the embedding's rows last) is reduced in two parts: the
 * dense part is the parameter's gradient, so its reduction (FSDP's, or the
 * data-parallel all-reduce) starts where that part is complete, at the start
 * of the backward; the rows, which every rank keeps, are gathered at the end
 * of the backward and added to the reduced gradient — a few rows instead of
 * the whole table on the step's critical path.
 *
 * Split (the global graph, after propagation): the accumulating node becomes
 * grad_rows (ops/ops.h: the rows, their ids and the dense part, which it adds
 * the rows to in place: what a program of the global graph — validation's
 * 1-rank reference — runs), and the dense part becomes the parameter's
 * gradient. Only for a parameter laid out whole (no Shard on an axis of size
 * > 1) whose rows and ids are not Partial, and only where its gradient is
 * summed over ranks (the ids are sharded on an axis of size > 1) or in the
 * deterministic mode (whose sums must be the same at every rank count, one
 * rank included). Lowering gives grad_rows a local form that reads only the
 * rows and the ids (parallel/lower_rules) and does nothing.
 *
 * Rows (the rank's graph, after accumulation): per split parameter,
 * persistent records [K N, C] of the rows and [K N] of their ids (K
 * micro-batches, N ids per micro-batch), which grad_rows_keep fills after
 * the local grad_rows node; at the end of the last micro-batch's backward,
 * grad_rows_gather all-gathers them along each mesh axis that shards the ids
 * (blocking), and grad_rows_apply adds them to the rank's part of the reduced
 * gradient (the parameter's gradient or its accumulator; under FSDP/ZeRO the
 * parameter's part of the rank's reduced shard or its accumulator), scaled by
 * 1/K, one row after the other in one fixed order: micro-batch, then rank (the
 * gathered order), then position. In the deterministic mode that is the
 * slices' order, and the scales are powers of two, so the sums are the same
 * at every rank count. */
#ifndef HP_PARALLEL_GRAD_ROWS_H
#define HP_PARALLEL_GRAD_ROWS_H

#include "layout/propagate.h"
#include "parallel/fsdp.h"
#include "parallel/lower.h"

/* The split on the global graph; *nsplit: how many parameters. */
hp_status hp_pass_rows_split(int *nsplit, hp_graph *g, hp_propagation *prop, const hp_mesh *m, int deterministic);
/* The rows' nodes on the rank's graph (after the FSDP nodes and the
 * accumulation pass): fsdp NULL or level 0 without FSDP; micro the
 * accumulation's micro-batch input (-1 when K = 1). *nrows: parameters. */
hp_status hp_pass_rows(int *nrows, hp_rank_graph *rg, const hp_graph *global, const hp_propagation *prop,
                       const hp_mesh *m, const hp_fsdp_plan *fsdp, int micro, int K);

/* grad_rows_keep: in (rows[N.., C], ids[N..] [, micro]), xin (records [K N, C], ids [K N]): micro-batch m's
 *   into rows [m N, (m + 1) N) (a.i[0] = 1: the micro input is there).
 * grad_rows_gather: in (x [X, ...] [, micro]) -> out [k X, ...]: x of the k members along mesh axis a.i[0], one
 *   after the other (a.i[1] = 1: the micro input is there; only at the last micro-batch).
 * grad_rows_apply: in (records [R K N, C], ids [R K N] [, micro]), xin (target fp32): see above;
 *   a.i[0] micro given, i[1], i[2] the parameter's flat elements [begin, end) the target holds, i[3] where
 *   element begin is in it, i[4] K, i[5] the table's rows, i[6] N. */
extern const hp_opdef hp_op_grad_rows_keep, hp_op_grad_rows_gather, hp_op_grad_rows_apply;

#endif
