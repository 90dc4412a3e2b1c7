# MPI launches of the parallel tests (HP_MPIEXEC and HP_MPI_ENV: tests/comm/
# tests.cmake, read before this file): the ownership table built where the
# ranks run, 2 processes x 1 rank and x 2 ranks (test_holdings_mpi). The
# closing line names the transport, so a run that fell back to one process
# does not pass; a failed check in either process fails it.
if(HP_MPIEXEC AND DEFINED HP_MPI_ENV AND TARGET test_holdings_mpi)
  add_test(NAME parallel/holdings_mpi_2x1 COMMAND ${HP_MPIEXEC} -n 2 --bind-to none $<TARGET_FILE:test_holdings_mpi> --ranks 1)
  add_test(NAME parallel/holdings_mpi_2x2 COMMAND ${HP_MPIEXEC} -n 2 --bind-to none $<TARGET_FILE:test_holdings_mpi> --ranks 2)
  set_tests_properties(parallel/holdings_mpi_2x1 parallel/holdings_mpi_2x2 PROPERTIES ENVIRONMENT "${HP_MPI_ENV}"
    TIMEOUT 300 PROCESSORS 2 LABELS "parallel;mpi"
    PASS_REGULAR_EXPRESSION "holdings across processes: MPI 2 x [12]: [0-9]+ plans tiled"
    FAIL_REGULAR_EXPRESSION "check failed;check\\(s\\) failed;failed:")
endif()
