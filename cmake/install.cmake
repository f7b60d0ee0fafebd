# What `cmake --install` puts in place (prefix-relative folders):
#   include/opreg/*.h                    the public headers
#   lib/libopreg.so.MAJOR (+ links)      the shared library; SONAME libopreg.so.MAJOR
#   lib/libopreg.a                       the static library
#   bin/opreg                            the tool (tools/CMakeLists.txt)
#   lib/opreg/plugins/                   plugin modules (OPREG_INSTALL_PLUGINDIR)
#   lib/cmake/opreg/                     the CMake package: find_package(opreg)
#   lib/pkgconfig/opreg.pc               the pkg-config file
# Everything is relative to the prefix, so an installed tree can be moved
# (and `cmake --install build --prefix DIR` works without reconfiguring).
include(CMakePackageConfigHelpers)

set(OPREG_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/opreg")

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/opreg
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT opreg_dev FILES_MATCHING PATTERN "*.h")

# The static library's export lists its private link dependencies
# (oneDNN, OpenMP, Threads, libm) as link-only; opregConfig.cmake finds them.
install(TARGETS opreg opreg_static EXPORT opregTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT opreg_runtime
                NAMELINK_COMPONENT opreg_dev
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT opreg_dev
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT opreg_runtime)

# The plugin folder exists even before any plugin is installed into it.
install(DIRECTORY DESTINATION ${OPREG_INSTALL_PLUGINDIR} COMPONENT opreg_runtime)

install(EXPORT opregTargets NAMESPACE opreg:: FILE opregTargets.cmake
        DESTINATION ${OPREG_INSTALL_CMAKEDIR} COMPONENT opreg_dev)

# Values the package files need. A backend that adds a link dependency to
# opreg_static adds it here too: find_dependency in opregConfig.cmake.in and
# Libs.private in opreg.pc.in.
set(OPREG_PC_DNNL_LIBDIR "")
get_filename_component(_opreg_dnnl_dir "${OPREG_DNNL_LIBRARY}" DIRECTORY)
if(NOT _opreg_dnnl_dir IN_LIST CMAKE_C_IMPLICIT_LINK_DIRECTORIES)
  set(OPREG_PC_DNNL_LIBDIR "-L${_opreg_dnnl_dir} ")
endif()
set(OPREG_PC_OPENMP "")
if(OPREG_HAVE_OPENMP)
  foreach(l ${OpenMP_C_LIB_NAMES})
    string(APPEND OPREG_PC_OPENMP " -l${l}")
  endforeach()
endif()
if(NOT DEFINED OPREG_HAVE_OPENMP)
  set(OPREG_HAVE_OPENMP OFF)
endif()
# The CUDA backend's runtime, for the static library's users.
set(OPREG_PC_CUDA "")
if(OPREG_HAVE_CUDA)
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_LIBRARY_DIR)
    set(OPREG_PC_CUDA " -L${CUDAToolkit_LIBRARY_DIR}")
  endif()
  # The runtime is linked statically into the libraries (CUDA::cudart_static),
  # which needs libdl and librt beside it; nvcc's objects need the C++ runtime.
  string(APPEND OPREG_PC_CUDA " -lcudart_static -ldl -lrt -lstdc++")
endif()
# The plugin loader's dlopen.
set(OPREG_PC_DL "")
foreach(l ${CMAKE_DL_LIBS})
  string(APPEND OPREG_PC_DL " -l${l}")
endforeach()
set(OPREG_HAVE_DLPACK_PACKAGE OFF)
if(dlpack_FOUND)
  set(OPREG_HAVE_DLPACK_PACKAGE ON)
endif()

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/opregConfig.cmake.in
  ${PROJECT_BINARY_DIR}/opregConfig.cmake
  INSTALL_DESTINATION ${OPREG_INSTALL_CMAKEDIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR OPREG_INSTALL_PLUGINDIR)
# 0.x follows the SONAME: one major version, one ABI.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/opregConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/opregConfig.cmake ${PROJECT_BINARY_DIR}/opregConfigVersion.cmake
        DESTINATION ${OPREG_INSTALL_CMAKEDIR} COMPONENT opreg_dev)

# opreg.pc finds its prefix from its own folder (${pcfiledir}), so that it
# stays right under any --prefix.
file(RELATIVE_PATH OPREG_PC_PREFIX_FROM_PCDIR
     "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
string(REGEX REPLACE "/$" "" OPREG_PC_PREFIX_FROM_PCDIR "${OPREG_PC_PREFIX_FROM_PCDIR}")
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  message(FATAL_ERROR "opreg.pc wants CMAKE_INSTALL_LIBDIR and CMAKE_INSTALL_INCLUDEDIR relative to the prefix")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/opreg.pc.in ${PROJECT_BINARY_DIR}/opreg.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/opreg.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT opreg_dev)
