/* parallel/lower_rules: each operator's local lowering, found through the
 * operator (one registry row per operator that has a parallel form). The
 * lowering pass (parallel/lower) hands a rule the global node, the layouts it
 * consumes its inputs in and the local value ids of its inputs and outputs;
 * the rule emits the rank's local nodes (e.g. the vocabulary-parallel
 * embedding with its row offset, or the parallel cross-entropy's statistics,
 * all-gather and finish) or declines, and the node runs as its own operator on
 * its local pieces. A new operator or parallel form adds one row here: the
 * lowering pass has no branch on operator identity. */
#ifndef HP_PARALLEL_LOWER_RULES_H
#define HP_PARALLEL_LOWER_RULES_H

#include "core/graph.h"
#include "layout/layout.h"
#include "layout/propagate.h"

typedef struct {
    const hp_graph *g;         /* global graph */
    const hp_propagation *prop;
    const hp_mesh *m;
    int rank;
    hp_graph *local;           /* the rank's graph, being built */
    int node;                  /* global node id */
    const int *in, *out;       /* local ids of its inputs (as consumed) and outputs */
    int *emitted;              /* the caller's count of local nodes emitted for it (rules add to it) */
} hp_lower_ctx;

/* Emits the local form of c->node and returns 1, or returns 0 when the node
 * runs as its own operator (errors go to c->local's sticky status). */
typedef int (*hp_lower_fn)(hp_lower_ctx *c);

/* The lowering rule of an operator, or NULL: the operator lowers to itself. */
hp_lower_fn hp_lower_rule_of(const struct hp_opdef *op);

/* For rules: emits a local node named after the global node (-1 on error). */
int hp_lower_emit(hp_lower_ctx *c, const struct hp_opdef *op, const int *in, int nin, const int *out, int nout,
                  const hp_attrs *a);
/* The rank's offset along dim `dim` of global value v laid out as l. */
int64_t hp_lower_offset(const hp_lower_ctx *c, const hp_layout *l, int v, int dim);
/* The mesh axis that shards dim `dim` of layout l, or -1. */
int hp_lower_shard_axis(const hp_layout *l, int dim);

#endif
