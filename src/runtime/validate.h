/* runtime/validate: the validation executor. It runs a distributed program
 * (every rank a thread of this process) node by node in lockstep with a
 * 1-rank reference program of the same global graph, fed the same parameters
 * and inputs (gathered from the ranks), and after every operator checks what
 * each rank holds against the layout propagation said it would:
 *  - shapes: each rank's buffer is the local shape of the value's layout, and
 *    each operator's inputs are in the layout (and shape) it consumes them in;
 *  - Replicate: along every axis where a value is Replicate the ranks of the
 *    group hold bit-identical pieces (checksums, then the first differing
 *    element);
 *  - values: the pieces assembled by the layout (shards inserted, one replica,
 *    Partial terms reduced in rank order) agree with the reference:
 *    max|a - b| <= atol + rtol * max|b| (atol 1e-5, rtol 1e-4; i32 exact).
 * Inserted redistribution steps are checked by their output's layout too;
 * the gathers and reductions of units of flat parts by runtime/validate_parts,
 * as the collectives' descriptors and the compile's table say. The
 * first violation stops the run with a one-line error naming the operator,
 * the tensor, the expected layout, what was found and the ranks involved.
 * After the step, the gradient-equivalence check gathers every parameter
 * gradient in its parameter's layout and reports its maximum relative error
 * against the reference. Validation is slow on purpose (one collective wake-up
 * per local step, whole tensors assembled): it is a debugging mode. */
#ifndef HP_RUNTIME_VALIDATE_H
#define HP_RUNTIME_VALIDATE_H

#include <stdio.h>

#include "runtime/dist.h"

#define HP_VALIDATE_ATOL 1e-5
#define HP_VALIDATE_RTOL 1e-4
/* bf16 values (--dtype bf16): at least 4 bf16 ulps (2^-6) relative to the largest value */
#define HP_VALIDATE_RTOL_BF16 0.015625

/* What a test hook sees after each local step of each rank (rank order, from
 * the checking thread, before the step is checked). The hook may change the
 * data and the shapes in `in` / `out`: the checks read these descriptors, so a
 * hook can simulate a wrong buffer. */
typedef struct {
    int rank;                 /* global rank */
    const hp_graph *local;    /* the rank's local graph */
    const hp_node *node;      /* the local node just run */
    int global_node;          /* its global node, -1 for inserted steps */
    hp_tensor in[HP_MAX_IN];  /* [node->nin] its input buffers */
    hp_tensor out[HP_MAX_OUT]; /* [node->nout] its output buffers (data NULL where out[k] < 0) */
    hp_tensor *xin;           /* [node->nxin] its extra inputs (FSDP's gathers: the unit's parameters) */
} hp_validate_view;
typedef void (*hp_validate_hook)(void *user, hp_validate_view *view);

typedef struct {
    const hp_graph *g; /* the dist's global graph (differentiated) */
    hp_dist *d;        /* all of its ranks hosted in this process */
    int threads;       /* threads of the reference program (0: 1) */
    double atol, rtol; /* 0: HP_VALIDATE_ATOL / HP_VALIDATE_RTOL */
} hp_validate_config;

typedef struct {
    char name[HP_NAME_LEN];
    char layout[96];  /* the parameter's layout, text form */
    double rel_err;   /* max|a - b| / max|b| (max|a - b| when b is all zero) */
} hp_validate_grad;

typedef struct {
    int nops;        /* global operators checked */
    int nunchecked;  /* global operators with no local step (not checked) */
    int nredist;     /* inserted redistribution steps checked */
    int nvalues;     /* values compared with the reference */
    int nown;        /* values in the ranks' own row orders (hp_propagation.own_order): shapes and replicas
                      * checked, not compared with the reference */
    float loss, ref_loss;
    int ngrads;      /* filled by hp_validate_gradients */
    hp_validate_grad *grads; /* [ngrads], owned */
    double worst;    /* the largest rel_err */
    int worst_index; /* its entry, -1 when none */
    int nupdates;    /* filled by hp_vmuon_check (runtime/validate_muon): Muon's updates */
    hp_validate_grad *updates; /* [nupdates], owned: each Muon matrix's update against one rank's */
    double worst_update;
} hp_validate_report;

typedef struct hp_validator hp_validator;

/* Builds the reference program. Errors when the dist's ranks are not all in
 * this process or their programs differ in structure. */
hp_status hp_validate_create(hp_validator **out, const hp_validate_config *cfg);
void hp_validate_destroy(hp_validator *v);
/* Test hook, called after each local step (NULL: none). */
void hp_validate_set_hook(hp_validator *v, hp_validate_hook fn, void *user);

/* One training step's forward and backward, checked: the ranks' current
 * parameters and inputs (set by the caller as for a production step) are
 * checked and gathered into the reference, then every local step runs on all
 * ranks at once and is checked. Afterwards the ranks hold the step's loss and
 * gradients exactly as a production step leaves them. Fills rep's counts
 * (rep: zero-initialised, or filled by an earlier call). */
hp_status hp_validate_step(hp_validator *v, hp_validate_report *rep);
/* After hp_validate_step: the gradient-equivalence table (per parameter, in
 * the graph's parameter order) and the worst entry. */
hp_status hp_validate_gradients(hp_validator *v, hp_validate_report *rep);
void hp_validate_report_free(hp_validate_report *rep);
/* After hp_validate_step: the reference's gradient of parameter `name`
 * (whole, *n elements), NULL when there is none. */
const float *hp_validate_ref_grad(const hp_validator *v, const char *name, int64_t *n);
/* The reference's parameter store (names, shapes, hidden_matrix; its values
 * are the step's parameters as gathered before it). */
const hp_param_store *hp_validate_ref_store(const hp_validator *v);

#endif
