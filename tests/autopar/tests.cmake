# autopar/test_cluster reads the shipped descriptions in clusters/ of the source tree.
target_compile_definitions(test_cluster PRIVATE HP_TEST_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
# autopar/test_profile reads the shipped profile in profiles/ of the source tree.
target_compile_definitions(test_profile PRIVATE HP_TEST_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
# autopar/test_memory measures the programs' buffers at the allocator (tests/alloc_count.h) and the pages
# committed in reserved buffers (mprotect), as api/test_fsdp_memory does.
target_link_options(test_memory PRIVATE "LINKER:--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc,--wrap=posix_memalign,--wrap=mprotect")
