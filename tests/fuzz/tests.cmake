# Fuzz targets (tests/fuzz/fuzz_*.c). Here, in the gcc builds, each target
# is linked with replay.c and runs once over its seed corpus and regression
# inputs (tests/fuzz/corpus/<target>/): fuzz/replay_<target>. The libFuzzer
# builds and timed runs are tests/fuzz/CMakeLists.txt and tests/fuzz/run.sh
# (clang; scripts/test.sh runs them after the suites).
file(GLOB hp_fuzz_srcs CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_*.c)
hp_room_objects(hp_fuzz_objs io)
foreach(src ${hp_fuzz_srcs})
  get_filename_component(fname ${src} NAME_WE)
  string(REGEX REPLACE "^fuzz_" "" target ${fname})
  add_executable(replay_${target} ${src} ${CMAKE_SOURCE_DIR}/tests/fuzz/replay.c ${hp_fuzz_objs}
                 ${CMAKE_SOURCE_DIR}/src/autopar/cluster.c ${CMAKE_SOURCE_DIR}/src/autopar/profile.c)
  target_include_directories(replay_${target} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests/fuzz ${CBLAS_INCLUDE})
  target_link_libraries(replay_${target} PRIVATE ${HP_LIBS})
  add_test(NAME fuzz/replay_${target} COMMAND replay_${target} ${CMAKE_SOURCE_DIR}/tests/fuzz/corpus/${target})
  set_tests_properties(fuzz/replay_${target} PROPERTIES TIMEOUT 300 LABELS fuzz)
endforeach()
