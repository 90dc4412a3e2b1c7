/* tools/bench_world: the benchmarks' MPI world and JSON file (see the header). */
#include "bench_world.h"

hp_status hp_bench_world(hp_world **world, int *lead, int *supernodes, int ranks, float bw, float lat, const char *cmd) {
    *world = NULL;
    *lead = 1;
    int np = hp_world_launched_processes();
    if (!np) return HP_OK;
    if (np < 1 || ranks % np)
        return hp_errorf("hyperpar %s: --ranks %d cannot be spread over %d MPI processes", cmd, ranks, np);
    *supernodes = np;
    hp_world_options wo;
    hp_world_options_default(&wo);
    wo.ranks_per_supernode = ranks / np, wo.mpi = 1, wo.inter_bw_gbps = bw, wo.inter_latency_us = lat;
    HP_TRY(hp_world_create(world, &wo));
    int first = 0, count = 0;
    hp_world_hosted_ranks(*world, &first, &count);
    *lead = first == 0;
    return HP_OK;
}

hp_status hp_bench_json_open(FILE **out, const char *path, int lead) {
    *out = NULL;
    if (!path[0] || !lead) return HP_OK;
    if (!(*out = fopen(path, "w"))) return hp_errorf("%s: cannot open for writing", path);
    fputs("[\n", *out);
    return HP_OK;
}

void hp_bench_json_close(FILE *f) {
    if (!f) return;
    fputs("\n]\n", f);
    fclose(f);
}
