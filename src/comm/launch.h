/* comm/launch: how this process was started — by mpirun (Open MPI's
 * OMPI_COMM_WORLD_* variables) or by another launcher (srun, PMI). The one
 * place the library and the tools read the launcher's environment. */
#ifndef HP_COMM_LAUNCH_H
#define HP_COMM_LAUNCH_H

/* The processes mpirun started (OMPI_COMM_WORLD_SIZE; 1 when it is not a
 * positive number); 0: not started by mpirun. */
int hp_launch_mpi_processes(void);
/* The processes mpirun started on this machine (OMPI_COMM_WORLD_LOCAL_SIZE);
 * 1 when not said or not in 1..65536. */
int hp_launch_local_processes(void);
/* 1 when a launcher (mpirun, srun, a PMI one) started this process. */
int hp_launch_under_launcher(void);

#endif
