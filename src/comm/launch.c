/* comm/launch: the launcher's environment (see the header). */
#include "comm/launch.h"

#include <stdlib.h>

int hp_launch_mpi_processes(void) {
    const char *env = getenv("OMPI_COMM_WORLD_SIZE");
    if (!env) return 0;
    int n = atoi(env);
    return n > 0 ? n : 1;
}

int hp_launch_local_processes(void) {
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    long procs = local ? strtol(local, NULL, 10) : 1;
    return procs < 1 || procs > 65536 ? 1 : (int)procs;
}

int hp_launch_under_launcher(void) {
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return 1;
    return 0;
}
