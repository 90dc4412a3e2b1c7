# autopar/test_cluster reads the shipped descriptions in clusters/ of the source tree.
target_compile_definitions(test_cluster PRIVATE HP_TEST_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
# autopar/test_profile reads the shipped profile in profiles/ of the source tree.
target_compile_definitions(test_profile PRIVATE HP_TEST_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
