# Driver for the install.* ctests (cmake -P). STEP is one of:
#   install    install BINARY_DIR into a fresh PREFIX
#   cmake      configure + build this folder against PREFIX, run the program
#   pkgconfig  compile main.cc with `pkg-config --cflags --libs tiercache`, run it
# Other inputs: PREFIX, LIBDIR (relative to PREFIX), WORK_DIR, CXX, PKG_CONFIG.
cmake_minimum_required(VERSION 3.22)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " cmd)
    message(FATAL_ERROR "failed (${rc}): ${cmd}")
  endif()
endfunction()

set(consumer_dir ${CMAKE_CURRENT_LIST_DIR})

if(STEP STREQUAL "install")
  file(REMOVE_RECURSE ${PREFIX})
  run(${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${PREFIX})
  foreach(f include/tiercache/tiercache.h include/tiercache/allocator/cache.h
            ${LIBDIR}/cmake/tiercache/tiercacheConfig.cmake ${LIBDIR}/pkgconfig/tiercache.pc)
    if(NOT EXISTS ${PREFIX}/${f})
      message(FATAL_ERROR "not installed: ${PREFIX}/${f}")
    endif()
  endforeach()
  # Only the public API is installed: the parts' own headers stay in the tree.
  foreach(f allocator/cache_counters.h allocator/stats_collector.h allocator/movers.h allocator/cache_persistence.h
            allocator/sharded_counter.h common/log.h)
    if(EXISTS ${PREFIX}/include/tiercache/${f})
      message(FATAL_ERROR "installed, but not a public header: ${f}")
    endif()
  endforeach()

elseif(STEP STREQUAL "cmake")
  set(build ${WORK_DIR}/cmake)
  file(REMOVE_RECURSE ${build})
  run(${CMAKE_COMMAND} -S ${consumer_dir} -B ${build}
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=${CXX}
      -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
  # The package must come from the test prefix, not from a system install.
  file(STRINGS ${build}/CMakeCache.txt dir_line REGEX "^tiercache_DIR:")
  string(REGEX REPLACE "^[^=]*=" "" dir "${dir_line}")
  file(REAL_PATH "${PREFIX}" real_prefix)
  file(REAL_PATH "${dir}" real_dir)
  string(FIND "${real_dir}" "${real_prefix}/" at)
  if(NOT at EQUAL 0)
    message(FATAL_ERROR "tiercache found at '${dir}', outside the test prefix ${PREFIX}")
  endif()
  run(${CMAKE_COMMAND} --build ${build})
  run(${build}/consumer)

elseif(STEP STREQUAL "pkgconfig")
  set(build ${WORK_DIR}/pkgconfig)
  file(REMOVE_RECURSE ${build})
  file(MAKE_DIRECTORY ${build})
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${PREFIX}/${LIBDIR}/pkgconfig
            ${PKG_CONFIG} --cflags --libs tiercache
    OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config --cflags --libs tiercache failed (${rc})")
  endif()
  message(STATUS "pkg-config: ${flags}")
  string(FIND "${flags}" "-I${PREFIX}/include" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "pkg-config flags do not point into the test prefix ${PREFIX}")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  run(${CXX} -std=c++20 -O1 ${consumer_dir}/main.cc ${flags} -o ${build}/consumer)
  # pkg-config gives no rpath: a shared libtiercache is found through this.
  run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${PREFIX}/${LIBDIR} ${build}/consumer)

else()
  message(FATAL_ERROR "unknown STEP '${STEP}'")
endif()
