# autopar/test_cluster reads the shipped descriptions in clusters/ of the source tree.
target_compile_definitions(test_cluster PRIVATE HP_TEST_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
# autopar/test_profile reads the shipped profile in profiles/ of the source tree.
target_compile_definitions(test_profile PRIVATE HP_TEST_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
# autopar/test_memory measures what the programs hold: live page-aligned buffers (aligned_alloc less free) and
# the pages committed in reserved buffers (mprotect), its own wrappers.
target_link_options(test_memory PRIVATE "LINKER:--wrap=aligned_alloc,--wrap=free,--wrap=mprotect")
