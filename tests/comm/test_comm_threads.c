/* The thread tier: one supernode of 1, 2, 3, 4 and 8 rank-threads runs every
 * collective (fp32 and bf16; 0, 1, 7 elements, uneven and empty shards,
 * 1 MiB; in place; fused; asynchronous) against a plain reference, on the
 * world group and on a reordered subgroup. 64 MiB runs with 2 ranks. */
#include "harness.h"

static hp_comm_world *make(int R) {
    hp_comm_opts o;
    hp_comm_opts_default(&o);
    o.ranks_per_supernode = R;
    o.mpi = 0;
    o.timeout_s = 60;
    hp_comm_world *w = NULL;
    CHECK_OK(hp_comm_world_create(&w, &o));
    return w;
}

int main(void) {
    const int Rs[] = {1, 2, 3, 4, 8};
    for (int k = 0; k < 5; k++) {
        int R = Rs[k];
        hp_comm_world *w = make(R);
        if (!w) continue;
        CHECK(hp_comm_world_size(w) == R && hp_comm_supernodes(w) == 1);
        CHECK(hp_comm_world_rank(w, 0) != NULL && hp_comm_world_rank(w, R) == NULL);
        int f = hx_run(w, hp_comm_world_group(w), (1 << 20) / 4 / R, 0);
        if (f) fprintf(stderr, "R=%d world group: %d failures\n", R, f);
        hp_test_failures += f;
        f = hx_run_shared(w, 1001);
        if (f) fprintf(stderr, "R=%d shared output: %d failures\n", R, f);
        hp_test_failures += f;
        if (R >= 3) { /* a subgroup in reverse order */
            int ranks[3] = {R - 1, 0, 1};
            hp_comm_group *g;
            CHECK_OK(hp_comm_group_create(&g, w, ranks, 3, "rev"));
            f = hx_run(w, g, 1000, 1);
            if (f) fprintf(stderr, "R=%d subgroup: %d failures\n", R, f);
            hp_test_failures += f;
            hp_comm_group_destroy(g);
        }
        hp_comm_world_destroy(w);
    }
    /* 64 MiB per tensor with two ranks (the all-gather output) */
    hp_comm_world *w = make(2);
    if (w) {
        int f = hx_run(w, hp_comm_world_group(w), (64 << 20) / 4 / 2, 1);
        hp_test_failures += f;
        hp_comm_world_destroy(w);
    }
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
    w = make(2);
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
