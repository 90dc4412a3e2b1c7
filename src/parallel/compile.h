/* parallel/compile: hp_compile, the one entry from a model to a rank's
 * program. The passes run in this order, each a function over the rank's
 * graph with its own header:
 *
 *   loss chunk    parallel/loss_chunk the LM head and its cross-entropy fused over vocabulary chunks
 *                                     (--loss-chunk): the logits never stored whole
 *   precision     parallel/precision  bf16 compute (--dtype bf16): casts, dtypes per operator
 *   moe chunks    parallel/moe_chunk  each MoE layer's tokens in chunks (--moe-chunks): a dispatch,
 *                                     experts and combine per chunk
 *   autodiff      core/autodiff       backward nodes, on a copy of the model graph
 *   propagate     layout/propagate    a layout for every value (the plan's mesh)
 *   rows split    parallel/grad_rows  a gradient of a dense part and rows (a tied embedding's)
 *                                     reduced in two parts: the dense part is the parameter's gradient
 *   pipeline      parallel/pp_pass    the stages (a mesh axis "pp"): which stage runs which node
 *   fsdp          parallel/fsdp       FSDP/ZeRO units and the store layout (the
 *                                     managed gradients stay Partial); a pipeline stage's own
 *   [transforms]  remat, expert parallel go here
 *   lower         parallel/lower      local kernels + collectives on local shapes
 *   stage         parallel/pp_pass    the rank's graph cut to its stage; sends and receives between stages
 *   gemm policy   parallel/gemm_policy fp32 linears: OpenBLAS, oneDNN or measured (--fp32-gemm)
 *   remat         parallel/remat      blocks' forward values recomputed in the backward (--remat)
 *   fsdp nodes    parallel/fsdp       each unit's gather and reduction
 *   dp reduce     parallel/reduce_dtype gradient all-reduces in bf16 (--dp-reduce bf16): casts around them
 *   accumulate    parallel/accum      gradient accumulators (grad_accum > 1)
 *   shared        parallel/pp_pass    a tied parameter's gradient parts summed across its stages
 *   rows          parallel/grad_rows  the split gradients' rows kept, gathered, added after the reduction
 *   optimizer     parallel/optim_phase clipping and AdamW/Muon update nodes
 *   split bwd     parallel/pp_pass    zero bubble: linear backwards in input and weight parts
 *   schedule      parallel/schedule   the step order; collective start/wait placement
 *   memory        core/memplan        arena offsets for that order
 *   holdings      parallel/holdings   the table of who holds what (parameters, optimizer states)
 *
 * The result holds everything later stages read: the differentiated global
 * graph and its layouts (validation mode compares against them), the rank's
 * local graph, its step order and memory plan; runtime/program runs it. No
 * plan (NULL) means one rank: the mesh "dp=1" with every tensor Replicate,
 * which compiles to the same program as the plain engine. Nothing runs and
 * nothing is allocated per tensor here: `hyperpar plan` compiles a 124M model
 * in milliseconds. */
#ifndef HP_PARALLEL_COMPILE_H
#define HP_PARALLEL_COMPILE_H

#include "core/graph.h"
#include "core/memplan.h"
#include "layout/plan.h"
#include "layout/propagate.h"
#include "optim/optimizer.h"
#include "optim/phase.h"
#include "parallel/fsdp.h"
#include "parallel/holdings.h"
#include "parallel/lower.h"
#include "parallel/pp_pass.h"
#include "parallel/remat.h"
#include "parallel/schedule.h"

#define HP_MAX_PASSES 24
#define HP_PASS_NOTE 160

typedef struct {
    int train;                    /* 1: autodiff (and the optimizer phase when optim is set) */
    const hp_optim_config *optim; /* NULL: no optimizer phase */
    float max_norm;               /* gradient clipping (<= 0: off) */
    int grad_accum;               /* micro-batches per step (<= 1: none; parallel/accum) */
    int accum_comm_last;          /* FSDP: reduce once, at the last micro-batch (whole-unit accumulators) */
    int deterministic;            /* sums in a fixed tree order: the rank's all-reduces and reduce-scatters
                                   * (hp_rank_ctx.tree) and the accumulation over micro-batches */
    hp_schedule_opts schedule;
    hp_dtype dtype;               /* compute dtype: HP_F32 (default, 0) or HP_BF16 (parallel/precision) */
    int fp32_gemm;                /* fp32 linears' GEMMs (kernels/gemm.h hp_gemm_fp32_policy; 0: OpenBLAS) */
    int bf16_params_all;          /* bf16: every parameter reaches compute rounded to bf16 (norm weights and
                                   * biases too; the plan's fsdp gather=bf16 implies it) */
    hp_dtype dp_reduce;           /* parameter gradients' all-reduces: HP_F32 (default, 0) or HP_BF16
                                   * (parallel/reduce_dtype: narrowed, summed in fp32, widened) */
    int64_t fsdp_keep_auto;       /* the bytes an FSDP plan's keep_bytes=auto keeps (hp_api_train_fit settles
                                   * them from the memory budget); 0: none */
    hp_remat_opts remat;          /* rematerialisation (parallel/remat; policy 0: none) */
    int64_t loss_chunk;           /* > 0: the LM head and its loss fused over this many vocabulary columns at a
                                   * time (parallel/loss_chunk); 0: off */
    int moe_chunks;               /* > 1: each MoE layer's tokens in this many chunks (parallel/moe_chunk) */
    hp_pp_opts pp;                /* a pipelined plan's schedule and split (the mesh axis "pp"; the
                                   * micro-batches are grad_accum's) */
    int supernode_ranks;          /* ranks per supernode (contiguous global ranks) where the program will run;
                                   * 0: all in one. FSDP's shard groups that span supernodes gather their
                                   * units into transient slots (parallel/fsdp) */
} hp_compile_opts;

typedef struct {
    char name[24];
    char note[HP_PASS_NOTE]; /* what the pass did */
} hp_pass_log;

/* A pass's run-time state of the rank (FSDP's: hp_fsdp_rt at hp_rank_ctx.fsdp), made by the runtime once
 * the rank's parameter store exists: create(ctx, arg, ...) and destroy(ctx); create NULL: none. arg points
 * into the hp_compiled, so the runtime keeps that in place. */
typedef struct {
    hp_status (*create)(hp_rank_ctx *ctx, const void *arg, const hp_mesh_comm *mc, int rank, float *params,
                        uint16_t *params16, float *slots);
    void (*destroy)(hp_rank_ctx *ctx);
    const void *arg;
} hp_rank_state_hook;

typedef struct {
    hp_graph *global;         /* the model graph, differentiated (owned copy) */
    hp_mesh mesh;
    hp_mesh lmesh;            /* the mesh layouts are decided and lowered on: mesh with a pipeline's "pp" axis
                               * of size 1 (a stage's ranks never split, slice or gather along it: the other
                               * stages run other nodes); mesh itself without one */
    int lrank;                /* rank's place in lmesh (its coordinate on "pp" 0) */
    hp_layout *layouts;       /* [global->nvals]: the plan's layouts (fixed values) */
    unsigned char *fixed;
    hp_propagation prop;
    int rank;
    int supernode_ranks;      /* the compile option's ranks per supernode (0: all in one); the memory model
                               * reads which groups cross supernodes (their collectives stage data) */
    hp_fsdp_plan fsdp;        /* FSDP units and the parameter store layout (fsdp.level 0: none) */
    hp_rank_graph rg;         /* the rank's local graph */
    hp_optim_phase_io optim;  /* local ids of the optimizer phase's inputs (-1 without one) */
    int micro;                /* gradient accumulation's per-micro-batch input (i32 [2]), -1: none */
    int has_optim;
    hp_schedule sched;
    hp_memplan mem;
    hp_holdings hold;         /* who holds which piece of every parameter and state, and where */
    hp_pp_plan pp;            /* the pipeline's stages (pp.axis -1: none) */
    hp_rank_state_hook state; /* the passes' run-time state (FSDP's) */
    hp_pass_log passes[HP_MAX_PASSES];
    int npasses;
} hp_compiled;

/* Compiles `model` (forward graph with g->loss set when training) for `rank`
 * under `plan` (NULL: one rank). The model graph is not changed. */
hp_status hp_compile(hp_compiled *out, const hp_graph *model, const hp_plan *plan, int rank,
                     const hp_compile_opts *o);
void hp_compiled_free(hp_compiled *c);

/* Fixed layouts of g's parameters and inputs from a plan (layouts and fixed
 * are [g->nvals]); errors name the plan rule and the tensor. */
hp_status hp_layouts_from_plan(hp_layout *layouts, unsigned char *fixed, const hp_plan *p, const hp_graph *g);

#endif
