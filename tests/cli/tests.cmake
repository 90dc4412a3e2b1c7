# Command-line tests: bash scripts run against build/hyperpar.
foreach(t default_run resume llmc bad_input sample parallel validate plan dist_ckpt bench_comm golden help)
  add_test(NAME cli/${t} COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/test_${t}.sh $<TARGET_FILE:hyperpar_cli>)
  set_tests_properties(cli/${t} PROPERTIES TIMEOUT 1200)
endforeach()
