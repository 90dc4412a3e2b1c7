# Command-line tests: bash scripts run against build/hyperpar.
foreach(t default_run resume llmc bad_input sample parallel validate plan dist_ckpt bench_comm bench_kernels golden trace help nan setup_agree)
  add_test(NAME cli/${t} COMMAND bash ${CMAKE_SOURCE_DIR}/tests/cli/test_${t}.sh $<TARGET_FILE:hyperpar_cli>)
  set_tests_properties(cli/${t} PROPERTIES TIMEOUT 1200)
endforeach()
# The golden losses are the bits of the Release flags (-O3 -march=native);
# under the sanitizer build's flags (-O1, no -march) the Muon runs differ in
# the last digits, so cli/golden is left out of the sanitizer suite.
set_tests_properties(cli/golden PROPERTIES LABELS no-sanitize)
