/* The thread tier: one supernode of 1, 2, 3, 4 and 8 rank-threads runs the
 * whole grid (harness.h: every collective x sizes {0, 1, 7, uneven, 1 MiB,
 * 64 MiB} x {fp32, bf16} against the plain reference, random reductions bit-
 * identical run to run), fused and asynchronous calls, supernode-shared
 * outputs (in-place shared all-gather included), a reordered subgroup, and
 * several calls in flight per rank (concur.h: on 1 x 2 and 1 x 4 two groups
 * whose calls only complete when they progress concurrently).
 * HP_TEST_BIG=0 leaves out the 64 MiB cell. Bad options and groups get
 * one-line errors naming the field. */
#include "concur.h"

static hp_comm_world *make(int R) {
    hp_comm_opts o;
    hp_comm_opts_default(&o);
    o.ranks_per_supernode = R;
    o.mpi = 0;
    o.timeout_s = 120;
    hp_comm_world *w = NULL;
    CHECK_OK(hp_comm_world_create(&w, &o));
    return w;
}

int main(void) {
    int cells = hx_big_enabled() ? HX_NCELLS : HX_CELL_64MIB;
    hx_pool pool;
    hx_pool_init(&pool, 8, hx_cap_bytes(cells, 8));
    const int Rs[] = {1, 2, 3, 4, 8};
    for (int k = 0; k < 5; k++) {
        int R = Rs[k];
        hp_comm_world *w = make(R);
        if (!w) continue;
        CHECK(hp_comm_world_size(w) == R && hp_comm_supernodes(w) == 1);
        CHECK(hp_comm_world_rank(w, 0) != NULL && hp_comm_world_rank(w, R) == NULL);
        char cfg[64];
        snprintf(cfg, sizeof cfg, "threads 1 x %d, world", R);
        hx_grid(w, hp_comm_world_group(w), &pool, cells, 1, cfg);
        snprintf(cfg, sizeof cfg, "threads 1 x %d", R);
        hx_run_shared(w, 1001, cfg);
        hx_concurrency(w, cfg);
        if (R >= 3) { /* a subgroup in another order */
            int ranks[3] = {R - 1, 0, 1};
            hp_comm_group *g;
            CHECK_OK(hp_comm_group_create(&g, w, ranks, 3, "rev"));
            snprintf(cfg, sizeof cfg, "threads 1 x %d, group {%d,0,1}", R, R - 1);
            hx_grid(w, g, &pool, HX_CELL_1MIB, 0, cfg);
            hp_comm_group_destroy(g);
        }
        hp_comm_world_destroy(w);
    }
    if (cells < HX_NCELLS) printf("comm grid: 64MiB cell skipped (HP_TEST_BIG=0)\n");
    hx_pool_free(&pool);
    /* bad input: one-line errors naming the field */
    hp_comm_opts o;
    hp_comm_opts_default(&o);
    o.ranks_per_supernode = 0;
    hp_comm_world *bad;
    CHECK_ERR(hp_comm_world_create(&bad, &o), "ranks_per_supernode");
    int used = 0;
    hp_comm_opts_default(&o);
    CHECK_ERR(hp_comm_opts_parse(&o, "--inter-bw", "fast", &used), "--inter-bw");
    CHECK_OK(hp_comm_opts_parse(&o, "--inter-bw", "1.5", &used));
    CHECK(used == 1 && o.inter_bw_gbps == 1.5);
    hp_comm_world *w = make(2);
    if (w) {
        int dup[2] = {1, 1};
        hp_comm_group *g;
        CHECK_ERR(hp_comm_group_create(&g, w, dup, 2, "dup"), "appears twice");
        int out[1] = {5};
        CHECK_ERR(hp_comm_group_create(&g, w, out, 1, "out"), "outside the world");
        hp_comm_world_destroy(w);
    }
    return hp_test_finish("test_comm_threads");
}
