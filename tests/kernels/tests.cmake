# oneDNN 2.6.3 and libgomp under ASan+UBSan with leak checking needed no
# suppressions (nothing reported by these tests or cli/bench_kernels, checked
# 2026-12-01), so none is installed here.
# The bf16 kernels with the portable path switched on through the environment
# (the test checks that the switch took and that every result is unchanged).
add_test(NAME kernels/bf16_portable_env COMMAND test_kernels_bf16 WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(kernels/bf16_portable_env PROPERTIES TIMEOUT 900 ENVIRONMENT HP_KERNELS_PORTABLE=1)
# The GEMMs with oneDNN capped at AVX2, as on a CPU without AVX-512: oneDNN 2.6
# has no bf16 matmul there, so the bf16 products take the portable fallback.
add_test(NAME kernels/gemm_no_avx512 COMMAND test_kernels_gemm WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(kernels/gemm_no_avx512 PROPERTIES TIMEOUT 900 ENVIRONMENT ONEDNN_MAX_CPU_ISA=AVX2)
# OpenBLAS's kernels with OPENBLAS_CORETYPE set: hp_kernels_init leaves the user's choice alone
# (the test also runs itself with the variable unset).
add_test(NAME kernels/blas_core_env COMMAND test_kernels_blas WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(kernels/blas_core_env PROPERTIES TIMEOUT 900 ENVIRONMENT OPENBLAS_CORETYPE=Haswell)
