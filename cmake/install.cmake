# cmake/install.cmake: `cmake --install BUILD --prefix P` puts the library
# where other programs can use it:
#   P/lib/libhyperpar.a, P/include/hyperpar/hyperpar.h,
#   P/lib/pkgconfig/hyperpar.pc (pkg-config --cflags --libs hyperpar), and
#   P/lib/cmake/hyperpar/ (find_package(hyperpar): the target hyperpar::hyperpar).
# The library is static, so both name everything a link needs: OpenBLAS and
# MPI as this build found them, oneDNN and its OpenMP runtime, pthreads and libm.
include(CMakePackageConfigHelpers)

install(TARGETS hyperpar EXPORT hyperparTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${CMAKE_SOURCE_DIR}/include/hyperpar/hyperpar.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/hyperpar)

# pkg-config: the link dependencies as full paths (what find_package found).
set(hp_pc_libs "${OPENBLAS_LIB} ${DNNL_LIB}")
foreach(l ${HP_OMP_LIBS})
  string(APPEND hp_pc_libs " ${l}")
endforeach()
foreach(l ${MPI_C_LIBRARIES})
  string(APPEND hp_pc_libs " ${l}")
endforeach()
if(MPI_C_LINK_FLAGS)
  string(APPEND hp_pc_libs " ${MPI_C_LINK_FLAGS}")
endif()
string(APPEND hp_pc_libs " -lpthread -lm")
# The prefix is found from the .pc file's own place, so --prefix at install
# time (not the configured CMAKE_INSTALL_PREFIX) is what counts.
file(RELATIVE_PATH hp_pc_up /hp/${CMAKE_INSTALL_LIBDIR}/pkgconfig /hp)
string(REGEX REPLACE "/$" "" hp_pc_up "${hp_pc_up}")
configure_file(${CMAKE_SOURCE_DIR}/cmake/hyperpar.pc.in ${CMAKE_BINARY_DIR}/hyperpar.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/hyperpar.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# CMake package: hyperparTargets.cmake (the imported target) and its config.
set(hp_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/hyperpar)
install(EXPORT hyperparTargets NAMESPACE hyperpar:: DESTINATION ${hp_cmake_dir})
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/hyperparConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/hyperparConfig.cmake INSTALL_DESTINATION ${hp_cmake_dir})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/hyperparConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/hyperparConfig.cmake ${CMAKE_BINARY_DIR}/hyperparConfigVersion.cmake
        DESTINATION ${hp_cmake_dir})
