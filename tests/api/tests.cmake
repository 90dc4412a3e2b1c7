# api/install: cmake --install into a temporary prefix, then examples/train_tiny.c
# built out of tree against it (pkg-config and find_package) and run. The
# sanitizer build's library needs -fsanitize at link time, which neither the
# .pc file nor the CMake package carries, so it is a Release-suite test.
add_test(NAME api/install COMMAND bash ${CMAKE_SOURCE_DIR}/tests/api/test_install.sh ${CMAKE_BINARY_DIR}
         ${CMAKE_SOURCE_DIR} ${CMAKE_COMMAND} ${CMAKE_C_COMPILER})
set_tests_properties(api/install PROPERTIES TIMEOUT 900 LABELS no-sanitize)
# The example in the build tree: trains and its loss falls.
add_test(NAME api/train_tiny COMMAND train_tiny WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(api/train_tiny PROPERTIES TIMEOUT 900)
# The own-loop example: hp_train_step, a checkpoint half-way, a second trainer loading it continues bit for bit.
add_test(NAME api/own_loop COMMAND own_loop ${CMAKE_BINARY_DIR}/own_loop_ckpt WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(api/own_loop PROPERTIES TIMEOUT 300)
# The example under mpirun: 2 processes x 2 rank-threads, DP=2 x TP=2.
add_test(NAME api/train_tiny_mpi COMMAND bash ${CMAKE_SOURCE_DIR}/tests/api/test_mpi.sh $<TARGET_FILE:train_tiny>)
set_tests_properties(api/train_tiny_mpi PROPERTIES TIMEOUT 300 PROCESSORS 2 LABELS mpi)
# test_fsdp_memory measures the programs' buffers at the allocator (tests/alloc_count.h), and the pages
# core/alloc commits in reserved buffers (mprotect).
target_link_options(test_fsdp_memory PRIVATE "LINKER:--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc,--wrap=posix_memalign,--wrap=mprotect")
# A model written in the example itself (hp_graph calls), trained on 1 rank and under DP=2 x TP=2:
# its loss falls and the parallel run's losses are the 1-rank run's within 1e-5.
add_test(NAME api/own_model COMMAND own_model WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(api/own_model PROPERTIES TIMEOUT 900)
