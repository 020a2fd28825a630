# Install rules, the exported CMake package (trtutilsConfig.cmake), trtutils.pc and CPack's DEB
# generator. Included by CMakeLists.txt when TRTUTILS_INSTALL is ON (the default at top level).
#   cmake --install build --prefix /opt/trtutils
#   find_package(trtutils CONFIG REQUIRED)  ->  target_link_libraries(app PRIVATE trtutils::trtutils)
#   pkg-config --cflags --libs trtutils
#   (cd build && cpack -G DEB)              ->  trtutils_<version>_<arch>.deb
include(CMakePackageConfigHelpers)

set(TRTUTILS_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/trtutils CACHE STRING
    "Where `cmake --install` puts trtutilsConfig.cmake, relative to the prefix")

# The library (the CUDA kernels' objects are inside it), the public headers and the CLI.
install(TARGETS trtutils EXPORT trtutilsTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/trtutils DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        COMPONENT dev FILES_MATCHING PATTERN "*.h")
install(TARGETS trtutils_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT runtime)
# (The Python package: python/CMakeLists.txt, into lib/python3/dist-packages.)

# ---- CMake package ----
install(EXPORT trtutilsTargets NAMESPACE trtutils:: DESTINATION ${TRTUTILS_INSTALL_CMAKEDIR}
        COMPONENT dev)
if(TRTUTILS_HAVE_CUDA)
  get_filename_component(TRTUTILS_CUDA_TOOLKIT_ROOT ${CUDAToolkit_BIN_DIR} DIRECTORY)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/trtutilsConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/trtutilsConfig.cmake
                              INSTALL_DESTINATION ${TRTUTILS_INSTALL_CMAKEDIR})
# 0.x: a minor version may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/trtutilsConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/trtutilsConfig.cmake ${PROJECT_BINARY_DIR}/trtutilsConfigVersion.cmake
        DESTINATION ${TRTUTILS_INSTALL_CMAKEDIR} COMPONENT dev)

# ---- pkg-config ----
# A static library, so Libs carries what it links: the packages with a .pc file in Requires,
# the rest (oneDNN, onnx_proto, OpenMP, libdl, cudart) as flags.
set(TRTUTILS_PC_REQUIRES "fmt protobuf libjpeg libpng libwebp zlib")
set(TRTUTILS_PC_CFLAGS "")
set(TRTUTILS_PC_LIBS "")
# -L<dir> (unless the linker searches it anyway) and -l<name> for a library file.
function(_trtutils_pc_lib var path)
  get_filename_component(dir ${path} DIRECTORY)
  get_filename_component(name ${path} NAME_WE)
  string(REGEX REPLACE "^lib" "" name ${name})
  set(flags "${${var}}")
  if(NOT dir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
    string(APPEND flags " -L${dir}")
  endif()
  string(APPEND flags " -l${name}")
  set(${var} "${flags}" PARENT_SCOPE)
endfunction()
get_target_property(_trtutils_onnx_proto onnx_proto LOCATION)
_trtutils_pc_lib(TRTUTILS_PC_LIBS ${_trtutils_onnx_proto})
_trtutils_pc_lib(TRTUTILS_PC_LIBS ${DNNL_LIBRARY})
string(APPEND TRTUTILS_PC_CFLAGS " ${OpenMP_CXX_FLAGS}")
string(APPEND TRTUTILS_PC_LIBS " ${OpenMP_CXX_FLAGS} -pthread")
if(TRTUTILS_HAVE_CUDA)
  string(APPEND TRTUTILS_PC_CFLAGS " -DTRTUTILS_HAVE_CUDA_BACKEND=1")
  string(APPEND TRTUTILS_PC_LIBS " -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -lrt")
endif()
foreach(lib IN LISTS CMAKE_DL_LIBS)
  string(APPEND TRTUTILS_PC_LIBS " -l${lib}")
endforeach()
string(STRIP "${TRTUTILS_PC_CFLAGS}" TRTUTILS_PC_CFLAGS)
string(STRIP "${TRTUTILS_PC_LIBS}" TRTUTILS_PC_LIBS)
string(REGEX REPLACE "[^/]+" ".." TRTUTILS_PC_PREFIX_FROM_PCFILEDIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
configure_file(${PROJECT_SOURCE_DIR}/cmake/trtutils.pc.in ${PROJECT_BINARY_DIR}/trtutils.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/trtutils.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
        COMPONENT dev)

# ---- CPack: a .deb ----
# Depends: what the installed binaries link, by dpkg-shlibdeps (dpkg-dev) over them: libdnnl2,
# libprotobuf32, libgomp1, libfmt9, libpng16-16, libjpeg62-turbo, libwebp7, zlib1g, libonnx1, libstdc++6, libc6
# (and for the Python module, python3 + python3-numpy). Recommends: the -dev packages a program
# linking the static library (lib/, include/, the CMake package, trtutils.pc) needs.
set(CPACK_PACKAGE_NAME trtutils)
set(CPACK_PACKAGE_VENDOR "trtutils")
set(CPACK_PACKAGE_CONTACT "trtutils maintainers <trtutils@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "ONNX to reduced-precision inference engines: quantization, engine builds, CPU/CUDA runtime")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS OFF)
set(_trtutils_deb_depends)
if(TRTUTILS_PYTHON)
  list(APPEND _trtutils_deb_depends python3 python3-numpy)
endif()
list(JOIN _trtutils_deb_depends ", " CPACK_DEBIAN_PACKAGE_DEPENDS)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS
    "libdnnl-dev, libprotobuf-dev, libonnx-dev, libfmt-dev, nlohmann-json3-dev, libjpeg62-turbo-dev, libpng-dev, libwebp-dev, pkg-config")
if(TRTUTILS_HAVE_CUDA)
  # cuBLAS, cuBLASLt and cuDNN are loaded at run time when a GPU is found (not linked).
  set(CPACK_DEBIAN_PACKAGE_SUGGESTS "nvidia-cuda-toolkit, nvidia-cudnn")
endif()
set(CPACK_GENERATOR DEB)
include(CPack)
