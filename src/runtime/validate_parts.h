/* runtime/validate_parts: the validation executor's checks of parameters
 * held as flat parts of units (the compile's table, parallel/holdings:
 * units, each rank's pieces and its pieces of the reduced gradients),
 * against the 1-rank reference. What a collective's descriptor says to
 * compare (core/coll_desc) selects the check:
 *  - PARAMS, after a unit's gather: every rank's parameters of the unit are,
 *    bit for bit, the reference's (its boxes of them; with a bf16 mirror,
 *    the mirror's copies are the reference rounded to bf16): a wrong gathered
 *    range is named with the member whose range holds the first bad element;
 *  - SHARD, after a unit's reduction (once no replica all-reduce is left):
 *    each rank's reduced gradient range agrees with the reference's
 *    gradients over its pieces (atol + rtol * max|b|): a missing or wrong
 *    reduction is named with the tensor and element;
 *  - the gradient table: a parameter's error over every rank's pieces of its
 *    reduced gradient.
 * Errors are one line naming the step, the unit, the rank and the tensor. */
#ifndef HP_RUNTIME_VALIDATE_PARTS_H
#define HP_RUNTIME_VALIDATE_PARTS_H

#include "core/coll_desc.h"
#include "runtime/dist.h"

typedef struct {
    hp_dist *d;
    const hp_graph *g;          /* the global graph */
    hp_program *ref;            /* the reference program */
    const hp_param_store *rps;  /* its (whole) parameters */
    double atol, rtol;
    int *ri;                    /* [g->nvals] a parameter's index in rps, -1 */
    float *buf;                 /* scratch: one parameter's reference piece */
    size_t cap;
    float *leaf;                /* scratch: every rank's piece of one parameter (hp_vparts_leaf) */
    size_t leaf_cap;            /* floats per rank */
} hp_vparts;

/* Sets up the checks over dist d against the reference ref (its store rps). */
hp_status hp_vparts_init(hp_vparts *c, hp_dist *d, const hp_graph *g, hp_program *ref, const hp_param_store *rps,
                         double atol, double rtol);
void hp_vparts_free(hp_vparts *c);

/* 1 when the reduced ranges of the unit that collective d names are final at
 * d: its wait, or its start where the unit's ranges have no replicas. */
int hp_vparts_reduced(const hp_vparts *c, const hp_coll_desc *d);
/* params[r][k]: rank r's k-th parameter of unit u (graph order), as the step left it. */
hp_status hp_vparts_params(hp_vparts *c, const char *step, int u, const hp_tensor *const *params);
/* range[r]: rank r's reduced gradient range of unit u. */
hp_status hp_vparts_ranges(hp_vparts *c, const char *step, int u, const hp_tensor *range);
/* The relative error of global parameter gv over every rank's pieces of its
 * reduced gradient (max|a - b| / max|b|); *parts = 0 when the ranks hold it
 * whole (nothing computed). */
hp_status hp_vparts_grad_err(double *rel, int *parts, hp_vparts *c, int gv);
/* Stores cut to spans (a supernode's store holds only its members' parts):
 * t[r] (rank r's piece of global parameter gv, as the store holds it) is
 * replaced by a whole copy: the rank's own parts, the rest from ranks of
 * other supernodes that hold the same piece. The replicas check then
 * compares each rank's parts with the others'. Nothing changes when no
 * rank's store is cut to spans. */
hp_status hp_vparts_leaf(hp_vparts *c, hp_tensor *t, int gv);

#endif
