/* bench_ckpt: checkpoint save time of the sharded format (every rank writes
 * its own pieces) against the single format (the pieces gathered into rank
 * 0's process, which writes whole tensors), for GPT-2 on rank threads under
 * TP=N, DP=N or FSDP=N (level 3; its single format is its pieces made whole
 * by rank 0's process), saved alternately in the same process. The model is randomly
 * initialised and trained two steps (B=1, T=64) so the AdamW moments exist.
 *
 *   bench_ckpt DIR small|gpt2-124m tp|dp|fsdp RANKS REPS [save|load]
 *
 * save (the default): prints one line per save and the median of each
 * format. DIR must be on the file system to measure; each save is removed
 * before the next.
 *
 * load: what verifying the checksums costs a load. One checkpoint of each
 * format is saved, then loaded REPS times with verification on and off
 * alternately (which goes first swapped every repetition, after one
 * unmeasured load of each): hp_ckpt_open, hp_dist_ckpt_load of the weights
 * and optimizer state into every rank, hp_ckpt_close. Warm: the files in the
 * page cache (the case where the checksum weighs most); cold: each file
 * dropped from the page cache first (posix_fadvise DONTNEED), so read from
 * the disk. Prints each load, the medians and their ratio, and the checksum
 * alone over the single-format files' bytes (mapped, in memory): its rate
 * and its time against the warm load's. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/rng.h"
#include "core/timing.h"
#include "io/crc32c.h"
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

static double median(double *t, int n) {
    qsort(t, (size_t)n, sizeof(double), cmp_d);
    return t[n / 2];
}

/* Drops the files of dir from the page cache. */
static void drop_cache(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        char *p = hp_fs_join(dir, de->d_name);
        int fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd >= 0) {
            (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
            close(fd);
        }
        free(p);
    }
    closedir(d);
}

/* One load of checkpoint dir into every rank (verify: check the checksums;
 * cold: from the disk); seconds. */
static double time_load(hp_dist_ckpt *ck, const char *dir, int verify, int cold) {
    if (cold) drop_cache(dir);
    double t0 = hp_now();
    hp_ckpt c;
    die(hp_ckpt_open(&c, dir));
    hp_ckpt_set_verify(&c, verify);
    die(hp_dist_ckpt_load(ck, &c, 1));
    hp_ckpt_close(&c);
    return hp_now() - t0;
}

/* The checksum alone over every tensor of the single-format checkpoint dir
 * (mapped; *bytes: how many); seconds. */
static double time_crc(double *bytes, const char *dir) {
    static const char *const files[2] = {"model.safetensors", "optim.safetensors"};
    hp_safetensors *st[2];
    for (int f = 0; f < 2; f++) {
        char *p = hp_fs_join(dir, files[f]);
        die(hp_safetensors_open(&st[f], p));
        free(p);
    }
    double best = 1e30;
    for (int rep = 0; rep < 4; rep++) { /* the first one faults the mapped pages in */
        double t0 = hp_now(), nb = 0;
        uint32_t sink = 0;
        for (int f = 0; f < 2; f++)
            for (int i = 0; i < hp_safetensors_count(st[f]); i++) {
                const hp_safetensors_entry *e = hp_safetensors_entry_at(st[f], i);
                sink ^= hp_crc32c(0, e->data, e->nbytes);
                nb += (double)e->nbytes;
            }
        double t = hp_now() - t0;
        if (sink == 0x12345678u) printf("(checksum %08x)\n", sink); /* keeps the loop */
        if (rep > 0 && t < best) best = t;
        *bytes = nb;
    }
    for (int f = 0; f < 2; f++) hp_safetensors_close(st[f]);
    return best;
}

/* The save benchmark (see the top). */
static void bench_save(hp_dist_ckpt *ck, const char *root, const char *kind, int n, int reps) {
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
            die(hp_dist_ckpt_save(ck, dir, "{\"step\": 2}", 0, NULL));
            double s = hp_now() - t0;
            die(hp_fs_remove_tree(dir));
            if (rep < 0) continue;
            t[fmt][rep] = s;
            printf("%s=%d %-24s rep %d: %.3f s\n", kind, n, names[fmt], rep, s);
        }
    for (int f = 0; f < 2; f++)
        printf("%s=%d %-24s median %.3f s over %d saves\n", kind, n, names[f], median(t[f], reps), reps);
    free(t[0]), free(t[1]);
}

/* The load benchmark (see the top). */
static void bench_load(hp_dist_ckpt *ck, const char *root, const char *kind, int n, int reps) {
    static const char *const fmt_names[2] = {"single", "sharded"};
    char dir[2][1024];
    double single_load_on = 0;
    for (int f = 0; f < 2; f++) {
        snprintf(dir[f], sizeof dir[f], "%s/bench_ckpt_run/%s/step_000002", root, fmt_names[f]);
        hp_dist_ckpt_set_format(ck, f ? HP_CKPT_SHARDED : HP_CKPT_SINGLE, HP_CKPT_FAULT_NONE);
        die(hp_dist_ckpt_save(ck, dir[f], "{\"step\": 2}", 0, NULL));
    }
    for (int cold = 0; cold < 2; cold++)
        for (int f = 0; f < 2; f++) {
            double *t[2] = {calloc((size_t)reps, sizeof(double)), calloc((size_t)reps, sizeof(double))};
            for (int rep = -1; rep < reps; rep++)
                for (int k = 0; k < 2; k++) {
                    int v = (rep & 1) ? 1 - k : k; /* alternate which goes first */
                    double s = time_load(ck, dir[f], v, cold);
                    if (rep < 0) continue;
                    t[v][rep] = s;
                    printf("%s=%d %-7s %s load, checksums %-3s rep %d: %.3f s\n", kind, n, fmt_names[f],
                           cold ? "cold" : "warm", v ? "on" : "off", rep, s);
                }
            double off = median(t[0], reps), on = median(t[1], reps);
            printf("%s=%d %-7s %s load median: checksums off %.3f s, on %.3f s (%+.1f%%) over %d loads each\n", kind,
                   n, fmt_names[f], cold ? "cold" : "warm", off, on, 100.0 * (on - off) / off, reps);
            if (f == 0 && !cold) single_load_on = on;
            free(t[0]), free(t[1]);
        }
    static const char *const ways[3] = {"table-driven", "crc32 instruction, 3 streams", "AVX2 VPCLMULQDQ folding"};
    double bytes = 0, c = time_crc(&bytes, dir[0]);
    printf("checksum alone (CRC-32C, %s): %.2f GB in %.3f s, %.1f GB/s; %.1f%% of the warm single-format load "
           "(%.3f s)\n",
           ways[hp_crc32c_hw()], bytes / 1e9, c, bytes / 1e9 / c, 100.0 * c / single_load_on, single_load_on);
}

int main(int argc, char **argv) {
    if (argc < 6 || (argc > 6 && strcmp(argv[6], "save") && strcmp(argv[6], "load"))) {
        fprintf(stderr, "usage: bench_ckpt DIR small|gpt2-124m tp|dp|fsdp RANKS REPS [save|load]\n");
        return 2;
    }
    int load_mode = argc > 6 && !strcmp(argv[6], "load");
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
    die(hp_dist_world_create(&w, &plan, 600, 0));
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
    if (load_mode) bench_load(ck, root, kind, n, reps);
    else bench_save(ck, root, kind, n, reps);
    char run[1100];
    snprintf(run, sizeof run, "%s/bench_ckpt_run", root);
    die(hp_fs_remove_tree(run));
    hp_dist_ckpt_destroy(ck);
    hp_dist_destroy(d);
    hp_comm_world_destroy(w);
    hp_plan_free(&plan);
    free(ptrs);
    hp_param_store_free(&ps);
    hp_graph_destroy(g);
    return 0;
}
