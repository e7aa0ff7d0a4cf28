# Installation and packaging: the library, its headers under
# include/tiercache/ (sub-folders kept, since headers include each other by
# relative path), a CMake package (tiercache::tiercache) and tiercache.pc.
include(CMakePackageConfigHelpers)

set(TIERCACHE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tiercache)
# pkg-config modules behind the private dependencies (CMakeLists.txt).
set(TIERCACHE_PC_MODULES "")
foreach(_dep ${TIERCACHE_PKG_DEPS})
  string(REGEX REPLACE "^[^:]*:" "" _module ${_dep})
  list(APPEND TIERCACHE_PC_MODULES ${_module})
endforeach()

install(TARGETS tiercache EXPORT tiercacheTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The public headers: the umbrella include/tiercache/tiercache.h and every
# project header it includes, followed transitively (the parts' own headers
# are not API and stay in the source tree). Computed, so that a header the
# API starts to include is installed without a second list to keep in step.
# The umbrella's includes are relative to the source root, where its
# sub-folders are; it is installed beside them.
set(_umbrella include/tiercache/tiercache.h)
install(FILES ${PROJECT_SOURCE_DIR}/${_umbrella} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tiercache)
file(STRINGS ${PROJECT_SOURCE_DIR}/${_umbrella} _lines REGEX "^#include \"")
set(_todo "")
foreach(_line ${_lines})
  string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" _inc "${_line}")
  list(APPEND _todo ${_inc})
endforeach()
set(TIERCACHE_PUBLIC_HEADERS "")
while(_todo)
  list(POP_FRONT _todo _h)
  if(_h IN_LIST TIERCACHE_PUBLIC_HEADERS)
    continue()
  endif()
  list(APPEND TIERCACHE_PUBLIC_HEADERS ${_h})
  file(STRINGS ${PROJECT_SOURCE_DIR}/${_h} _lines REGEX "^#include \"")
  get_filename_component(_dir ${_h} DIRECTORY)
  foreach(_line ${_lines})
    string(REGEX REPLACE "^#include \"([^\"]+)\".*" "\\1" _inc "${_line}")
    if(_dir)
      set(_inc "${_dir}/${_inc}")
    endif()
    cmake_path(NORMAL_PATH _inc)
    list(APPEND _todo ${_inc})
  endforeach()
endwhile()
foreach(_h ${TIERCACHE_PUBLIC_HEADERS})
  get_filename_component(_dir ${_h} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${_h} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/tiercache/${_dir})
endforeach()

install(EXPORT tiercacheTargets
  NAMESPACE tiercache::
  FILE tiercacheTargets.cmake
  DESTINATION ${TIERCACHE_CMAKE_DIR})

# A static libtiercache.a carries unresolved references to hwloc, memkind,
# libpmemobj and xxhash, so its exported link interface names the
# PkgConfig:: targets; the config file re-creates them (imported targets
# cannot be exported). A shared library resolves them itself.
get_target_property(_tiercache_type tiercache TYPE)
if(_tiercache_type STREQUAL "STATIC_LIBRARY")
  set(TIERCACHE_STATIC ON)
else()
  set(TIERCACHE_STATIC OFF)
endif()

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/tiercacheConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/tiercacheConfig.cmake
  INSTALL_DESTINATION ${TIERCACHE_CMAKE_DIR})
# 0.x: a minor release may break the API, so only the same minor matches.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/tiercacheConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/cmake/tiercacheConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/tiercacheConfigVersion.cmake
  DESTINATION ${TIERCACHE_CMAKE_DIR})

# tiercache.pc. For a shared library the dependencies are private
# (Requires.private: only `pkg-config --static` needs them). For the static
# library (the default) every consumer needs them to link at all, so they
# go to Requires and plain `pkg-config --cflags --libs tiercache` works.
list(JOIN TIERCACHE_PC_MODULES " " _tiercache_pc_deps)
if(TIERCACHE_STATIC)
  set(TIERCACHE_PC_REQUIRES "Requires: ${_tiercache_pc_deps}")
  set(TIERCACHE_PC_LIBS "-L\${libdir} -ltiercache -pthread")
  set(TIERCACHE_PC_LIBS_PRIVATE "")  # none
else()
  set(TIERCACHE_PC_REQUIRES "Requires.private: ${_tiercache_pc_deps}")
  set(TIERCACHE_PC_LIBS "-L\${libdir} -ltiercache")
  set(TIERCACHE_PC_LIBS_PRIVATE "Libs.private: -pthread")
endif()
# The prefix is only known at install time (`cmake --install --prefix P`
# overrides the configured one), so the file is generated then.
foreach(_kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_kind}}")
    set(TIERCACHE_PC_${_kind} "${CMAKE_INSTALL_${_kind}}")
  else()
    set(TIERCACHE_PC_${_kind} "\${prefix}/${CMAKE_INSTALL_${_kind}}")
  endif()
endforeach()
set(TIERCACHE_PC_PREFIX "@TIERCACHE_PC_PREFIX@")  # kept for the second pass
configure_file(${CMAKE_CURRENT_LIST_DIR}/tiercache.pc.in ${PROJECT_BINARY_DIR}/cmake/tiercache.pc.in2 @ONLY)
install(CODE "
  set(TIERCACHE_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${PROJECT_BINARY_DIR}/cmake/tiercache.pc.in2\"
                 \"${PROJECT_BINARY_DIR}/cmake/tiercache.pc\" @ONLY)
")
install(FILES ${PROJECT_BINARY_DIR}/cmake/tiercache.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
