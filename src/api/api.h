/* api/api: what the public handles of include/hyperpar/hyperpar.h hold — the
 * internal objects each wraps — shared by the api room's files, which
 * convert public structs to internal ones and call the library. */
#ifndef HP_API_API_H
#define HP_API_API_H

#include <hyperpar/hyperpar.h>

#include "comm/comm.h"
#include "core/graph.h"
#include "core/pool.h"
#include "io/llmc.h"
#include "layout/plan.h"
#include "models/gpt2.h"
#include "optim/optimizer.h"
#include "parallel/pp_pass.h"
#include "parallel/remat.h"
#include "runtime/dist.h"
#include "runtime/params.h"

struct hp_model {
    hp_gpt2_config cfg; /* checked (Vp filled) */
    int B, T;
    hp_graph *g;        /* the forward graph, loss set */
    hp_gpt2_io io;
    int custom;         /* written by the caller (hp_model_from_graph): cfg holds V, Vp (= V) and maxT (= T), and
                         * L = NH = C = 1 as placeholders state.json's checks accept */
};

struct hp_shard_plan {
    hp_plan plan;
    char mesh[128];
    char *text; /* the file form (owned) */
};

struct hp_world {
    hp_comm_world *w;
};

/* A whole GPT-2's parameters for shape c (its graph for 1 x 1 tokens, the
 * store, a pointer per tensor): what llm.c import and export copy through. */
typedef struct {
    hp_graph *g;
    hp_param_store ps;
    float **ptrs; /* [ps.n] */
} hp_api_store;
hp_status hp_api_store_create(hp_api_store *s, const hp_gpt2_config *c);
void hp_api_store_free(hp_api_store *s);

/* The weights of llm.c file `path` in llm.c order (*flat malloc'd, freed on
 * error) and its header; an error naming the file when its shape is not c's. */
hp_status hp_api_llmc_load(float **flat, hp_llmc_header *h, const char *path, const hp_gpt2_config *c);
/* A Hugging Face directory's weights into the model's parameters (api/import_hf: names[i]'s shapes[i] at
 * ptrs[i]), the family and shape hp_hf_model_config read. */
hp_status hp_hf_load(float *const *ptrs, const char (*names)[HP_NAME_LEN], const hp_shape *shapes, int n,
                     const char *dir, const char *family, const hp_model_config *c);

/* The llm.c version (io/llmc) that writes dtype; an error naming path for a
 * value outside hp_llmc_dtype. */
hp_status hp_api_llmc_version(int *version, hp_llmc_dtype dtype, const char *path);

/* A copy of s (NULL stays NULL); *out is malloc'd. */
hp_status hp_api_strdup(char **out, const char *s);
/* A pipeline's compile options from the settings' text: schedule "gpipe" | "1f1b" | "zb-h1" | "interleaved"
 * (NULL: 1f1b; chunks: its model chunks per stage, 0: 2),
 * split "balanced" | "even" | blocks per stage "3,5" (NULL: balanced); errors name the setting. */
hp_status hp_api_pp_opts(hp_pp_opts *out, const char *schedule, const char *split, int chunks);
/* Rematerialisation's compile options: policy "none" | "selective" | "full" (NULL: none), save the kept
 * operators ("linear,attention"; NULL or "": linear); errors name the setting. */
hp_status hp_api_remat_opts(hp_remat_opts *out, const char *policy, const char *save);
/* The schedule's HP_EP_OVERLAP_* from a config's overlap (0: everything blocks) and ep_overlap (-1 off, 0 auto,
 * 1 always). */
int hp_api_ep_overlap(int overlap, int ep_overlap);
/* A plan file's 'pipeline:' line (schedule=, split=, chunks=: it replaces the run's settings) and 'remat:' line
 * (the policy, then save=: where the run's --remat is none); errors name the line. */
hp_status hp_api_plan_lines(hp_pp_opts *pp, hp_remat_opts *rm, const hp_plan *plan);

/* api/bench_peak: the FP32 FMA peak (GFLOP/s) on `threads` threads, the best
 * of `rounds` measurements of milliseconds each, pause_ms apart
 * (hp_bench_fma_peak: 8 rounds over about a second). */
hp_status hp_api_fma_peak(double *gflops, int threads, int rounds, long pause_ms);
/* The instruction set the FMA peak runs ("avx512", "avx2+fma", "scalar"; static). */
void hp_bench_fma_isa(const char **isa);
/* The best rate (GFLOP/s) of `task` run on every thread of a pool of
 * `threads`: `rounds` rounds of `bursts` runs each, pause_ms between rounds;
 * after a run, flops[0 .. threads) hold each thread's FLOPs (the task writes
 * its slot of ctx). The FMA and bf16 peaks are measured through it. */
hp_status hp_api_pool_peak(double *gflops, int threads, hp_pool_fn task, void *ctx, const double *flops, int rounds,
                           int bursts, long pause_ms);

/* api/bench_parallel: medians over `steps` timed training steps (after 2
 * untimed) of GPT-2 under plan (NULL: one rank) on world w, from rank 0: the
 * step, kernels, exposed collectives, optimizer, the rest, and the time its
 * collectives ran (busy_s; hidden = busy - exposed); memory_bytes: rank 0's
 * program (as `hyperpar plan` predicts it); dtype: the compute dtype (HP_BF16: train --dtype bf16). */
typedef struct {
    double step_s, compute_s, comm_s, optimizer_s, other_s, busy_s, memory_bytes;
    double wait_s; /* rank 0's thread blocked on collectives in the forward and backward (hp_comm_rank_wait_ns):
                    * comm_s less the starts and copies its communicating steps do */
    /* rank 0's optimizer phase by node (medians): distributed Muon's packing and
     * collectives to the owners (gather_s: muon_pack, muon_spread and the
     * collectives before a group's muon_orth), Newton-Schulz (ns_s: muon_orth),
     * the collectives after it (return_s), muon_apply (update_s), and the rest
     * (opt_rest_s: AdamW's updates, the norms, whole-matrix Muon); opt_comm_s:
     * every communicating node of the phase (gather's and return's
     * collectives, the norm's all-reduce) */
    double gather_s, ns_s, return_s, update_s, opt_rest_s, opt_comm_s;
} hp_api_bench_out;
/* oc: the optimizer (NULL: AdamW's defaults). hp_api_bench_fsdp: the same
 * on hp_bench_fsdp_row's plan, mesh and emulated supernodes (api/bench_fsdp). */
/* GPT-2 initialisation of a whole model (graph g), scattered to d's ranks (the benchmarks' start). */
hp_status hp_api_bench_init_params(hp_dist *d, const hp_graph *g, const hp_gpt2_config *m);
hp_status hp_api_bench_plan(hp_api_bench_out *out, const hp_gpt2_config *mc, int B, int T, const hp_plan *plan,
                            hp_comm_world *w, int threads, int steps, int overlap, hp_dtype dtype,
                            const hp_optim_config *oc);
hp_status hp_api_bench_fsdp(hp_api_bench_out *o, const hp_bench_fsdp_config *cfg, const hp_optim_config *oc);

#endif
