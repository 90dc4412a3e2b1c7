/* runtime/validate_fsdp: the validation executor's checks of FSDP's steps
 * (parallel/fsdp), against the 1-rank reference:
 *  - after a unit's gather: every rank's parameters of the unit are, bit for
 *    bit, the reference's (its local pieces of them): a wrong gathered shard
 *    is named with the member whose shard holds the first bad element;
 *  - after a unit's reduction (HSDP: after the replicas' all-reduce): each
 *    rank's reduced gradient shard agrees with the reference's gradients over
 *    that range of the unit (atol + rtol * max|b|): a missing or wrong
 *    reduction is named with the tensor and element;
 *  - the gradient table: a managed parameter's error over every rank's
 *    pieces of it in their shards.
 * Errors are one line naming the step, the unit, the rank and the tensor. */
#ifndef HP_RUNTIME_VALIDATE_FSDP_H
#define HP_RUNTIME_VALIDATE_FSDP_H

#include "runtime/dist.h"

typedef struct {
    hp_dist *d;
    const hp_graph *g;          /* the global graph */
    hp_program *ref;            /* the reference program */
    const hp_param_store *rps;  /* its (whole) parameters */
    double atol, rtol;
    int *ids;                   /* [np] the graph's parameters, in graph order */
    int *ri;                    /* [np] their index in rps */
    int np;
    float *buf;                 /* scratch: one parameter's reference piece */
    size_t cap;
    float *leaf;                /* scratch: every rank's piece of one parameter (hp_vfsdp_leaf) */
    size_t leaf_cap;            /* floats per rank */
} hp_vfsdp;

/* Sets up the checks over dist d against the reference ref (its store rps). */
hp_status hp_vfsdp_init(hp_vfsdp *c, hp_dist *d, const hp_graph *g, hp_program *ref, const hp_param_store *rps,
                        double atol, double rtol);

/* params[r][k]: rank r's k-th parameter of unit u (graph order), as the step left it. */
hp_status hp_vfsdp_params(hp_vfsdp *c, const char *step, int u, const hp_tensor *const *params);
/* shard[r]: rank r's reduced gradient shard of unit u. */
hp_status hp_vfsdp_shards(hp_vfsdp *c, const char *step, int u, const hp_tensor *shard);
/* The relative error of parameter k (graph order) over every rank's pieces of
 * it in their shards (max|a - b| / max|b|); *managed = 0 when FSDP does not
 * manage it (nothing computed). */
hp_status hp_vfsdp_grad_err(double *rel, int *managed, hp_vfsdp *c, int k);
/* Transient gathered units (parallel/fsdp.h): a store holds only its
 * supernode's shards, so t[r] (rank r's piece of global parameter gv, as the
 * store holds it) is replaced by a whole copy: the rank's own parts, the rest
 * from ranks of other supernodes that hold the same piece. The replicas
 * check then compares each rank's parts with the others'. Nothing changes
 * when no rank's store is cut to spans. */
hp_status hp_vfsdp_leaf(hp_vfsdp *c, hp_tensor *t, int gv);
void hp_vfsdp_free(hp_vfsdp *c);

#endif
