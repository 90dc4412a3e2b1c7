/* The MPI tier: run under mpirun (tests.cmake: 2 processes x 1 rank and
 * 2 x 2 ranks) every collective runs across processes and threads against the
 * plain reference, on the world group and on a reordered group. Run plainly
 * (no mpirun) it is one supernode and touches no MPI.
 *   test_comm_mpi [--ranks R] [--big ELEMS] [--hang]
 * --hang: supernode 1 never enters the collective; supernode 0 must fail with
 * the timeout error naming the missing rank and exit non-zero. */
#include <unistd.h>

#include "harness.h"

int main(int argc, char **argv) {
    hp_comm_opts o;
    hp_comm_opts_default(&o);
    o.ranks_per_supernode = 2;
    o.timeout_s = 120;
    int hang = 0;
    int64_t big = -1;
    for (int i = 1; i < argc; i++) {
        int used = 0;
        if (!strcmp(argv[i], "--hang")) {
            hang = 1;
            continue;
        }
        if (!strcmp(argv[i], "--big") && i + 1 < argc) {
            big = atoll(argv[++i]);
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
            sleep(10); /* stops answering; killed when supernode 0 exits */
            return 0;
        }
        hp_comm_rank *r = hp_comm_world_rank(w, 0);
        float x[4] = {1, 2, 3, 4};
        st = count == 1 ? hp_comm_all_reduce(r, hp_comm_world_group(w), x, x, 4, HP_F32, HP_COMM_SUM) : HP_OK;
        if (st) {
            printf("comm timeout detected: %s\n", hp_status_msg(st));
            fflush(stdout);
            hp_status_free(st);
            _exit(3); /* the program exits non-zero; mpirun stops the rest */
        }
        printf("comm timeout NOT detected\n");
        return 1;
    }
    if (big < 0) big = (1 << 20) / 4 / n;
    printf("test_comm_mpi: %d supernode(s) x %d rank(s), mpi %d, big %lld\n", S, count, hp_comm_uses_mpi(w),
           (long long)big);
    hp_test_failures += hx_run(w, hp_comm_world_group(w), big, 0);
    hp_test_failures += hx_run_shared(w, 555);
    if (n >= 2) {
        int rev[64];
        for (int i = 0; i < n; i++) rev[i] = n - 1 - i;
        hp_comm_group *g;
        CHECK_OK(hp_comm_group_create(&g, w, rev, n, "reversed"));
        hp_test_failures += hx_run(w, g, 777, 1);
        hp_comm_group_destroy(g);
    }
    hp_comm_world_destroy(w);
    return hp_test_finish("test_comm_mpi");
}
