/* tools/bench_comm_time: the timing behind `hyperpar bench comm` — a
 * collective on every hosted rank's own thread (hyperpar), Open MPI's own
 * collectives on MPI_COMM_WORLD, memcpy, and pinning threads to CPUs. */
#ifndef HP_TOOLS_BENCH_COMM_TIME_H
#define HP_TOOLS_BENCH_COMM_TIME_H

#include <sched.h>
#include <stdint.h>

#include "comm/comm.h"

/* How every measurement runs: median of `repeat` runs; threads pinned to
 * the CPUs in `cpus` (NULL: not pinned). */
typedef struct {
    int repeat;
    const cpu_set_t *cpus;
} bc_cfg;

/* Pins the calling thread to the (idx mod n)-th of the n CPUs in allowed
 * (NULL: no pinning). */
void hp_bcomm_pin(const cpu_set_t *allowed, int idx);
/* Seconds per call of a collective on every rank this process hosts (median
 * of cfg->repeat runs; runs[] gets each run's time when not NULL): bytes as
 * nccl-tests count them; fused 0: one call, 1: one call over 100 tensors of
 * 4 KiB, -1: 100 separate calls on them; shared: one output per supernode;
 * inplace: all-gather shards already in place; *inter_bytes (when not NULL):
 * inter-supernode bytes per call of the first hosted rank. -1 on error
 * (printed). */
double hp_bcomm_hyperpar(hp_comm_world *w, hp_comm_kind kind, int64_t bytes, int iters, int fused,
                         int64_t *inter_bytes, int shared, int inplace, const bc_cfg *cfg, double *runs);
/* Seconds per call of Open MPI's own collective (sep100: per 100 separate
 * calls on 4 KiB tensors), median of `repeat` runs; every process calls. */
double hp_bcomm_mpi(hp_comm_kind kind, int64_t bytes, int iters, int inplace, int sep100, int repeat);
/* Other processes wait here without spinning while process 0 measures alone. */
void hp_bcomm_idle_wait(void);
/* Seconds per memcpy of `bytes` on this thread. */
double hp_bcomm_memcpy(int64_t bytes, int iters);

#endif
