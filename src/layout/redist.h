/* layout/redist: redistribution planning — how to turn a tensor laid out as
 * `from` into the same tensor laid out as `to` on one mesh, as a short
 * sequence of steps that each change one mesh axis's placement. Pure
 * planning: no communication happens here (parallel/redistribute runs a plan).
 *
 * Steps (n = the axis's size, N = the bytes of the local piece a collective
 * works on: fp32 as planned, or the elements' size set by
 * hp_redist_set_elem_bytes):
 *   slice          R -> S(d)        local: keep own chunk                 0
 *   all-gather     S(d) -> R        concatenate chunks along d            (n-1)/n * N_out
 *   reduce-scatter P(op) -> S(d)    reduce, keep own chunk                (n-1)/n * N_in
 *   all-reduce     P(op) -> R       reduce everywhere                     2(n-1)/n * N (max: (n-1) * N)
 *   all-to-all     S(a) -> S(b)     re-split on one axis                  (n-1)/n * N
 *   to-partial     R -> P(op)       local: sum keeps the value on member 0
 *                                   and zeros elsewhere; avg, max keep it  0
 * P(avg) reduces with the average; P(max) with the maximum (through an
 * all-gather / all-to-all of terms and a local max). A Partial becomes another
 * Partial op only through Replicate.
 *
 * Nested shards: when several mesh axes shard one tensor dim, the earlier axis
 * is the outer split (layout.h). A step on axis a along dim d is only taken
 * when no later axis shards d (before or after the step): then a's members
 * hold consecutive ceil-chunks of one range and the step is exact. The
 * planner searches the (small) space of layouts for the cheapest valid
 * sequence: fewest bytes, then fewest steps. Bytes are per rank, averaged over
 * ranks (global bytes / number of pieces for N). */
#ifndef HP_LAYOUT_REDIST_H
#define HP_LAYOUT_REDIST_H

#include <stddef.h>

#include "layout/layout.h"

typedef enum {
    HP_RD_SLICE = 0,
    HP_RD_ALL_GATHER,
    HP_RD_REDUCE_SCATTER,
    HP_RD_ALL_REDUCE,
    HP_RD_ALL_TO_ALL,
    HP_RD_TO_PARTIAL
} hp_rd_kind;

typedef struct {
    hp_rd_kind kind;
    int axis;          /* mesh axis whose placement changes */
    int dim;           /* tensor dim: gathered (all-gather), split (slice, reduce-scatter),
                        * or the old shard dim (all-to-all); -1 for all-reduce, to-partial */
    int dim_to;        /* all-to-all: the new shard dim; else -1 */
    hp_partial_op op;  /* reduce-scatter, all-reduce, to-partial: the Partial op */
    hp_shape global;   /* the tensor's global shape */
    hp_layout before;  /* layout before the step */
    hp_layout after;   /* layout after the step */
    double bytes;      /* bytes sent per rank (0 for local steps) */
} hp_redist_step;

#define HP_REDIST_MAX_STEPS 24

typedef struct {
    hp_mesh mesh;
    hp_shape global;
    hp_layout from, to;
    int nsteps; /* 0 when from == to (a plain copy) */
    hp_redist_step step[HP_REDIST_MAX_STEPS];
    double bytes; /* total over the steps */
    int elem_bytes; /* bytes per element the step bytes count: 4 (fp32) as planned */
} hp_redist;

/* Plans from -> to for a tensor of global shape `global` on mesh m. Errors
 * (layouts that do not fit the mesh or the tensor) name the layouts. */
hp_status hp_redist_plan(hp_redist *out, const hp_shape *global, const hp_layout *from, const hp_layout *to,
                         const hp_mesh *m);
/* The plan's bytes (every step's and the total) for elements of elem_bytes
 * bytes (2: a bf16 value) instead of the elem_bytes it counted so far; the
 * steps themselves stay (the cheapest plan does not depend on the size). */
void hp_redist_set_elem_bytes(hp_redist *r, int elem_bytes);
/* Total bytes sent per rank of the cheapest plan (for the propagation pass). */
hp_status hp_redist_cost(double *bytes, const hp_shape *global, const hp_layout *from, const hp_layout *to,
                         const hp_mesh *m);
/* "all-gather(dp, dim 0) 1.5 MB" (decimal units: B, KB, MB, GB) */
char *hp_redist_step_str(char *buf, size_t n, const hp_redist_step *s, const hp_mesh *m);
/* The steps joined by "; " ("copy" when there are none). */
char *hp_redist_str(char *buf, size_t n, const hp_redist *r);
const char *hp_rd_kind_name(hp_rd_kind k);

#endif
