/* autopar/cost: the cost model of issue 28 — a training step's predicted time
 * per rank, priced from the programs hp_compile builds (one rank's program per
 * pipeline stage; without a pipeline, one), never re-derived from the plan:
 *
 *  - every computing node of the rank's step (its actions expanded over the
 *    micro-batches, core/action) costs its FLOPs over the calibrated GFLOP/s
 *    (matrix products: gemm, grouped_gemm, attention) or its bytes over the
 *    calibrated GB/s (the memory-bound families) at the profile's rate of its
 *    operator's family, dtype and FLOP bucket (autopar/profile), its flops and
 *    bytes from the operator table (hp_opdef.flops, .bytes), the rates times
 *    the environment's compute_scale;
 *  - every collective node is priced from its descriptor (core/coll_desc) as
 *    the calls it makes (kind, group, whole buffer: autopar/cost_calls), each
 *    call's messages and bytes for the rank and tier exactly as the comm layer
 *    moves them (autopar/volume) at the tier's α (per message) and β (per
 *    rank);
 *  - the schedule places them: the rank's compute runs the step order; a
 *    start puts its call on its group's lane (calls of one group run in start
 *    order, different groups' at once, as the comm layer's lanes do); a wait,
 *    or a blocking call, holds compute until the call ends — that hold is the
 *    exposed communication of the call's tiers; a pipeline's receive holds it
 *    until the sending stage's message arrives — the bubble. The stages are
 *    simulated together, each message matched to its receive in order;
 *  - stages that share one process's cores (share_stages) are simulated on
 *    one clock as processor sharing: while A of them compute, each runs at
 *    share_speed[A] times the all-computing rate, so a stage's bubble lends
 *    its cores to the others.
 *
 * The step is the slowest stage's; its split adds up: step = compute +
 * optimizer + exposed (both tiers) + bubble. */
#ifndef HP_AUTOPAR_COST_H
#define HP_AUTOPAR_COST_H

#include <stdint.h>

#include "autopar/cluster.h"
#include "autopar/profile.h"
#include "parallel/compile.h"

/* One collective call as the cost model prices it. */
typedef struct {
    hp_prof_kind kind;
    double bytes;      /* the call's whole buffer (autopar/profile.h's N) */
    int elem_bytes;    /* its elements' size (4 fp32, 2 bf16): shards are cut on elements */
    int members;       /* the group's size */
    int supernodes;    /* supernodes the group spans (its members spread evenly over them) */
    int member;        /* the rank's place in the group (-1: price the busiest member) */
    int peer;          /* a send's destination (member index) */
    int shared_output; /* the members of a supernode pass one output (FSDP's shared store): the gather inside
                        * only synchronises */
    int lane;          /* the comm lane it runs on (one per group) */
} hp_cost_call;

#define HP_COST_MAX_CALLS 24 /* a redistribution's steps at most (layout/redist) */
/* Lanes: a mesh axis's group (0 .. HP_MAX_MESH_DIMS-1), the world, FSDP's shard and replica groups. */
enum { HP_COST_LANE_WORLD = 16, HP_COST_LANE_FSDP_SHARD, HP_COST_LANE_FSDP_REPLICAS, HP_COST_NLANES };

#define HP_COST_SHARE_MAX 16

/* What the model runs on. */
typedef struct {
    const hp_profile *profile; /* kernel rates; a collective's α–β where it has an entry for the tier */
    const hp_cluster *cluster; /* ranks per supernode; the tiers' latency and bandwidth where the profile has
                                * none; NULL: one supernode, links from the profile only */
    double compute_scale;      /* the profile's kernel rates times this (> 0; ranks sharing cores: < 1) */
    int64_t a2a_fuse_bytes;    /* the all-to-all's fusion threshold (comm/comm.h; 0: never fused) */
    unsigned links_from_cluster; /* bit t set (1 << HP_PROF_INTRA, 1 << HP_PROF_INTER): tier t's collectives at the
                                  * cluster's latency and bandwidth (a profile measured elsewhere, an emulated
                                  * link); clear: at the profile's α–β where it has the tier, else the cluster's */
    int share_stages;          /* 2..HP_COST_SHARE_MAX: the pipeline's stages run on one process's cores
                                * (rank-threads of one process): the cores a stage leaves idle (its bubble, its
                                * waits) go to the others; compute_scale is then the rate when all of them
                                * compute at once; 0 or 1: each stage on cores of its own */
    double share_speed[HP_COST_SHARE_MAX + 1]; /* [A]: a computing stage's kernel rate over compute_scale while A
                                * of the stages compute (share_speed[share_stages] = 1) */
    int inter_holds;           /* 1: a call's inter-supernode part holds the compute stream as it runs (it is not
                                * hidden): supernodes emulated in one process, whose link layer works on the
                                * cores the ranks compute on (measured: overlap on and off step alike there) */
} hp_cost_env;

/* A timeline event (simulated seconds from the step's start). */
typedef struct {
    int stage;          /* the pipeline stage (0 without one) */
    int comm;           /* 0: the compute stream; 1: a collective on lane `lane` */
    int lane;
    const char *name;   /* the node's name (points into the compiled graph) */
    const char *phase;  /* "fwd", "bwd", "opt" */
    double t0, t1;
    double bytes;       /* a collective's buffer */
} hp_cost_event;

typedef struct {
    double step_s;                      /* the slowest stage's step */
    double compute_s;                   /* its forward and backward kernels */
    double optimizer_s;                 /* its optimizer action: kernels and what it waits for, and the host's
                                         * work around a step (the profile's step_overhead_us) */
    double exposed_s[HP_PROF_NTIERS];   /* its compute held by collectives (forward and backward), by tier */
    double bubble_s;                    /* its compute held by pipeline receives */
    double comm_s[HP_PROF_NTIERS];      /* its collectives' time on the links (hidden or not), by tier */
    double comm_bytes[HP_PROF_NTIERS];  /* bytes it moves per step, by tier (autopar/volume) */
    double comm_msgs[HP_PROF_NTIERS];
    double flops;                       /* its forward and backward nodes' FLOPs per step (recomputation in) */
    double family_s[HP_PROF_NFAMILIES]; /* its kernels' seconds by family (autopar/profile), optimizer's too */
    int stage;                          /* which stage is the slowest */
    double (*stage_bytes)[HP_PROF_NTIERS]; /* [nstages]: bytes each stage's rank moves per step, by tier (owned) */
    double (*stage_msgs)[HP_PROF_NTIERS];
    int nstages;
    int fallbacks;                      /* kernel lookups that used a fallback (autopar/profile) */
    /* the timeline, when hp_cost_predict is given one: events[nevents] (owned; hp_cost_free) */
    hp_cost_event *events;
    int nevents;
} hp_cost;

/* The calls collective node `node` of cc's local graph starts or makes (a wait makes none; a receive none:
 * its sender's call carries the message): out[HP_COST_MAX_CALLS]; returns how many (0: not a collective, a
 * wait, or a group of one). rps: ranks per supernode (contiguous global ranks; 0: all in one). */
int hp_cost_calls_of(hp_cost_call *out, const hp_compiled *cc, int node, int rps);

/* A call's seconds on each tier (t[HP_PROF_NTIERS]; their sum is the call's time), and its bytes and
 * messages for the rank per tier when bytes/msgs are not NULL. Errors name the call's field at fault. */
hp_status hp_cost_call_time(double *t, double *bytes, double *msgs, const hp_cost_call *c, const hp_cost_env *env);

/* Predicts one training step of the ranks whose programs are stage[0..nstages) — one per pipeline stage, in
 * stage order (any rank of the stage: the model takes the stages' ranks to be alike). timeline: 1 to keep
 * the events. */
hp_status hp_cost_predict(hp_cost *out, const hp_compiled *const *stage, int nstages, const hp_cost_env *env,
                          int timeline);
void hp_cost_free(hp_cost *c);

/* The seconds of computing node `node` of graph g (0 for a node with no FLOPs and no bytes, and for a
 * communicating one); *fallback set when the profile had no exact entry. */
double hp_cost_node_time(const hp_graph *g, int node, const hp_cost_env *env, int *fallback);

#endif
