/* comm/mpi_job: the MPI job of a process that mpirun started, for a program
 * that calls Open MPI's own collectives on MPI_COMM_WORLD besides (or
 * without) an hp_world — the comm benchmark's MPI rows: MPI started with
 * threads, the process's place in the job, the job's end and its abort. The
 * transport (comm/transport_mpi) keeps its own MPI start for the worlds. */
#ifndef HP_COMM_MPI_JOB_H
#define HP_COMM_MPI_JOB_H

#include "core/status.h"

/* Started by mpirun (comm/launch): MPI initialised, asking for
 * MPI_THREAD_MULTIPLE (unless it already is), *rank and *size this
 * process's place in MPI_COMM_WORLD. Otherwise nothing: rank 0 of 1. */
hp_status hp_mpi_job_start(int *rank, int *size);
/* MPI finalised, when it runs (initialised, not yet finalised). */
void hp_mpi_job_end(void);
/* The whole job ended with `code` (MPI_Abort on MPI_COMM_WORLD) when MPI
 * runs; returns only when it does not. */
void hp_mpi_job_abort(int code);

#endif
