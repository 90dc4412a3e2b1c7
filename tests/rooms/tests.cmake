# Room checks: no src/<room> file includes from a room outside its HP_DEPS list.
add_test(NAME rooms/includes COMMAND bash ${CMAKE_SOURCE_DIR}/tests/rooms/check_includes.sh ${CMAKE_SOURCE_DIR})
add_test(NAME rooms/check_includes COMMAND bash ${CMAKE_SOURCE_DIR}/tests/rooms/test_check_includes.sh ${CMAKE_SOURCE_DIR})
# tools/ uses the public API only (include/hyperpar/hyperpar.h), and the check itself catches a violation.
add_test(NAME rooms/tools_includes COMMAND bash ${CMAKE_SOURCE_DIR}/tests/rooms/check_tools_includes.sh ${CMAKE_SOURCE_DIR})
add_test(NAME rooms/check_tools_includes COMMAND bash ${CMAKE_SOURCE_DIR}/tests/rooms/test_check_tools_includes.sh ${CMAKE_SOURCE_DIR})
# No operator-pointer comparison outside src/ops and the operators' own files (issue 23: collectives described).
add_test(NAME rooms/op_compare COMMAND bash ${CMAKE_SOURCE_DIR}/tests/rooms/check_op_compare.sh ${CMAKE_SOURCE_DIR})
add_test(NAME rooms/check_op_compare COMMAND bash ${CMAKE_SOURCE_DIR}/tests/rooms/test_check_op_compare.sh ${CMAKE_SOURCE_DIR})
# No FSDP/HSDP/ZeRO name in the code of src/runtime: it reads the table of who holds what (issue 23 item 2).
add_test(NAME rooms/runtime_generic COMMAND bash ${CMAKE_SOURCE_DIR}/tests/rooms/check_runtime_generic.sh ${CMAKE_SOURCE_DIR})
add_test(NAME rooms/check_runtime_generic COMMAND bash ${CMAKE_SOURCE_DIR}/tests/rooms/test_check_runtime_generic.sh ${CMAKE_SOURCE_DIR})
# tools/ makes no MPI call and reads no environment (issue 23 item 7), and the check itself catches a violation.
add_test(NAME rooms/tools_env COMMAND bash ${CMAKE_SOURCE_DIR}/tests/rooms/check_tools_env.sh ${CMAKE_SOURCE_DIR})
add_test(NAME rooms/check_tools_env COMMAND bash ${CMAKE_SOURCE_DIR}/tests/rooms/test_check_tools_env.sh ${CMAKE_SOURCE_DIR})
