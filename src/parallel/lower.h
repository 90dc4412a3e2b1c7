/* parallel/lower: the lowering pass of hp_compile — graph + layouts -> the
 * local graph of one rank. The global
 * graph (forward and backward, global shapes) and the propagation result (a
 * layout per value, and the layout each node consumes per input) become a
 * local graph over local shapes in which
 *  - a redistribution node converts a value wherever a node consumes it in
 *    another layout than it was produced in (planned once, by layout/redist);
 *  - an operator with a parallel form lowers through its row in
 *    parallel/lower_rules (the vocabulary-parallel embedding and
 *    cross-entropy); every other runs as itself on its local pieces;
 *  - every parameter gradient is brought to its parameter's layout right after
 *    it is complete (data parallel: the all-reduce of gradients);
 *  - the loss is made Replicate for reporting.
 * Values keep their global names. Nothing here runs: the result is compiled
 * by runtime/program like any graph. Optimizer-phase nodes are added to the
 * local graph later (parallel/optim_phase). */
#ifndef HP_PARALLEL_LOWER_H
#define HP_PARALLEL_LOWER_H

#include "core/graph.h"
#include "layout/layout.h"
#include "layout/propagate.h"
#include "parallel/rank.h"

typedef struct {
    hp_graph *g;   /* the rank's local graph (owned) */
    int *map;      /* [global nvals]: the local value of each global value, as produced */
    int nglobal;
    int *global_of;  /* [g->nvals]: the global value a local value stands for (as produced), -1 if none */
    int *node_of;    /* [g->nnodes]: the global node a local node comes from, -1 if inserted
                      * (recorded as each node is emitted) */
    int capnode, nnode_of, nglobal_of;
    int loss;      /* local value of the replicated loss */
    hp_rank_ctx ctx;
    int *hint;       /* [g->nnodes]: where the schedule places a node (HP_HINT_*), or -1: by creation order */
    int *chunk;      /* [g->nnodes]: an interleaved pipeline stage's model chunk of each node, -1: the schedule
                      * derives it (from what makes its inputs, else from its readers); NULL: one chunk */
    int nredist[2];    /* redistribution nodes in forward, backward */
    double bytes[2];   /* their bytes per step (per rank) */
} hp_rank_graph;

/* Placement hints for nodes later passes append (the schedule obeys them):
 * HP_HINT_BEFORE(n) / HP_HINT_AFTER(n) right before / after node n (same
 * phase; several with the same anchor keep creation order), HP_HINT_END at
 * the end of the node's phase, HP_HINT_AFTER_WAIT(n) right after the wait of
 * the reduction node n starts (the schedule splits n into a start and a wait;
 * where it does not, right after n): a reader of the reduced value that does
 * not hold the reduction back. */
#define HP_HINT_END (-2)
#define HP_HINT_BEFORE(n) (3 * (n))
#define HP_HINT_AFTER(n) (3 * (n) + 1)
#define HP_HINT_AFTER_WAIT(n) (3 * (n) + 2)

/* Lowers g for rank `rank` of mesh m. ctx.comm / ctx.mc are left for the
 * caller. grad_layout (NULL: none) may give, per global parameter, the layout
 * its gradient is brought to instead of the parameter's own (FSDP keeps its
 * gradients Partial: it reduces them itself). */
hp_status hp_lower_rank(hp_rank_graph *out, const hp_graph *g, const hp_propagation *prop, const hp_mesh *m,
                        int rank, const hp_layout *grad_layout);
void hp_rank_graph_free(hp_rank_graph *r);
/* After later passes appended nodes and values: node_of and global_of cover
 * them (-1: no global node or value). */
hp_status hp_rank_graph_sync_nodes(hp_rank_graph *r);
/* Moves the nodes from `from` on that carry an HP_HINT_BEFORE hint to just
 * before their anchor (in creation order), so that node order is their
 * place again for passes that read order as time (FSDP's uses); their hints
 * become -1, every node id (producers, forward nodes, node_of, other hints'
 * anchors) follows. */
hp_status hp_rank_graph_place_before(hp_rank_graph *r, int from);

#endif
