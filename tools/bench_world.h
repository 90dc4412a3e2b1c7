/* tools/bench_world: what the side-by-side benchmarks (bench fsdp, bench
 * muon) share around their rows — the MPI world they run in when launched by
 * mpirun (each process one supernode) and the JSON file of their rows, which
 * rank 0's process writes. */
#ifndef HP_TOOLS_BENCH_WORLD_H
#define HP_TOOLS_BENCH_WORLD_H

#include <stdio.h>

#include <hyperpar/hyperpar.h>

/* Under mpirun: the processes' world for `ranks` rank threads spread over
 * them, the link throttled to bw GB/s and lat microseconds, *supernodes set to
 * the processes and *lead to 1 on the process hosting rank 0. Otherwise
 * *world is NULL and *lead 1. Errors name the command `cmd`. */
hp_status hp_bench_world(hp_world **world, int *lead, int *supernodes, int ranks, float bw, float lat, const char *cmd);

/* The rows' JSON array at `path` ("": none), opened and begun on the lead
 * process only (*out NULL elsewhere); hp_bench_json_close ends and closes it. */
hp_status hp_bench_json_open(FILE **out, const char *path, int lead);
void hp_bench_json_close(FILE *f);

#endif
