/* The MPI tier: run under mpirun (tests.cmake: 2 processes x 1 rank and
 * 2 x 2 ranks) the whole grid of harness.h (every collective x sizes {0, 1, 7,
 * uneven, 1 MiB, 64 MiB} x {fp32, bf16}; 64 MiB unless HP_TEST_BIG=0) runs
 * across processes and threads against the plain reference, then shared
 * outputs, a reordered group and several calls in flight per rank
 * (concur.h: 2 x 1, and 2 x 2 with the columns across the processes). Run plainly (no mpirun) it is one supernode
 * and touches no MPI.
 *   test_comm_mpi [--ranks R] [--cells K] [--hang]   (--cells: the first K size cells)
 * --hang: supernode 1 never enters the collective (it sleeps 600 s); supernode 0
 * must then destroy its world without waiting for it (the job is aborted), and fail with
 * the timeout error naming the missing rank and exit non-zero. */
#include <unistd.h>

#include "concur.h"

int main(int argc, char **argv) {
    hp_comm_opts o;
    hp_comm_opts_default(&o);
    o.ranks_per_supernode = 2;
    o.timeout_s = 120;
    int hang = 0;
    int cells = hx_big_enabled() ? HX_NCELLS : HX_CELL_64MIB;
    for (int i = 1; i < argc; i++) {
        int used = 0;
        if (!strcmp(argv[i], "--hang")) {
            hang = 1;
            continue;
        }
        if (!strcmp(argv[i], "--cells") && i + 1 < argc) {
            int k = atoi(argv[++i]);
            if (k < 1 || k > HX_NCELLS) {
                fprintf(stderr, "test_comm_mpi: --cells: '%s' is not in [1, %d]\n", argv[i], HX_NCELLS);
                return 2;
            }
            if (k < cells) cells = k;
            continue;
        }
        hp_status st = hp_comm_opts_parse(&o, argv[i], i + 1 < argc ? argv[i + 1] : NULL, &used);
        if (st || !used) {
            fprintf(stderr, "test_comm_mpi: bad argument '%s': %s\n", argv[i], st ? hp_status_msg(st) : "unknown");
            hp_status_free(st);
            return 2;
        }
        i++;
    }
    if (hang) o.timeout_s = 0.5;
    hp_comm_world *w;
    hp_status st = hp_comm_world_create(&w, &o);
    if (st) {
        fprintf(stderr, "test_comm_mpi: %s\n", hp_status_msg(st));
        hp_status_free(st);
        return 1;
    }
    int first, count;
    hp_comm_hosted_ranks(w, &first, &count);
    int S = hp_comm_supernodes(w), n = hp_comm_world_size(w);
    if (hang) {
        if (first > 0) {
            sleep(600); /* stops answering (like a stopped process); killed when the job is aborted */
            return 0;
        }
        hp_comm_rank *r = hp_comm_world_rank(w, 0);
        float x[4] = {1, 2, 3, 4};
        st = count == 1 ? hp_comm_all_reduce(r, hp_comm_world_group(w), x, x, 4, HP_F32, HP_COMM_SUM) : HP_OK;
        if (st) {
            printf("comm timeout detected: %s\n", hp_status_msg(st));
            fflush(stdout);
            hp_status_free(st);
            /* what a program does next: destroy the world. It must end the job
             * (MPI_Abort), not finalize: finalizing would wait for the silent
             * peer's 600 s, past this test's timeout. */
            hp_comm_world_destroy(w);
            printf("comm world destroy returned\n");
            return 3;
        }
        printf("comm timeout NOT detected\n");
        return 1;
    }
    char name[96];
    snprintf(name, sizeof name, "%s %d x %d, world", hp_comm_uses_mpi(w) ? "MPI" : "threads", S, count);
    hx_pool pool;
    hx_pool_init(&pool, count, hx_cap_bytes(cells, n));
    hx_grid(w, hp_comm_world_group(w), &pool, cells, 1, name);
    if (cells < HX_NCELLS) printf("comm grid: cells from %s on skipped (--cells or HP_TEST_BIG=0)\n", hx_cell_names[cells]);
    snprintf(name, sizeof name, "%s %d x %d", hp_comm_uses_mpi(w) ? "MPI" : "threads", S, count);
    hx_run_shared(w, 555, name);
    hx_concurrency(w, name);
    if (n >= 2) {
        int rev[64];
        for (int i = 0; i < n; i++) rev[i] = n - 1 - i;
        hp_comm_group *g;
        CHECK_OK(hp_comm_group_create(&g, w, rev, n, "reversed"));
        snprintf(name, sizeof name, "%s %d x %d, reversed", hp_comm_uses_mpi(w) ? "MPI" : "threads", S, count);
        hx_grid(w, g, &pool, cells < HX_CELL_1MIB ? cells : HX_CELL_1MIB, 0, name);
        hp_comm_group_destroy(g);
    }
    hx_pool_free(&pool);
    hp_comm_world_destroy(w);
    return hp_test_finish("test_comm_mpi");
}
