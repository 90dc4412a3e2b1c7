/* comm/mpi_job: the MPI job of a process mpirun started (see the header). */
#include "comm/mpi_job.h"

#include <mpi.h>

#include "comm/launch.h"

/* MPI initialised and not yet finalised. */
static int mpi_running(void) {
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    if (inited) MPI_Finalized(&finalized);
    return inited && !finalized;
}

hp_status hp_mpi_job_start(int *rank, int *size) {
    *rank = 0;
    *size = 1;
    if (hp_launch_mpi_processes() <= 0) return HP_OK;
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        int provided;
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
        if (rc != MPI_SUCCESS) return hp_errorf("comm: MPI_Init_thread failed (code %d)", rc);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    return HP_OK;
}

void hp_mpi_job_end(void) {
    if (mpi_running()) MPI_Finalize();
}

void hp_mpi_job_abort(int code) {
    if (mpi_running()) MPI_Abort(MPI_COMM_WORLD, code);
}
