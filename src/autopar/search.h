/* autopar/search: the strategy search of issue 28 — the ways to run one model
 * on `world` ranks that the project builds, each priced by the caller (the
 * cost model on the candidate's compiled programs: autopar/cost, driven from
 * api/plan_auto), pruned by memory, ranked by predicted step time.
 *
 * The space: every mesh factorisation world = pp x dp x ep x tp (pp at most
 * the blocks, tp dividing the heads, ep the experts, the batch over dp x ep);
 * the data-parallel form over dp (replicated, ZeRO-1, ZeRO-2, FSDP over the
 * whole dp group, HSDP with each shard-group size between); the pipeline's
 * schedule (GPipe, 1F1B, ZB-H1) and micro-batches (pp, 2 pp, 4 pp, ... up to
 * max_micro; the global batch fixed, split into them); without a pipeline, the
 * fewest micro-batches that fit; with micro-batches under ZeRO-2, FSDP or HSDP,
 * the gradients reduced every micro-batch or once at the last; the remat
 * policy (none, selective, full: the first that fits — recomputation only
 * adds time); with HP_SEARCH_DTYPE, fp32 and bf16 compute (else the base's). The pipeline's stage
 * partition is not searched: compile cuts the blocks at the min-max partition
 * of their forward FLOPs (parallel/pp_stages, exact).
 *
 * Method: exhaustive over that space in a fixed order — small enough at the
 * world sizes this project builds (8 ranks: a few hundred candidates) and at
 * thousands of ranks (the factorisations of a world size are few); every
 * candidate that compiles and fits is priced. The result does not depend on
 * anything but the inputs (no timing, no randomness): ties keep the order. */
#ifndef HP_AUTOPAR_SEARCH_H
#define HP_AUTOPAR_SEARCH_H

#include <stddef.h>

#include "core/status.h"

typedef enum { HP_DPF_REPLICATE, HP_DPF_ZERO1, HP_DPF_ZERO2, HP_DPF_FSDP, HP_DPF_HSDP, HP_DPF_N } hp_dp_form;

typedef struct {
    int pp, dp, ep, tp;
    hp_dp_form form;
    int shard;   /* HSDP: the shard group's size (dp = replicas x shard); FSDP: dp; else 0 */
    int micro;   /* micro-batches per step (the global batch split into them) */
    int batch;   /* sequences per micro-batch (the space's batch / micro) */
    int sched;   /* the pipeline's schedule (parallel/pp_sched.h hp_pp_kind) when pp > 1; else 0 */
    int remat;   /* 0 none, 1 selective, 2 full */
    int comm_last; /* ZeRO-2, FSDP, HSDP with micro-batches: the gradients reduced once, at the last one
                    * (--grad-accum-comm last), instead of every micro-batch's as it completes */
    int bf16;      /* the compute dtype: 1 bf16 (--dtype bf16), 0 fp32 */
} hp_search_cand;

/* Dimensions left out of the space (hp_search_space.skip). */
enum {
    HP_SEARCH_NO_PP = 1, HP_SEARCH_NO_TP = 2, HP_SEARCH_NO_EP = 4, HP_SEARCH_NO_SHARD = 8, HP_SEARCH_NO_REMAT = 16,
    HP_SEARCH_NO_HSDP = 32, HP_SEARCH_DTYPE = 64 /* also bf16 compute (the base's dtype otherwise) */
};

typedef struct {
    int world;     /* ranks */
    int layers;    /* transformer blocks (pp <= layers) */
    int heads;     /* attention heads (tp divides them) */
    int kv_heads;  /* grouped-query heads (tp divides them too; 0: heads) */
    int experts;   /* a MoE model's routed experts (ep divides them); 0: dense (ep 1) */
    int batch;     /* sequences per optimizer step, all micro-batches together */
    int max_micro; /* most micro-batches tried (0: 16) */
    int bf16;      /* the base's dtype (1: bf16); with HP_SEARCH_DTYPE both are tried */
    unsigned skip; /* HP_SEARCH_NO_* */
} hp_search_space;

/* The split of a predicted step (seconds). */
enum { HP_SEARCH_COMPUTE, HP_SEARCH_EXPOSED_INTRA, HP_SEARCH_EXPOSED_INTER, HP_SEARCH_BUBBLE, HP_SEARCH_OPTIMIZER,
       HP_SEARCH_NPARTS };

typedef struct {
    int ok;                       /* 1: compiled, fits and priced */
    int fits;                     /* 0: compiled but above the memory (memory_bytes says by how much) */
    double step_s;
    double part[HP_SEARCH_NPARTS];
    double memory_bytes;          /* the most any rank needs */
    char why[200];                /* !ok: why (the compile's refusal, or the memory against the limit) */
} hp_search_eval;

/* Prices candidate c into *out (ok 0 with why for one that cannot run); an error stops the search. */
typedef hp_status (*hp_search_eval_fn)(hp_search_eval *out, const hp_search_cand *c, void *ctx);

typedef struct {
    hp_search_cand c;
    hp_search_eval e;
} hp_search_row;

typedef struct {
    hp_search_row *rows; /* every candidate evaluated: those ok by step time (ties in search order), then the
                          * rest in search order */
    int nrows, nok;
    int nmeshes;         /* mesh factorisations tried */
    int nskipped;        /* candidates not evaluated: more remat or micro-batches than the first that fits */
} hp_search_result;

/* Runs the search; errors name the space's field at fault. */
hp_status hp_search_run(hp_search_result *out, const hp_search_space *s, hp_search_eval_fn fn, void *ctx);
void hp_search_free(hp_search_result *r);

/* The candidate as `hyperpar train` flags: "--batch 4 --pp 2 --dp 2 --tp 2 --zero 2 --grad-accum 4
 * --grad-accum-comm last --pp-schedule 1f1b --remat selective --dtype bf16" (what is 1 or none is left out;
 * FSDP as --fsdp N, HSDP as --hsdp R,S); with_plan 0: only what train needs beside the candidate's plan file
 * (no mesh, no data-parallel form). Like snprintf. */
int hp_search_cand_flags(char *buf, size_t n, const hp_search_cand *c, int with_plan);
/* The data-parallel form's name: "replicated", "zero-1", "zero-2", "fsdp", "hsdp". */
const char *hp_dp_form_name(hp_dp_form f);

#endif
