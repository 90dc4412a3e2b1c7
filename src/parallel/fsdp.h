/* parallel/fsdp: the FSDP / ZeRO pass of hp_compile — persistent flat shards
 * per unit, laid out once, and the collectives that keep them.
 *
 * Layout. Every parameter the plan's `fsdp:` line manages (trainable,
 * Replicate on the shard axis, and Replicate or split (Shard) on the
 * replicate axis) belongs to one unit (the plan's
 * `unit` globs, first match wins; unit_bytes: runs of parameters in the
 * forward's first-use order up to that many bytes, a small parameter (at most
 * a sixteenth of it) joining its neighbour; otherwise one per block "<a>.<N>"
 * of its name, plus "root" for the rest). A parameter split along the
 * replicate axis (an expert stack split by expert along ep: each member of
 * that axis holds its own experts) goes into a split unit, never with
 * replicated ones: default units "<a>.<N>@<axis>", unit_bytes runs cut where
 * the kind changes, and a plan unit that mixes the two is an error. A split
 * unit is sharded over the shard group like any other (the ranks holding the
 * same experts), and its reduction ends at the reduce-scatter: no all-reduce
 * over the replicate axis, whose members hold other experts. The rank's
 * parameter store is laid out
 * unit by unit: a unit's parameters in graph order, each starting on a
 * 16-float (64-byte) boundary, the unit padded with zeros to a multiple of
 * 16 x members floats, so that it splits into `members` equal shards of
 * `shard` floats, each 64-byte aligned; member i's shard is floats
 * [i * shard, (i + 1) * shard) of the unit. Unmanaged parameters follow the
 * units come first. A unit's gradient is one value with the unit's layout
 * (its parameters' gradients are views into it): persistent at level 1 (the
 * reduction is in place; the rank's shard is a view of it), in the
 * activation arena at levels 2 and 3, live from its first gradient to its
 * reduction's wait, the reduced shard then a persistent value of its own
 * (shard floats): a rank keeps 4/members of the gradient bytes.
 *
 * Levels. At level 3 the ranks of one shard group inside a process share one
 * parameter store (runtime/dist): the gathered unit is that one buffer, in
 * which every rank's shard already sits at its place, so the all-gather
 * inside a supernode moves no bytes (the comm layer's shared output: it only
 * synchronises), and each rank's optimizer updates its own shard in place.
 * Levels 1 and 2 keep one store per rank and the same all-gather copies the
 * peers' updated shards into it. Gradients: each rank computes its unit's
 * full (partial-sum) gradient; a reduce-scatter leaves the sum of the rank's
 * shard in its shard value (inside a supernode each rank sums its slice
 * straight out of its peers' buffers), then, under HSDP, an all-reduce over
 * the replicate axis finishes that shard (not for a split unit). The optimizer updates the
 * rank's pieces: the intersections of its shards with the parameters.
 *
 * Nodes and their places (the schedule pass puts them where `hint` says):
 *   fsdp_gather_start/wait  forward: the wait before the unit's first reader,
 *                           the start `prefetch` units earlier;
 *   fsdp_reduce_start       backward: after the last node that touches the
 *                           unit's parameters or gradients;
 *   fsdp_reduce_wait        after the next unit's reduce start (the unit's
 *                           reduce-scatter overlaps that unit's backward);
 *                           under HSDP it starts the replicas' all-reduce;
 *   fsdp_allreduce_wait     HSDP: at the end of the backward.
 *
 * The fsdp2 style (the plan's style=fsdp2; a baseline that behaves like
 * PyTorch FSDP2, for side-by-side measurement in the same code) keeps one
 * store per rank at every level, gathers each unit into a staging buffer (one
 * per gather in flight) and copies it out to the parameters at the wait,
 * copies each unit's gradient into a staging buffer before its
 * reduce-scatter, runs HSDP's all-reduce after the reduce-scatter as a
 * separate blocking call, and keeps at most one reduction in flight, waited
 * before the next unit's starts. reshard=on (FSDP2's default
 * reshard_after_forward=True): every rank keeps only its own shard and copies
 * each gathered unit out to a transient slot of its own (below; local[]
 * marks only the rank itself), `prefetch` units ahead in both passes. The
 * numbers are the default style's.
 *
 * gather=bf16 (bf16 compute; the precision pass then sends every parameter
 * through its bf16 copy): the store has a bf16 mirror with its layout
 * (runtime/params; shared like the store at level 3), and each managed
 * parameter's bf16 copy is its place in the mirror (hp_value.mirror_of; its
 * cast node becomes fsdp_param16, which does nothing: the gather filled it).
 * A unit's gather narrows the rank's fp32 shard into the mirror and
 * all-gathers the mirror in bf16: inside a supernode that only synchronises
 * (level 3), across supernodes it moves half the bytes, and each rank rounds
 * only its own shard. The fp32 store then holds current values in the rank's
 * own shards only (and, at level 3, in its supernode's), which is all the
 * optimizer and the checkpoints read.
 *
 * Transient gathered units (level 3, style hyperpar, reshard=on, fp32
 * gathers, and a shard group that spans supernodes: supernode_ranks > 0 and
 * some member in another supernode). The supernode's store holds only its
 * members' shards (and the unmanaged parameters): the rest of its layout is
 * reserved address space, not memory (runtime/params' spans). Compute reads
 * each managed parameter from a compute copy in one of a few slots shared by
 * the supernode's ranks (values with store_slot; each parameter's copy a view
 * at its offset in the unit): unit u fills slot `slot` at its gather, slots
 * chosen so that a unit's gather starts only after the slot's previous unit's
 * last reader (units in the forward's first-use order, the lowest free slot;
 * prefetch 1 on GPT-2: the root, which the head reads again at the end, and
 * two for the blocks). The backward gathers a unit again unless it still
 * holds its slot from the forward, starting as soon as the slot is free (the
 * hyperpar style; fsdp2: `prefetch` units ahead); keep_bytes keeps the
 * backward's first units whole from their forward (a slot of their own, no
 * second gather) up to that many bytes of units. A gather copies the
 * rank's shard from the store into the slot and all-gathers the slot in place
 * (inside the supernode that only synchronises; across supernodes it
 * receives the others' shards), fenced: no member writes the slot before all
 * the supernode's members have begun the call, so none still reads the
 * slot's previous unit. Memory per supernode: its members' shards of the
 * units plus the slots, each the size of the largest unit it holds. */
#ifndef HP_PARALLEL_FSDP_H
#define HP_PARALLEL_FSDP_H

#include <stddef.h>

#include "core/graph.h"
#include "layout/plan.h"
#include "layout/propagate.h"
#include "optim/phase.h"
#include "parallel/lower.h"
#include "parallel/mesh_comm.h"

#define HP_FSDP_ALIGN 16 /* floats */

typedef struct {
    char name[HP_NAME_LEN];
    size_t offset; /* floats: the unit's start in the parameter store */
    size_t size;   /* floats: padded, = members * shard */
    size_t shard;  /* floats per member */
    int nparams;
    int fwd_pos;   /* order of first use in the forward (0 = first) */
    int grad;      /* local value: the unit's gradient (its parameters' gradients are views
                    * into it); level 1: persistent, levels 2, 3: in the arena until reduced */
    int grad_shard; /* local value: this rank's reduced shard of it (level 1: a view of grad) */
    int grad_acc;   /* gradient accumulation (parallel/accum): the shard's accumulator, -1: none */
    int reduce_node[3]; /* the unit's reduction nodes: start, wait, the replicas' wait (-1: none);
                         * parallel/accum rewires them */
    int gather_node[2]; /* the forward's gather start and wait (-1: none); parallel/accum has them run at the
                         * first micro-batch only (the store keeps the gathered unit until the optimizer) */
    int slot;           /* transient: the compute slot its gathers fill (-1: nothing reads the unit) */
    int bwd_gather;     /* transient: 1 when the backward gathers it again (another unit took its slot) */
    int keep;           /* transient: 1 when kept whole from its forward to its backward (keep_bytes): its slot
                         * is its own */
    int chunk;          /* an interleaved pipeline stage's model chunk running the unit's nodes (0: one chunk) */
    int split;          /* 1: its parameters are split along the replicate axis (expert stacks under EP): the
                         * reduction is the reduce-scatter alone, no replicas' all-reduce (reduce_node[2] -1) */
    int grad_sum;       /* local value: the reduced shard summed over the pipeline stages holding the unit (its
                         * one parameter is tied across stages; parallel/pp_shared), what the optimizer reads;
                         * -1: none */
} hp_fsdp_unit;

typedef struct hp_fsdp_plan {
    int level; /* 0: no FSDP (the rest is unused) */
    hp_fsdp_style style;
    int shard_axis, replicate_axis;
    int members, me;    /* the shard group's size and this rank's place in it */
    int replicas;       /* the replicate group's size (1 without HSDP) */
    int fuse_replicas;  /* HSDP, style hyperpar, fp32 reductions, every parameter with a gradient managed, no
                         * split unit (its axis's group has traffic of its own, EP's exchange): a
                         * unit's reduce-scatter and its replicas' all-reduce are one fused call on the shard
                         * group's lane (hp_comm_start_then), the all-reduce starting as the reduce-scatter
                         * ends, waited at the replicas' wait */
    int prefetch;
    int64_t keep_bytes; /* transient: units kept from the forward for the backward, up to these bytes */
    int reduce_bf16;    /* gradients reduce-scattered in bf16 (narrowed, summed in fp32, widened into the shard) */
    int gather_bf16;    /* parameters gathered in bf16 into the store's bf16 mirror (see above) */
    int transient;      /* gathered units in transient slots (see above): the shard group spans supernodes */
    int nslots;         /* transient: compute slots; slot j is floats [slot_at[j], slot_at[j + 1]) of
                         * slot_floats in all, the size of the largest unit it holds */
    size_t *slot_at;    /* [nslots + 1] */
    size_t slot_floats;
    int sn_members;     /* members of the shard group in this rank's supernode */
    unsigned char *local; /* [members]: 1 for the members whose shards this rank's store holds: its supernode's
                           * (the fsdp2 style's transient slots: the rank's own only) */
    int nunits;
    hp_fsdp_unit *units;
    int nparams;        /* the rank's parameters (a pipeline stage's: those it holds), in graph order */
    int *gval;          /* [nparams]: each one's global value */
    int *unit_of;       /* [nparams]: the unit, -1 when not managed */
    size_t *offset;     /* [nparams]: floats into the store */
    size_t total;       /* store floats */
    hp_layout *grad_layout; /* [global nvals]: gradient targets for lowering (NULL: none) */
} hp_fsdp_plan;

/* Before lowering: units, the store layout, and the layouts the managed
 * parameters' gradients are brought to (Partial on the shard and replicate
 * axes: the reduction is this pass's). plan->fsdp.level == 0: nothing.
 * keep_auto: the bytes kept where the plan says keep_bytes=auto.
 * held[g->nvals] (a pipeline stage's parameters; NULL: every parameter):
 * 0 for a parameter the rank does not hold (it is not laid out), 1 for one it
 * holds, 2 for one that other stages hold too (a tied embedding): such a
 * parameter is a unit of its own, so that its unit, and each member's shard
 * of it, is the same on every stage holding it. */
hp_status hp_fsdp_prepare(hp_fsdp_plan *out, const hp_graph *g, const hp_propagation *prop, const hp_mesh *m,
                          const hp_plan *plan, int rank, int supernode_ranks, int64_t keep_auto,
                          const unsigned char *held);
/* After lowering: the gather and reduce nodes of every unit. */
hp_status hp_fsdp_emit(hp_fsdp_plan *f, hp_rank_graph *rg);
/* The optimizer's pieces of local parameter `p` (its index k in graph order):
 * views of its part in this rank's shards; returns how many were written to
 * out (0 or 1), or -1 on error (the graph's). */
int hp_fsdp_optim_pieces(hp_optim_phase_param *out, const hp_fsdp_plan *f, hp_rank_graph *rg, int p, int k,
                         int replicas);
/* Parameter k's part in this rank's shard of its unit (k managed; numel the
 * elements of its local piece): its flat elements [*begin, *end); returns 0
 * (and an empty range) when the shard holds none of it. */
int hp_fsdp_shard_part(int64_t *begin, int64_t *end, const hp_fsdp_plan *f, int k, int64_t numel);
void hp_fsdp_plan_free(hp_fsdp_plan *f);
/* Where a managed parameter's local piece lies in its unit: `at` floats from
 * the unit's start, in a unit split into members' ranges of `shard` floats
 * (0: not managed). Every member of a shard group lays its units out alike,
 * so one plan gives the places for all of them; a pipeline's other stages
 * lay out their own parameters (a plan made for one of their ranks). */
typedef struct {
    int64_t at, shard;
} hp_fsdp_place;
/* Writes the place of each parameter f manages into out[its global value]. */
void hp_fsdp_places(hp_fsdp_place *out, const hp_fsdp_plan *f);
/* Floats of the plan's largest unit (0 without units). */
size_t hp_fsdp_largest_unit(const hp_fsdp_plan *f);
/* transient: the store's parts that are memory in this rank's supernode, as
 * float ranges [a, b) in order: the unmanaged parameters and the shards of
 * the supernode's members. Writes at most cap, returns how many there are. */
int hp_fsdp_store_spans(size_t (*out)[2], int cap, const hp_fsdp_plan *f);

/* Run time: what the FSDP operators of a rank read (hp_rank_ctx.fsdp). */
typedef struct hp_fsdp_rt hp_fsdp_rt;
struct hp_fsdp_rt {
    const hp_fsdp_plan *plan;
    float *params;     /* the rank's parameter store data */
    float *slots;      /* transient: the store's compute slots (plan->slot_at), else NULL */
    uint16_t *params16; /* gather=bf16: the store's bf16 mirror (same layout), else NULL */
    hp_comm_group *shard_group, *replicate_group;
    hp_comm_req **req;    /* [3 * nunits]: gather, reduce-scatter, all-reduce per unit */
    hp_comm_args *args;   /* [3 * nunits] */
    hp_comm_tensor *tens; /* [3 * nunits] */
    int64_t copied;       /* bytes the unit gathers copied so far (0 at level 3 inside a supernode) */
    float **staging;      /* fsdp2 style: [nstaging] gather buffers, then one for gradients (max unit floats) */
    int nstaging;
    /* reduce=bf16: two reductions in flight at most (a unit's is waited after the next one starts),
     * each with the unit's gradient narrowed [largest unit] and its reduced shard [largest shard] */
    uint16_t *red16[2], *shard16[2];
    int red16_unit[2]; /* the unit each pair serves (-1: free) */
};

/* The run-time state of one rank (params: its store's data, params16 its
 * bf16 mirror or NULL); groups from the process's mesh groups. */
hp_status hp_fsdp_rt_create(hp_fsdp_rt **out, const hp_fsdp_plan *plan, const hp_mesh_comm *mc, int rank,
                            float *params, uint16_t *params16, float *slots);
void hp_fsdp_rt_destroy(hp_fsdp_rt *rt);
/* The same as a rank-state hook (hp_rank_state_hook, parallel/compile): plan
 * is the hp_fsdp_plan; the state goes to ctx->fsdp (detach: destroyed, NULL). */
hp_status hp_fsdp_rt_attach(hp_rank_ctx *ctx, const void *plan, const hp_mesh_comm *mc, int rank, float *params,
                            uint16_t *params16, float *slots);
void hp_fsdp_rt_detach(hp_rank_ctx *ctx);

extern const hp_opdef hp_op_fsdp_gather_start, hp_op_fsdp_gather_wait, hp_op_fsdp_reduce_start,
    hp_op_fsdp_reduce_wait, hp_op_fsdp_allreduce_wait, hp_op_fsdp_param16;

#endif
