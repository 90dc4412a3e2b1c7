# MPI launches of the comm tests (loopback only; see scripts/mpienv.sh), and
# the labels that say what each comm test covers. The coverage grid
# (tests/comm/harness.h): every collective x sizes {0, 1, 7, uneven, 1 MiB,
# 64 MiB} x {fp32, bf16} on threads 1x1, 1x2, 1x3, 1x4, 1x8
# (test_comm_threads), 2 emulated supernodes x 1 and x 2 (test_comm_emul),
# 2 MPI processes x 1 and x 2 (comm/mpi_2x1, comm/mpi_2x2); each run prints a
# "comm grid:" line per configuration. HP_TEST_BIG=0 (the sanitizer pass)
# leaves out the 64 MiB cell. `ctest -L comm-grid` runs exactly the grid.
foreach(t test_comm_threads test_comm_emul)
  if(TEST comm/${t})
    set_tests_properties(comm/${t} PROPERTIES LABELS "comm;comm-grid")
  endif()
endforeach()
if(TEST comm/test_comm_timeout)
  set_tests_properties(comm/test_comm_timeout PROPERTIES LABELS "comm;comm-failure")
endif()
if(TEST comm/test_comm_p2p)
  set_tests_properties(comm/test_comm_p2p PROPERTIES LABELS "comm;comm-failure")
endif()
if(TEST comm/test_comm_a2a)
  set_tests_properties(comm/test_comm_a2a PROPERTIES LABELS "comm;comm-failure")
endif()
if(TEST comm/test_comm_then)
  set_tests_properties(comm/test_comm_then PROPERTIES LABELS "comm")
endif()
if(TEST comm/test_comm_mpi)
  set_tests_properties(comm/test_comm_mpi PROPERTIES LABELS "comm")
endif()
find_program(HP_MPIEXEC NAMES mpiexec mpirun)
if(HP_MPIEXEC AND TARGET test_comm_mpi)
  set(HP_MPI_ENV
    OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
    OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_osc=sm,pt2pt OMPI_MCA_mtl=^ofi,psm,psm2
    OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo PMIX_MCA_ptl_base_if_include=lo
    LSAN_OPTIONS=suppressions=${CMAKE_SOURCE_DIR}/tests/comm/lsan.supp:print_suppressions=0
    # Open MPI unloads its plugins in MPI_Finalize, so their leaks have no
    # module name left for a suppression to match: under mpirun, ASan and
    # UBSan stay on but leak checking is off (the thread and emulated tests
    # check this room's own allocations for leaks).
    ASAN_OPTIONS=detect_leaks=0:abort_on_error=1)
  add_test(NAME comm/mpi_2x1 COMMAND ${HP_MPIEXEC} -n 2 --bind-to none $<TARGET_FILE:test_comm_mpi> --ranks 1)
  add_test(NAME comm/mpi_2x2 COMMAND ${HP_MPIEXEC} -n 2 --bind-to none $<TARGET_FILE:test_comm_mpi> --ranks 2)
  add_test(NAME comm/mpi_2x2_throttled COMMAND ${HP_MPIEXEC} -n 2 --bind-to none $<TARGET_FILE:test_comm_mpi> --ranks 2 --cells 4 --inter-bw 2 --inter-latency 50)
  add_test(NAME comm/mpi_hang COMMAND ${HP_MPIEXEC} -n 2 --bind-to none $<TARGET_FILE:test_comm_mpi> --ranks 1 --hang)
  set_tests_properties(comm/mpi_2x1 comm/mpi_2x2 comm/mpi_2x2_throttled comm/mpi_hang PROPERTIES
    ENVIRONMENT "${HP_MPI_ENV}" TIMEOUT 300 PROCESSORS 2)
  set_tests_properties(comm/mpi_2x1 comm/mpi_2x2 PROPERTIES LABELS "comm;comm-grid;mpi")
  set_tests_properties(comm/mpi_2x2_throttled PROPERTIES LABELS "comm;mpi")
  set_tests_properties(comm/mpi_hang PROPERTIES LABELS "comm;comm-failure;mpi"
    PASS_REGULAR_EXPRESSION "comm timeout detected: comm: all_reduce on group 'world' \\(rank 0\\): timed out after 0.5 s waiting for rank 1"
    FAIL_REGULAR_EXPRESSION "comm world destroy returned"
    TIMEOUT 60)
  # send/recv and the all-to-all with counts, blocking and started, across the 2 processes
  if(TARGET test_comm_p2p)
    add_test(NAME comm/mpi_p2p_2x1 COMMAND ${HP_MPIEXEC} -n 2 --bind-to none $<TARGET_FILE:test_comm_p2p> --ranks 1)
    add_test(NAME comm/mpi_p2p_2x2 COMMAND ${HP_MPIEXEC} -n 2 --bind-to none $<TARGET_FILE:test_comm_p2p> --ranks 2)
    set_tests_properties(comm/mpi_p2p_2x1 comm/mpi_p2p_2x2 PROPERTIES ENVIRONMENT "${HP_MPI_ENV}" TIMEOUT 300
      PROCESSORS 2 LABELS "comm;mpi" PASS_REGULAR_EXPRESSION "comm p2p: MPI 2 x [12]: ring"
      FAIL_REGULAR_EXPRESSION "check failed|check\\(s\\) failed")
  endif()
  # the all-to-all's cross leg across the 2 processes: fused where the default threshold says, and direct
  if(TARGET test_comm_a2a)
    add_test(NAME comm/mpi_a2a_2x2 COMMAND ${HP_MPIEXEC} -n 2 --bind-to none $<TARGET_FILE:test_comm_a2a> --ranks 2)
    add_test(NAME comm/mpi_a2a_2x2_fused COMMAND ${HP_MPIEXEC} -n 2 --bind-to none $<TARGET_FILE:test_comm_a2a> --ranks 2 --a2a-fuse-bytes 1e12)
    add_test(NAME comm/mpi_a2a_2x2_direct COMMAND ${HP_MPIEXEC} -n 2 --bind-to none $<TARGET_FILE:test_comm_a2a> --ranks 2 --a2a-fuse-bytes 0)
    set_tests_properties(comm/mpi_a2a_2x2 comm/mpi_a2a_2x2_fused comm/mpi_a2a_2x2_direct PROPERTIES
      ENVIRONMENT "${HP_MPI_ENV}" TIMEOUT 300 PROCESSORS 2 LABELS "comm;mpi"
      PASS_REGULAR_EXPRESSION "comm a2a: MPI 2 x 2, threshold [0-9]+: variable counts"
      FAIL_REGULAR_EXPRESSION "check failed|check\\(s\\) failed")
  endif()
  # autopar's collective volumes against the counters, across the 2 processes (Open MPI between the supernodes)
  if(TARGET test_volume)
    add_test(NAME autopar/mpi_volume_2x2 COMMAND ${HP_MPIEXEC} -n 2 --bind-to none $<TARGET_FILE:test_volume> --ranks 2)
    add_test(NAME autopar/mpi_volume_2x1 COMMAND ${HP_MPIEXEC} -n 2 --bind-to none $<TARGET_FILE:test_volume> --ranks 1)
    set_tests_properties(autopar/mpi_volume_2x2 autopar/mpi_volume_2x1 PROPERTIES ENVIRONMENT "${HP_MPI_ENV}"
      TIMEOUT 300 PROCESSORS 2 LABELS "autopar;mpi"
      PASS_REGULAR_EXPRESSION "collective volumes: MPI 2 x [12], a2a_fuse_bytes [0-9]+: [0-9]+ calls x [12] ranks, counted vs predicted per tier: 0 mismatch"
      FAIL_REGULAR_EXPRESSION "check failed|check\\(s\\) failed")
  endif()
endif()
