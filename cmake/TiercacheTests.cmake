# tiercache_discover_tests(TARGET): register a GoogleTest binary's tests
# with CTest.
#
# By default one CTest test per GoogleTest test (gtest_discover_tests), so a
# failure is named and `ctest -R` picks single tests. With
# TIERCACHE_TEST_PER_SUITE on (scripts/test.sh sets it for the sanitizer
# builds), one CTest test per suite, running `--gtest_filter=Suite.*` in one
# process: a sanitized binary takes 0.25-0.5 s to start (under ASan most of
# it was applying relocations, see CMakeLists.txt), which over ~670 tests was a third of the ASan
# run's time. The listing runs after each link, as gtest_discover_tests'
# does, so a new test needs no CMake run.
option(TIERCACHE_TEST_PER_SUITE "One CTest test per GoogleTest suite instead of per test" OFF)

function(tiercache_discover_tests target)
  if(NOT TIERCACHE_TEST_PER_SUITE)
    gtest_discover_tests(${target} DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 600)
    return()
  endif()
  set(out "${CMAKE_CURRENT_BINARY_DIR}/${target}_suites.cmake")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -D EXE=$<TARGET_FILE:${target}> -D OUT=${out}
            -P ${PROJECT_SOURCE_DIR}/cmake/gtest_suites.cmake
    VERBATIM)
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${out})
endfunction()

# tiercache_test_flags(TARGET): a test binary's own sources at -O1 with line
# tables (-g1) in the optimized builds. The library they test keeps the
# build's flags (-O2 -g); the tests' gtest-heavy files were the larger part
# of a clean build's compile time, and -O1 -g1 takes about half of -O2 -g
# for them. Debug builds are left alone.
#
# With TIERCACHE_TEST_PCH (on by default) the headers nearly every test file
# includes are precompiled once per test binary: parsing GoogleTest and the
# standard library was about 3 s of every test file's compile. Only outside
# headers: a test that forgets to include one of the project's own still
# fails to compile. Through ccache, set CCACHE_SLOPPINESS=pch_defines,time_macros
# (CONTRIBUTING.md), or ccache compiles these files without caching them.
option(TIERCACHE_TEST_PCH "Precompile GoogleTest and standard headers for the test binaries" ON)

# TIERCACHE_TEST_UNITY=N (default 8; 0: off): the test binaries' files are
# compiled N to a translation unit (CMake's unity build). What every test
# file costs beyond its own tests (the precompiled header, GoogleTest's
# templates instantiated again in each file) is then paid once per N files.
# The library itself is never compiled this way: its code generation stays
# what the benchmarks measure. A test file's file-local names must
# therefore be unique among the test files (shared helpers live in the
# tests' *_util.h headers); a build with TIERCACHE_TEST_UNITY=0 checks that
# each file includes what it uses.
set(TIERCACHE_TEST_UNITY 8 CACHE STRING "Test files per unity translation unit (0: no unity build)")

function(tiercache_test_flags target)
  if(TIERCACHE_TEST_UNITY GREATER 0)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${TIERCACHE_TEST_UNITY})
  endif()
  target_compile_options(${target} PRIVATE
    $<$<CONFIG:RelWithDebInfo>:-O1 -g1> $<$<CONFIG:Release,MinSizeRel>:-O1>)
  if(TIERCACHE_TEST_PCH)
    target_precompile_headers(${target} PRIVATE
      <gtest/gtest.h> <algorithm> <atomic> <chrono> <cstring> <fstream> <functional> <map> <memory>
      <mutex> <random> <set> <sstream> <string> <thread> <vector>)
  endif()
endfunction()
