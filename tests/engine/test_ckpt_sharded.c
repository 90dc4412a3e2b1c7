/* Sharded checkpoints of runs on rank threads (runtime/ckpt_pieces through
 * runtime/dist_ckpt): saved under 1 rank, DP=2, TP=2, DP=2xTP=2, FSDP=4,
 * FSDP=2xTP=2 and ZeRO-1 over DP=2 and loaded under each of them, the
 * weights and AdamW moments come back bit for bit
 * (the single-format checkpoint written after the load is byte-identical to
 * the one the saving run wrote); every distinct piece is written once, by the
 * lowest rank holding it (a DP replica writes nothing); a save that stops
 * before its metadata commit leaves the previous checkpoint as 'latest' and
 * loadable, and its temporary directory is not a checkpoint. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/ckpt.h"
#include "io/fsutil.h"
#include "kernels/kernels.h"
#include "models/gpt2.h"
#include "models/gpt2_plan.h"
#include "optim/optimizer.h"
#include "runtime/dist.h"
#include "runtime/dist_ckpt.h"
#include "testutil.h"

enum { B = 4, T = 8, NPLANS = 7 };
static const struct {
    int dp, tp;       /* 1x1: no plan */
    const char *fsdp; /* the plan's fsdp: line, or NULL */
    int writers;      /* ranks that write a file (a replica writes nothing) */
} k_plans[NPLANS] = {{1, 1, NULL, 1},
                     {2, 1, NULL, 1},
                     {1, 2, NULL, 2},
                     {2, 2, NULL, 2},
                     {4, 1, "shard=dp level=3", 4},
                     {2, 2, "shard=dp level=3", 4},
                     {2, 1, "shard=dp level=1", 2}};

typedef struct {
    hp_graph *g;
    hp_gpt2_io io;
    hp_param_store ps;
} model;

typedef struct {
    hp_plan plan;
    int have_plan;
    hp_comm_world *world;
    hp_dist *d;
    hp_dist_ckpt *ck;
} run;

static hp_optim_config k_optim;

static void model_build(model *m) {
    hp_gpt2_config c = {.L = 2, .NH = 4, .C = 32, .V = 200, .Vp = 256, .maxT = 16};
    CHECK_OK(hp_graph_create(&m->g));
    CHECK_OK(hp_gpt2_build(m->g, &m->io, &c, B, T));
    CHECK_OK(hp_param_store_create(&m->ps, m->g));
    float *ptrs[64];
    for (int i = 0; i < m->ps.n; i++) ptrs[i] = hp_param_ptr(&m->ps, i);
    CHECK_OK(hp_gpt2_init(ptrs, (const char(*)[HP_NAME_LEN])m->ps.name, m->ps.shape, m->ps.n, &c, 11));
}

/* A distinct value for element i of tensor `name` (the moments get these). */
static float pattern(const char *name, size_t i, int salt) {
    unsigned h = (unsigned)salt * 2654435761u;
    for (const char *p = name; *p; p++) h = h * 31u + (unsigned char)*p;
    return (float)sin((double)(h % 1000) + 0.37 * (double)i);
}

/* Every hosted rank's optimizer states: its pieces of whole tensors pattern(name, i, salt). */
static void fill_states(run *r, const model *m, int salt) {
    const hp_graph *g = hp_dist_global(r->d);
    for (int li = 0; li < hp_dist_nranks(r->d); li++) {
        hp_dist_rank *rk = hp_dist_rank_at(r->d, li);
        const hp_graph *lg = rk->c.rg.g;
        for (int v = 0; v < lg->nvals; v++) {
            if (lg->vals[v].kind != HP_V_STATE) continue;
            int gv = hp_graph_find(g, lg->vals[lg->vals[v].state_of].name);
            CHECK(gv >= 0);
            if (gv < 0) continue;
            size_t n = (size_t)hp_shape_numel(&g->vals[gv].shape);
            float *whole = malloc(n * sizeof(float)), *local = malloc(n * sizeof(float));
            for (size_t i = 0; i < n; i++) whole[i] = pattern(lg->vals[v].name, i, salt);
            hp_dist_scatter_value(r->d, rk, gv, local, whole);
            /* under FSDP the state holds the part of the local piece in the rank's shard */
            int64_t lo = 0, nv = hp_shape_numel(&lg->vals[v].shape);
            const hp_fsdp_plan *f = &rk->c.fsdp;
            int k = 0;
            for (int u = 0; u < lg->vals[v].state_of; u++) k += lg->vals[u].kind == HP_V_PARAM;
            if (f->level && f->unit_of[k] >= 0) {
                const hp_fsdp_unit *un = &f->units[f->unit_of[k]];
                int64_t o = (int64_t)(f->offset[k] - un->offset), s = (int64_t)un->shard * f->me;
                lo = (o > s ? o : s) - o;
            }
            memcpy(hp_program_data(rk->prog, v), local + lo, (size_t)nv * sizeof(float));
            free(whole), free(local);
        }
    }
    (void)m;
}

static int run_create(run *r, const model *m, int p) {
    memset(r, 0, sizeof *r);
    int dp = k_plans[p].dp, tp = k_plans[p].tp;
    if (dp * tp > 1) {
        CHECK_OK(hp_plan_gpt2_dp_tp(&r->plan, dp, tp));
        if (k_plans[p].fsdp) CHECK_OK(hp_plan_set_fsdp(&r->plan, k_plans[p].fsdp, "test"));
        r->have_plan = 1;
    }
    CHECK_OK(hp_dist_world_create(&r->world, r->have_plan ? &r->plan : NULL, 60, 0));
    hp_dist_config dc = {.model = m->g, .plan = r->have_plan ? &r->plan : NULL, .world = r->world,
                         .threads_per_rank = 1, .compile = {.train = 1, .optim = &k_optim, .max_norm = 1}};
    CHECK_OK(hp_dist_create(&r->d, &dc));
    if (!r->d) return 0;
    CHECK_OK(hp_dist_scatter_params(r->d, &m->ps));
    CHECK_OK(hp_dist_ckpt_create(&r->ck, r->d));
    return r->ck != NULL;
}

static void run_free(run *r) {
    hp_dist_ckpt_destroy(r->ck);
    hp_dist_destroy(r->d);
    hp_comm_world_destroy(r->world);
    if (r->have_plan) hp_plan_free(&r->plan);
}

static char *path2(const char *a, const char *b) {
    static char buf[4][1024];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", a, b);
    return buf[k];
}

/* 1 when files a and b hold the same bytes. */
static int same_file(const char *a, const char *b) {
    char *x = NULL, *y = NULL;
    size_t nx = 0, ny = 0;
    CHECK_OK(hp_fs_read_all(&x, &nx, a));
    CHECK_OK(hp_fs_read_all(&y, &ny, b));
    int same = x && y && nx == ny && !memcmp(x, y, nx);
    free(x), free(y);
    return same;
}

static void save(run *r, const char *dir, hp_ckpt_format f) {
    hp_dist_ckpt_set_format(r->ck, f, HP_CKPT_FAULT_NONE);
    CHECK_OK(hp_dist_ckpt_save(r->ck, dir, "{\"step\": 1}", 0, NULL));
}

int main(void) {
    hp_kernels_init();
    hp_optim_config_default(&k_optim);
    char root[] = "/tmp/hp_ckpt_sharded_XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    model m;
    model_build(&m);

    /* every plan saves its pieces (sharded) and, for reference, whole tensors (single) */
    char sh[NPLANS][256], one[NPLANS][256];
    for (int p = 0; p < NPLANS; p++) {
        run r;
        if (!run_create(&r, &m, p)) return hp_test_finish("test_ckpt_sharded");
        fill_states(&r, &m, p + 1);
        snprintf(sh[p], sizeof sh[p], "%s/sharded%d/step_000001", root, p);
        snprintf(one[p], sizeof one[p], "%s/single%d/step_000001", root, p);
        save(&r, sh[p], HP_CKPT_SHARDED);
        save(&r, one[p], HP_CKPT_SINGLE);
        CHECK(!hp_fs_exists(path2(sh[p], HP_CKPT_MODEL)) && hp_fs_exists(path2(sh[p], HP_CKPT_INDEX)));
        /* replicas write nothing: DP=2 only rank 0, TP=2 ranks 0 and 1, DP=2xTP=2 the two TP ranks of dp 0 */
        hp_ckpt ck;
        CHECK_OK(hp_ckpt_open(&ck, sh[p]));
        if (ck.shards) {
            const hp_ckpt_index *ix = hp_ckpt_shards_index(ck.shards);
            int want_files = k_plans[p].writers;
            CHECKF(ix->nfiles == want_files, "plan %d: %d data files, expected %d", p, ix->nfiles, want_files);
            for (int f = 0; f < ix->nfiles; f++) {
                char name[32];
                snprintf(name, sizeof name, "rank%d.bin", f);
                CHECKF(!strcmp(ix->files[f].name, name), "plan %d: file %d is %s", p, f, ix->files[f].name);
            }
        }
        hp_ckpt_close(&ck);
        run_free(&r);
    }

    /* every saved checkpoint loaded under every plan, then written whole: the saving run's bytes */
    for (int q = 0; q < NPLANS; q++) {
        run r;
        if (!run_create(&r, &m, q)) return hp_test_finish("test_ckpt_sharded");
        for (int p = 0; p < NPLANS; p++)
            for (int fmt = 0; fmt < 2; fmt++) {
                fill_states(&r, &m, 100); /* something else before the load */
                hp_ckpt ck;
                CHECK_OK(hp_ckpt_open(&ck, fmt ? sh[p] : one[p]));
                CHECK_OK(hp_dist_ckpt_load(r.ck, &ck, 1));
                hp_ckpt_close(&ck);
                char out[256];
                snprintf(out, sizeof out, "%s/reload_%d_%d_%d/step_000001", root, p, q, fmt);
                save(&r, out, HP_CKPT_SINGLE);
                CHECKF(same_file(path2(out, HP_CKPT_MODEL), path2(one[p], HP_CKPT_MODEL)),
                       "weights saved under plan %d (%s), loaded under plan %d, differ", p, fmt ? "sharded" : "single", q);
                CHECKF(same_file(path2(out, HP_CKPT_OPTIM), path2(one[p], HP_CKPT_OPTIM)),
                       "optimizer state saved under plan %d (%s), loaded under plan %d, differs", p,
                       fmt ? "sharded" : "single", q);
            }
        run_free(&r);
    }

    /* a crash before the metadata commit: the previous checkpoint stays 'latest' and loadable */
    {
        run r;
        if (!run_create(&r, &m, 5)) return hp_test_finish("test_ckpt_sharded");
        fill_states(&r, &m, 4);
        char runs[128], good[256], bad[256];
        snprintf(runs, sizeof runs, "%s/crash", root);
        snprintf(good, sizeof good, "%s/step_000001", runs);
        snprintf(bad, sizeof bad, "%s/step_000002", runs);
        save(&r, good, HP_CKPT_SHARDED);
        hp_dist_ckpt_set_format(r.ck, HP_CKPT_SHARDED, HP_CKPT_FAULT_BEFORE_COMMIT);
        fill_states(&r, &m, 9);
        CHECK_ERR(hp_dist_ckpt_save(r.ck, bad, "{\"step\": 2}", 0, NULL), "before the commit");
        CHECK(!hp_fs_exists(bad));
        char *latest = NULL;
        CHECK_OK(hp_ckpt_get_latest(&latest, runs));
        CHECK(latest && !strcmp(latest, good));
        free(latest);
        /* the half-written save: a temporary directory with the data files and no pieces.json */
        int ntmp = 0;
        char tmpdir[256] = "";
        FILE *ls = popen("ls -d /tmp/hp_ckpt_sharded_*/crash/step_000002.tmp-* 2>/dev/null", "r");
        CHECK(ls != NULL);
        if (ls) {
            char line[256];
            while (fgets(line, sizeof line, ls)) {
                line[strcspn(line, "\n")] = 0;
                if (!strncmp(line, root, strlen(root))) snprintf(tmpdir, sizeof tmpdir, "%s", line), ntmp++;
            }
            pclose(ls);
        }
        CHECKF(ntmp == 1, "%d temporary directories", ntmp);
        if (ntmp == 1) {
            CHECK(hp_fs_exists(path2(tmpdir, "rank0.bin")) && !hp_fs_exists(path2(tmpdir, HP_CKPT_INDEX)));
            hp_ckpt bk;
            CHECK_ERR(hp_ckpt_open(&bk, tmpdir), "not a complete checkpoint");
        }
        /* the good one loads to what it saved (salt 4), not the failed save's states */
        hp_ckpt ck;
        CHECK_OK(hp_ckpt_open(&ck, good));
        CHECK_OK(hp_dist_ckpt_load(r.ck, &ck, 1));
        hp_ckpt_close(&ck);
        char out[256], ref[256];
        snprintf(out, sizeof out, "%s/crash_reload", root);
        snprintf(ref, sizeof ref, "%s/crash_ref", root);
        save(&r, out, HP_CKPT_SINGLE);
        fill_states(&r, &m, 4);
        save(&r, ref, HP_CKPT_SINGLE);
        CHECK(same_file(path2(out, HP_CKPT_OPTIM), path2(ref, HP_CKPT_OPTIM)));
        run_free(&r);
    }
    CHECK_OK(hp_fs_remove_tree(root));
    hp_param_store_free(&m.ps);
    hp_graph_destroy(m.g);
    return hp_test_finish("test_ckpt_sharded");
}
