/* bench_ckpt: checkpoint save time of the sharded format (every rank writes
 * its own pieces) against the single format (the pieces gathered into rank
 * 0's process, which writes whole tensors), for GPT-2 on rank threads under
 * TP=N, DP=N or FSDP=N (level 3; its single format is its pieces made whole
 * by rank 0's process), saved alternately in the same process. The model is randomly
 * initialised and trained two steps (B=1, T=64) so the AdamW moments exist.
 *
 *   bench_ckpt DIR small|gpt2-124m tp|dp|fsdp RANKS REPS
 *
 * Prints one line per save and the median of each format. DIR must be on the
 * file system to measure; each save is removed before the next. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/timing.h"
#include "io/fsutil.h"
#include "kernels/kernels.h"
#include "models/gpt2.h"
#include "models/gpt2_plan.h"
#include "optim/optimizer.h"
#include "optim/phase.h"
#include "runtime/dist.h"
#include "runtime/dist_ckpt.h"

static void die(hp_status st) {
    if (!st) return;
    fprintf(stderr, "bench_ckpt: %s\n", hp_status_msg(st));
    exit(1);
}

typedef struct {
    const hp_gpt2_io *io;
    const hp_optim_config *oc;
    const int32_t *tok, *tgt;
    int step;
} step_ctx;

static hp_status rank_step(hp_dist_rank *r, void *c_) {
    step_ctx *c = c_;
    (void)c;
    hp_optim_phase_lrs(hp_program_data(r->prog, r->c.optim.lr), c->oc, 1e-4f);
    *(int32_t *)hp_program_data(r->prog, r->c.optim.step) = c->step;
    for (int ph = 0; ph < HP_NPHASES; ph++) HP_TRY(hp_program_run(r->prog, (hp_phase)ph));
    return HP_OK;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: bench_ckpt DIR small|gpt2-124m tp|dp|fsdp RANKS REPS\n");
        return 2;
    }
    const char *root = argv[1], *cfg = argv[2], *kind = argv[3];
    int n = atoi(argv[4]), reps = atoi(argv[5]);
    hp_gpt2_config m = {2, 4, 64, 256, 0, 128};
    if (!strcmp(cfg, "gpt2-124m")) m = (hp_gpt2_config){12, 12, 768, 50257, 0, 1024};
    if (n < 1 || reps < 1 || (strcmp(kind, "tp") && strcmp(kind, "dp") && strcmp(kind, "fsdp"))) return 2;
    enum { B = 1, T = 64 };
    die(hp_gpt2_config_check(&m));
    hp_kernels_init();
    hp_graph *g;
    hp_gpt2_io io;
    die(hp_graph_create(&g));
    die(hp_gpt2_build(g, &io, &m, B, T));
    hp_param_store ps;
    die(hp_param_store_create(&ps, g));
    float **ptrs = malloc(sizeof(float *) * (size_t)ps.n);
    for (int i = 0; i < ps.n; i++) ptrs[i] = hp_param_ptr(&ps, i);
    die(hp_gpt2_init(ptrs, (const char(*)[HP_NAME_LEN])ps.name, ps.shape, ps.n, &m, 1));
    hp_plan plan;
    die(hp_plan_gpt2_dp_tp(&plan, kind[0] == 't' ? 1 : n, kind[0] == 't' ? n : 1));
    if (kind[0] == 'f') die(hp_plan_set_fsdp(&plan, "shard=dp level=3", "bench_ckpt"));
    hp_comm_world *w;
    die(hp_dist_world_create(&w, &plan, 600));
    hp_optim_config oc;
    hp_optim_config_default(&oc);
    hp_dist_config dc = {.model = g, .plan = &plan, .world = w, .threads_per_rank = 1,
                         .compile = {.train = 1, .optim = &oc, .max_norm = 1}};
    hp_dist *d;
    die(hp_dist_create(&d, &dc));
    die(hp_dist_scatter_params(d, &ps));
    int32_t tok[B * T], tgt[B * T];
    hp_rng rng;
    hp_rng_seed(&rng, 5);
    for (int i = 0; i < B * T; i++) {
        tok[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)m.V);
        tgt[i] = (int32_t)(hp_rng_next(&rng) % (uint64_t)m.V);
    }
    for (int i = 0; i < hp_dist_nranks(d); i++) {
        hp_dist_rank *r = hp_dist_rank_at(d, i);
        hp_dist_scatter_value(d, r, io.tokens, hp_program_data(r->prog, r->c.rg.map[io.tokens]), tok);
        hp_dist_scatter_value(d, r, io.targets, hp_program_data(r->prog, r->c.rg.map[io.targets]), tgt);
    }
    step_ctx sc = {&io, &oc, tok, tgt, 1};
    for (sc.step = 1; sc.step <= 2; sc.step++) die(hp_dist_run(d, rank_step, &sc));
    hp_dist_ckpt *ck;
    die(hp_dist_ckpt_create(&ck, d));
    double *t[2];
    t[0] = calloc((size_t)reps, sizeof(double)), t[1] = calloc((size_t)reps, sizeof(double));
    static const char *const names[2] = {"single (rank-0 gather)", "sharded"};
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/bench_ckpt_run/step_000002", root);
    for (int rep = -1; rep < reps; rep++) /* rep -1: warm-up of both (first-save allocations, page cache) */
        for (int f = 0; f < 2; f++) {
            int fmt = (rep & 1) ? 1 - f : f; /* alternate which goes first */
            hp_dist_ckpt_set_format(ck, fmt ? HP_CKPT_SHARDED : HP_CKPT_SINGLE, HP_CKPT_FAULT_NONE);
            double t0 = hp_now();
            die(hp_dist_ckpt_save(ck, dir, "{\"step\": 2}", 0));
            double s = hp_now() - t0;
            die(hp_fs_remove_tree(dir));
            if (rep < 0) continue;
            t[fmt][rep] = s;
            printf("%s=%d %-24s rep %d: %.3f s\n", kind, n, names[fmt], rep, s);
        }
    for (int f = 0; f < 2; f++) {
        qsort(t[f], (size_t)reps, sizeof(double), cmp_d);
        printf("%s=%d %-24s median %.3f s over %d saves\n", kind, n, names[f], t[f][reps / 2], reps);
    }
    char run[1100];
    snprintf(run, sizeof run, "%s/bench_ckpt_run", root);
    die(hp_fs_remove_tree(run));
    hp_dist_ckpt_destroy(ck);
    hp_dist_destroy(d);
    hp_comm_world_destroy(w);
    hp_plan_free(&plan);
    free(t[0]), free(t[1]), free(ptrs);
    hp_param_store_free(&ps);
    hp_graph_destroy(g);
    return 0;
}
