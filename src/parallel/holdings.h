/* parallel/holdings: the compile's table of who holds what. For every
 * parameter and optimizer-state tensor of the model, the pieces one rank
 * holds, where each lives, and which ranks hold the same piece (replicas);
 * plus the description of the rank's parameter store (its layout, its bf16
 * mirror, whether it is shared). The runtime's checkpoints and stores read
 * this table instead of asking which parallel mechanism made it: FSDP/ZeRO,
 * tensor parallelism and replication are all just rows here, and pipeline
 * stages, experts or distributed-optimizer owners become more rows.
 *
 * A piece is the rank's layout box of the global tensor (a Shard(d) block,
 * or the whole tensor for a replica) and a flat part of it: elements
 * [lo, hi) of the box's row-major order (the whole box: [0, numel)). FSDP
 * keeps a flat range of each padded unit; its intersection with a
 * parameter is such a part. A piece is `current` when this rank keeps its
 * values up to date (what a save writes: under FSDP only the rank's shards)
 * and `loaded` when a load must fill it (under FSDP levels 1 and 2 the whole
 * box of a parameter in the rank's own store; at level 3 its shards, the
 * gather brings the rest). Within one tensor the current pieces of a set of
 * ranks holding distinct pieces tile it exactly once.
 *
 * Where: a parameter's piece lies in the parameter store, `at` floats into
 * its data (the piece's element lo is there); an optimizer state's piece is
 * a value of the rank's program (local id), `at` floats into it.
 *
 * Units of flat parts. Tensors held as flat parts belong to a unit: a
 * padded flat buffer their boxes are laid out in, which `members` ranks
 * split into equal ranges of `shard` floats (FSDP's units). After the
 * step's reduction the rank's range of the unit's gradient lies in a value
 * of its program; the table lists, per parameter, the rank's piece of that
 * reduced gradient (grads) the same way as its other pieces. Validation
 * reads units and gradient pieces to compare gathers and reductions. */
#ifndef HP_PARALLEL_HOLDINGS_H
#define HP_PARALLEL_HOLDINGS_H

#include <stddef.h>
#include <stdint.h>

#include "core/graph.h"
#include "layout/layout.h"
#include "layout/propagate.h"
#include "parallel/fsdp.h"
#include "parallel/lower.h"
#include "parallel/pp_pass.h"

typedef enum { HP_HOLD_STORE = 0, HP_HOLD_VALUE = 1 } hp_hold_place;

typedef struct {
    char name[HP_NAME_LEN]; /* the parameter's, or the state's ("adamw.m.<param>") */
    int v;                  /* global value of the parameter (a state's: its parameter's) */
    int is_state;
    int param;              /* a state's parameter: its tensor index here; a parameter's: itself */
    int fsdp;               /* the parameter's index in FSDP's parameter order when FSDP manages it, else -1 */
    int parts;              /* 1: the ranks hold flat parts of its boxes (FSDP manages it) */
    int64_t part_at, part_shard; /* parts: the box's start in its unit and the unit's shard floats */
    hp_shape shape;         /* global */
    int first, count;       /* its pieces: pieces[first .. first + count) */
    int unit;               /* parts: the unit its box is laid out in (units[unit]); -1: held whole */
    size_t unit_at;         /* parts: floats from the unit's start to the box's element 0 */
    int grad;               /* a parameter's piece of its reduced gradient on this rank: grads[grad]; -1: none */
} hp_held_tensor;

typedef struct {
    int tensor;                 /* index in tensors */
    hp_shape box;               /* the rank's layout box: extent ... */
    int64_t start[HP_MAX_DIMS]; /* ... and start per dimension of the global tensor */
    int64_t lo, hi;             /* the part held: [lo, hi) of the box's row-major elements */
    int part;                   /* 1: a flat part of the box (an FSDP shard's), 0: the box whole */
    int current, loaded;        /* see above */
    hp_hold_place place;
    int local;                  /* STORE: the parameter's index in the store (the local graph's parameter
                                 * order); VALUE: the local value */
    size_t at;                  /* floats into the store's data or into the value: where element lo is */
    int first_replica, nreplicas; /* the ranks holding the same piece (this one included), ascending:
                                   * replicas[first_replica .. + nreplicas) */
} hp_holding;

/* The rank's parameter store: every local parameter at offset[k] floats (the
 * local graph's parameter order), total floats in all. */
typedef struct {
    int nparams;
    size_t *offset; /* [nparams] */
    size_t total;
    int mirror;     /* a bf16 mirror with the same layout (FSDP gather=bf16) */
    int shared;     /* the ranks of one shard group hosted by one process share one store (FSDP level 3): */
    int shared_axis; /* the hosted ranks of one supernode that differ only along this mesh axis (-1: none) */
    int nspans;     /* > 0: only these parts are memory, float ranges [a, b) in order (FSDP transient units) */
    size_t (*span)[2];     /* [nspans] */
    int nslots;            /* transient: compute slots after the layout, slot j floats [slot_at[j], slot_at[j + 1]) */
    const size_t *slot_at; /* [nslots + 1] (borrowed from the compile) */
    int parts;      /* its parameters are kept current only in parts (the table's flat parts; FSDP, ZeRO) */
} hp_held_store;

/* A unit of flat parts (see above), as this rank sees it. */
typedef struct {
    char name[HP_NAME_LEN];
    size_t shard;  /* floats of each member's range */
    int member;    /* this rank's range: floats [member * shard, (member + 1) * shard) of the unit */
    int grad;      /* local value: the rank's range of the unit's reduced gradient (shard floats) */
    int replicas;  /* > 1: the reduction ends with an all-reduce of the range among that many
                    * ranks holding it (the range is final only after it); 1: final after the
                    * reduction (other ranks may still hold the same range, computed alike) */
} hp_held_unit;

typedef struct {
    int rank;
    int ntensors, npieces, nreplicas;
    hp_held_tensor *tensors; /* parameters in graph order, then the rank's states grouped by parameter */
    hp_holding *pieces;
    int *replicas;
    hp_held_store store;
    int nunits;
    hp_held_unit *units;
    int ngrads;
    hp_holding *grads;       /* the rank's pieces of reduced parameter gradients held as flat parts:
                              * place VALUE (local: the unit's grad value, at floats into it), part 1 */
    /* what every rank's pieces follow from (borrowed from the compile: the global graph, the layouts
     * [g->nvals], the mesh; the FSDP plan copied shallowly, its arrays borrowed) */
    const hp_graph *g;
    const hp_layout *layouts;
    hp_mesh mesh;
    hp_fsdp_plan fsdp;
    const hp_pp_plan *pp;   /* a pipeline's stages (borrowed; NULL: none): a rank holds only its stage's */
    int partial;            /* 1: some rank holds nothing of some tensor (a pipeline's stages) */
} hp_holdings;

/* The table of `rank` from its compiled parts: the global graph g (with
 * its propagation prop over mesh m), the rank's graph rg (optimizer phase
 * included), its FSDP plan f (level 0: none), the places of every managed
 * parameter in its unit ([g->nvals], hp_fsdp_places over every pipeline
 * stage's plan; NULL: f's) and its pipeline plan pp (NULL or axis -1: none; borrowed:
 * ranks of other stages hold none of the stage's tensors). */
hp_status hp_holdings_build(hp_holdings *out, const hp_graph *g, const hp_propagation *prop, const hp_mesh *m,
                            const hp_rank_graph *rg, const hp_fsdp_plan *f, const hp_fsdp_place *place, int rank,
                            const hp_pp_plan *pp);
void hp_holdings_free(hp_holdings *h);
/* Rank q's pieces (any rank, hosted anywhere) of parameter tensor t (state 0)
 * or of each of its optimizer states (state 1), as rank q's own table lists
 * them: box, part and flags (place, at and replicas unset). Writes at most 2,
 * returns how many. */
int hp_holdings_pieces_for(hp_holding *out, const hp_holdings *h, int t, int state, int q);
/* The tensor named `name`, or -1. */
int hp_holdings_find(const hp_holdings *h, const char *name);
/* Floats of piece p. */
int64_t hp_holding_numel(const hp_holding *p);

#endif
