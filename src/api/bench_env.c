/* api/bench_env: what the benchmark commands ask of the process they run in —
 * the MPI job that Open MPI's own collectives run in (hp_bench_comm_mpi_*,
 * over comm/mpi_job) and which kernels OpenBLAS runs (hp_kernels_openblas,
 * over kernels/blas_core) and the CPU's model name — so that tools/ calls no
 * MPI and reads no environment itself. */
#include <stdio.h>
#include <string.h>

#include "api/api.h"
#include "comm/mpi_job.h"
#include "kernels/blas_core.h"

_Static_assert(sizeof(((hp_openblas_kernels *)0)->core) == sizeof(((hp_blas_core *)0)->core) &&
                   sizeof(((hp_openblas_kernels *)0)->coretype) == sizeof(((hp_blas_core *)0)->coretype),
               "hp_openblas_kernels and hp_blas_core have the same fields");

void hp_cpu_model(char *buf, size_t n) {
    snprintf(buf, n, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10)) continue;
        const char *v = strchr(line, ':');
        if (!v) break;
        for (v++; *v == ' '; v++) {
        }
        snprintf(buf, n, "%s", v);
        buf[strcspn(buf, "\n")] = 0;
        break;
    }
    fclose(f);
}

void hp_kernels_openblas(hp_openblas_kernels *out) {
    hp_blas_core b;
    hp_blas_core_read(&b);
    memcpy(out->core, b.core, sizeof out->core);
    memcpy(out->coretype, b.coretype, sizeof out->coretype);
    out->coretype_set = b.coretype_set;
}

hp_status hp_bench_comm_mpi_start(int *rank, int *size) { return hp_mpi_job_start(rank, size); }
void hp_bench_comm_mpi_end(void) { hp_mpi_job_end(); }
void hp_bench_comm_mpi_abort(int code) { hp_mpi_job_abort(code); }
